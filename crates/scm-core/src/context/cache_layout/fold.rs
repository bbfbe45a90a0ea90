//! Folds: what a fold does to the layout's state (its record, the
//! `PINNED` block of what it keeps, the file list it renews) and the
//! engine's fold summary (docs/notes/layout-experiments.md §6.6). The
//! engine cannot call a model, so the summary is **extractive** and
//! deterministic: per folded turn the user's prompt, the tool calls by id
//! and the files changed, and the assistant's last text, newest turns first
//! until the budget is spent; older turns get one line of ids. Everything
//! folded stays retrievable by id. Its working area is `copies.rs`.

use std::collections::{HashMap, HashSet};

use super::items::{Item, ItemKind};
use super::records::{FileEntry, FoldRecord, WorkingCopy};
use super::render::{content_text, DocLookup, Env};
use super::state::{shows_files, CacheLayout, FoldPlan};
use crate::context::aliases::{call_alias, file_alias};
use crate::context::chat::{MessageEntry, Turn};
use crate::context::epochs::{CachePolicy, ToolCallState};
use crate::context::notices;
use crate::context::words::one_line;
use crate::model::FilesystemSource;
use serde_json::Value;

/// First line of every fold message.
pub const FOLD_LINE: &str = "[Earlier turns are folded into this summary; their tool calls and files keep their ids (activate to view).]";

/// A folded turn's prompt, and the session's first prompt (usually the
/// task), are kept up to these lengths: the user's words are few next to the
/// tool output a fold removes, and they are what the agent was asked to do.
const USER_CHARS: usize = 1_000;
const FIRST_PROMPT_CHARS: usize = 2_000;
const OUTCOME_CHARS: usize = 300;

/// What a turn's block says instead of its prompt when the fold shows that
/// prompt right after the summary.
pub const PROMPT_FOLLOWS: &str = "the current turn; its prompt follows this summary";

fn assistant_text(e: &MessageEntry) -> Option<String> {
    let text: Vec<&str> = e
        .content
        .iter()
        .flatten()
        .filter(|p| p["type"] == "text")
        .filter_map(|p| p["text"].as_str())
        .filter(|t| !t.trim().is_empty())
        .collect();
    (!text.is_empty()).then(|| text.join(" "))
}

/// Whether [`assistant_text`] would give something (without building it).
fn has_assistant_text(e: &MessageEntry) -> bool {
    e.content
        .iter()
        .flatten()
        .any(|p| p["type"] == "text" && p["text"].as_str().is_some_and(|t| !t.trim().is_empty()))
}

/// What one folded turn shows. The texts are borrowed and rendered only for
/// the turns that make it into the summary.
#[derive(Default)]
struct TurnDigest<'a> {
    turn: u32,
    user: Option<&'a Value>,
    outcome: Option<&'a MessageEntry>,
    calls: Vec<u32>,
    /// Its prompt is shown right after the summary.
    prompt_follows: bool,
}

/// One block per folded turn; see the module docs. `cut`: the first item
/// that stays (everything before it is folded). Walks from the cut back and
/// stops when the budget is spent, so a fold costs what it summarises, not
/// the whole history. `repeated`: the user item the fold shows again after
/// the summary (the cut fell inside the current turn); its turn's block
/// names it instead of quoting it, so the prompt is in view once.
pub fn extractive_summary<T: AsRef<Turn>>(
    turns: &[T],
    items: &[Item],
    cut: usize,
    repeated: Option<usize>,
    calls: &[ToolCallState],
    files: &[FileEntry],
    budget: usize,
) -> String {
    let folded = &items[..cut.min(items.len())];
    let mut blocks: Vec<String> = Vec::new();
    let mut used = 0usize;
    // Items before `end` are not summarised (yet).
    let mut end = folded.len();
    while end > 0 {
        let turn = folded[end - 1].turn;
        let start = folded[..end]
            .iter()
            .rposition(|it| it.turn != turn)
            .map_or(0, |p| p + 1);
        let mut d = digest(turns, &folded[start..end]);
        d.prompt_follows = repeated.is_some_and(|u| (start..end).contains(&u));
        let block = turn_block(&d, calls, files);
        let n = block.chars().count() + 1;
        if used + n > budget && !blocks.is_empty() {
            break;
        }
        used += n;
        blocks.push(block);
        end = start;
    }
    if end > 0 {
        let older = &folded[..end];
        let mut line = format!(
            "- Turns {}–{}: not summarised here",
            older[0].turn,
            older[end - 1].turn
        );
        // Calls are numbered in item order: the first and last assistant
        // items with calls hold the lowest and highest.
        let with_calls = |it: &&Item| it.kind == ItemKind::Assistant && it.calls > 0;
        let first = older.iter().find(with_calls).map(|it| it.call);
        let last = older
            .iter()
            .rev()
            .find(with_calls)
            .map(|it| it.call + it.calls - 1);
        if let (Some(a), Some(b)) = (first, last) {
            line.push_str(&format!("; tool calls {}–{}", call_alias(a), call_alias(b)));
        }
        blocks.push(line);
        if let Some(first) = first_prompt(turns, older) {
            blocks.push(first);
        }
    }
    blocks.reverse();
    blocks.join("\n")
}

/// The session's first prompt, when its turn is among the turns a summary
/// does not digest: it usually states the task.
fn first_prompt<T: AsRef<Turn>>(turns: &[T], older: &[Item]) -> Option<String> {
    let it = older.iter().find(|it| it.kind == ItemKind::User)?;
    let u = turns[it.turn as usize].as_ref().user.as_ref()?;
    Some(format!(
        "- Turn {} (first prompt): {}",
        it.turn,
        one_line(&content_text(&u.content), FIRST_PROMPT_CHARS)
    ))
}

/// The digest of one turn's run of items. The outcome is the last
/// assistant text, found from the end (a turn can hold hundreds of calls).
fn digest<'a, T: AsRef<Turn>>(turns: &'a [T], run: &[Item]) -> TurnDigest<'a> {
    let turn = turns[run[0].turn as usize].as_ref();
    let assistants = || run.iter().filter(|it| it.kind == ItemKind::Assistant);
    TurnDigest {
        turn: run[0].turn,
        user: run
            .iter()
            .any(|it| it.kind == ItemKind::User)
            .then(|| turn.user.as_ref().map(|u| &u.content))
            .flatten(),
        outcome: assistants()
            .rev()
            .map(|it| &turn.messages[it.msg as usize])
            .find(|e| has_assistant_text(e)),
        calls: assistants()
            .flat_map(|it| it.call..it.call + it.calls)
            .collect(),
        prompt_follows: false,
    }
}

fn turn_block(d: &TurnDigest, calls: &[ToolCallState], files: &[FileEntry]) -> String {
    let mut s = format!("- Turn {}", d.turn);
    match d.user {
        Some(_) if d.prompt_follows => s.push_str(&format!(" ({PROMPT_FOLLOWS})")),
        Some(u) => {
            s.push_str(": ");
            s.push_str(&one_line(&content_text(u), USER_CHARS));
        }
        None => s.push_str(" (continued)"),
    }
    if let (Some(a), Some(b)) = (d.calls.first(), d.calls.last()) {
        let mut counts: Vec<(&str, usize)> = Vec::new();
        let mut changed: Vec<u32> = Vec::new();
        for &i in &d.calls {
            let Some(c) = calls.get(i as usize) else {
                continue;
            };
            match counts.iter_mut().find(|(t, _)| *t == c.tool) {
                Some((_, n)) => *n += 1,
                None => counts.push((&c.tool, 1)),
            }
            if matches!(c.tool.as_str(), "edit" | "write") && !c.is_error {
                if let Some(f) = c.file.filter(|f| !changed.contains(f)) {
                    changed.push(f);
                }
            }
        }
        let range = if a == b {
            call_alias(*a)
        } else {
            format!("{}–{}", call_alias(*a), call_alias(*b))
        };
        let counts: Vec<String> = counts.iter().map(|(t, n)| format!("{t} {n}")).collect();
        s.push_str(&format!("\n  tools {range}: {}", counts.join(", ")));
        if !changed.is_empty() {
            let names: Vec<String> = changed
                .iter()
                .map(|&f| match files.get(f as usize) {
                    Some(e) => format!("{} {}", file_alias(f), e.path),
                    None => file_alias(f),
                })
                .collect();
            s.push_str(&format!("; changed {}", names.join(", ")));
        }
    }
    if let Some(o) = d.outcome.and_then(assistant_text) {
        s.push_str("\n  outcome: ");
        s.push_str(&one_line(&o, OUTCOME_CHARS));
    }
    s
}

/// A fold applied to the layout's state: its summary, its `PINNED` block
/// and its record.
impl CacheLayout {
    /// Applies a fold at `plan` with summary `text` (prefixed with the fold
    /// line) and its `PINNED` block with the calls that block shows; the
    /// epoch's delta becomes the full file list, unless one stays in view.
    pub fn apply_fold(
        &mut self,
        plan: FoldPlan,
        text: &str,
        (pinned_block, block): (Option<String>, Vec<u32>),
        host: bool,
        file_line: &dyn Fn(u32) -> String,
        area: Vec<WorkingCopy>,
    ) {
        let epoch = self.state.epochs.len() as u32;
        // The lists folded away are restated whole, unless a whole list
        // stays after the cut (a host compaction's cut can fall before the
        // last fold's list): it and the deltas after it name every file.
        if !self.full_list_after(plan.cut) {
            let full = self.delta(file_line, true);
            if let Some(e) = self.state.epochs.last_mut() {
                e.delta = full;
                self.changed.epochs.insert(epoch - 1);
                self.texts.forget_epoch(epoch as usize - 1);
            }
        }
        self.void_folded_dedupes(plan.cut, epoch, &block);
        self.state.folds.push(FoldRecord {
            epoch,
            cut: plan.cut,
            user: plan.user,
            text: format!("{FOLD_LINE}\n{text}"),
            pinned: pinned_block,
            block,
            host,
            copies: area,
            block_first: true,
        });
        self.settle_copy_dedupes(epoch);
        self.fold_plan = None;
    }

    /// Whether a fold's whole `FILES` list renders after item `cut` (every
    /// later list is a delta after it, so together they name every file).
    fn full_list_after(&self, cut: u32) -> bool {
        let first = crate::context::aliases::file_alias(0);
        self.state.folds.iter().any(|f| {
            f.epoch
                .checked_sub(1)
                .and_then(|k| self.state.epochs.get(k as usize))
                .is_some_and(|e| {
                    e.anchor >= cut
                        && e.delta.as_deref().is_some_and(|d| {
                            d.starts_with("FILES +")
                                && d.lines().nth(1).is_some_and(|l| {
                                    l.strip_prefix(first.as_str())
                                        .is_some_and(|r| r.starts_with(' '))
                                })
                        })
                })
        })
    }

    /// Targets before `cut` of the live "shown above" notes from `cut` on
    /// (a fold at `cut` would leave those notes pointing at nothing).
    pub fn note_targets_before(&self, cut: u32) -> Vec<usize> {
        let epochs = self.state.epochs.len() as u32;
        let item = |k: usize| self.items.result_item.get(k).copied().flatten();
        self.state
            .calls
            .iter()
            .enumerate()
            .filter_map(|(k, c)| {
                let t = c.points_to? as usize;
                let kept = item(k).is_some_and(|r| r >= cut) && c.result_live_at(epochs);
                (kept && self.showing_item(t as u32).is_some_and(|r| r < cut)).then_some(t)
            })
            .collect()
    }

    /// The engine's fold summary for a cut (see [`fold`]); `repeated`: the
    /// user item shown again after it.
    pub fn summary<T: AsRef<Turn>>(
        &self,
        turns: &[T],
        cut: u32,
        repeated: Option<u32>,
        p: &CachePolicy,
    ) -> String {
        extractive_summary(
            turns,
            &self.items.list,
            cut as usize,
            repeated.map(|u| u as usize),
            &self.state.calls,
            &self.state.files,
            p.summary_chars as usize,
        )
    }

    /// The calls a fold at `cut` shows in its `PINNED` block: those of
    /// `keep` whose place it folds, ascending.
    pub fn block_calls(&self, cut: u32, keep: &HashSet<usize>) -> Vec<usize> {
        let mut calls: Vec<usize> = keep
            .iter()
            .copied()
            .filter(|&c| {
                self.items
                    .result_item
                    .get(c)
                    .copied()
                    .flatten()
                    .is_some_and(|r| r < cut)
            })
            .collect();
        calls.sort_unstable();
        calls
    }

    /// The `PINNED` block for pinned calls whose place is before `cut`.
    pub fn pinned_block<T: AsRef<Turn>>(
        &self,
        turns: &[T],
        cut: u32,
        pinned: &HashSet<usize>,
        p: &CachePolicy,
        doc: &dyn DocLookup,
        display: &dyn Fn(&FilesystemSource) -> String,
    ) -> Option<String> {
        let calls = self.block_calls(cut, pinned);
        if calls.is_empty() {
            return None;
        }
        let env = Env {
            turns,
            items: &self.items,
            aliases: &self.aliases,
            state: &self.state,
            policy: p,
            doc,
            frozen: &self.frozen,
            display,
            epochs: self.state.epochs.len() as u32,
            limit: self.items.len(),
        };
        let mut s = String::from("PINNED");
        let mut notices = self.folded_notices(cut, &calls).into_iter().peekable();
        // The texts of the reads and writes shown so far, by file.
        let mut shown: Vec<(Option<u32>, usize, String)> = Vec::new();
        for &c in &calls {
            let at = self.block_item(c);
            while let Some((_, part)) = notices.next_if(|(a, _)| Some(*a) < at) {
                s.push_str("\n--- notice ---\n");
                s.push_str(&part);
            }
            let st = &self.state.calls[c];
            // An identical re-read whose original the block shows too points
            // there (one whose original is folded away is voided: its text),
            // as does a read of a text an entry above shows already (seed
            // 1270: a whole read and a range covering the whole file, both
            // pointing at a write the fold folded away).
            let read_text = (st.tool == "read").then(|| env.live_text(c as u32));
            let original = st
                .dedupe()
                .filter(|&d| calls.contains(&(d as usize)))
                .or_else(|| {
                    let text = read_text.as_ref()?;
                    shown
                        .iter()
                        .find(|(f, _, t)| *f == st.file && t == text)
                        .map(|(_, j, _)| *j as u32)
                });
            let text = if let Some(d) = original {
                format!(
                    "[{}: identical to {} above]",
                    call_alias(c as u32),
                    call_alias(d)
                )
            } else if st.tool == "write" {
                env.call_doc(c as u32)
                    .and_then(|d| d.get("args"))
                    .and_then(|a| a.get("content"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            } else if st.tool == "edit" {
                // The edit's bodies: what a working file's view needs.
                env.call_doc(c as u32)
                    .and_then(|d| d.get("args"))
                    .map(|a| serde_json::to_string(a).unwrap_or_default())
                    .unwrap_or_default()
            } else {
                read_text.unwrap_or_else(|| env.live_text(c as u32))
            };
            let head = match st.file.filter(|_| st.shows.is_empty()) {
                Some(f) => format!(
                    "--- file id={} path={} ({}{}) ---",
                    file_alias(f),
                    self.state
                        .files
                        .get(f as usize)
                        .map_or("", |e| e.path.as_str()),
                    call_alias(c as u32),
                    if st.tool == "edit" { " edit" } else { "" }
                ),
                None => format!("--- {} {} ---", call_alias(c as u32), st.tool),
            };
            if original.is_none() && matches!(st.tool.as_str(), "read" | "write") {
                shown.push((st.file, c, text.clone()));
            }
            s.push('\n');
            s.push_str(&head);
            s.push('\n');
            s.push_str(&text);
        }
        for (_, part) in notices {
            s.push_str("\n--- notice ---\n");
            s.push_str(&part);
        }
        Some(s)
    }

    /// The item that shows call `c`: its result, or its arguments (an edit).
    fn block_item(&self, c: usize) -> Option<u32> {
        let items = &self.items;
        items
            .result_item
            .get(c)
            .copied()
            .flatten()
            .or_else(|| items.assistant_item.get(c).copied())
    }

    /// The change notices before `cut` about files the block's `calls` show,
    /// each told after the block's first showing of its file: (the item it
    /// followed, its text), in order. The fold folds the chat's notices
    /// away, and the block shows its calls as they were: without them a
    /// file changed or deleted on disk since would read as current there
    /// (random sessions' check 13).
    fn folded_notices(&self, cut: u32, calls: &[usize]) -> Vec<(u32, String)> {
        let mut first: HashMap<String, u32> = HashMap::new();
        for &c in calls {
            let Some(at) = self.block_item(c) else {
                continue;
            };
            let st = &self.state.calls[c];
            for f in st.file.into_iter().chain(shows_files(&self.aliases, st)) {
                let e = first.entry(file_alias(f)).or_insert(at);
                *e = (*e).min(at);
            }
        }
        self.notices_before(cut, 0)
            .filter(|(anchor, part)| {
                notices::names(part)
                    .and_then(|f| first.get(f))
                    .is_some_and(|at| at <= anchor)
            })
            .map(|(anchor, part)| (anchor, part.to_string()))
            .collect()
    }

    /// The change notices (one per file) told before item `cut`, from
    /// epoch record `from` on: (the item each followed, its text), in order.
    pub(super) fn notices_before(
        &self,
        cut: u32,
        from: usize,
    ) -> impl Iterator<Item = (u32, &str)> {
        let records = self.state.epochs.get(from..).unwrap_or_default();
        records
            .iter()
            .filter(move |e| e.notice && e.anchor < cut)
            .filter_map(|e| Some((e.anchor, e.delta.as_deref()?)))
            .flat_map(|(anchor, text)| notices::parts(text).map(move |part| (anchor, part)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::cache_layout::Items;
    use crate::context::chat::{ToolCallEntry, UserEntry};
    use serde_json::json;

    /// The digest as first written: every item, in order.
    fn digest_forward<'a, T: AsRef<Turn>>(turns: &'a [T], run: &[Item]) -> TurnDigest<'a> {
        let mut d = TurnDigest {
            turn: run[0].turn,
            ..Default::default()
        };
        let turn = turns[d.turn as usize].as_ref();
        for it in run {
            match it.kind {
                ItemKind::User => {
                    d.user = turn.user.as_ref().map(|u| &u.content);
                }
                ItemKind::Assistant => {
                    let e = &turn.messages[it.msg as usize];
                    if has_assistant_text(e) {
                        d.outcome = Some(e);
                    }
                    d.calls.extend(it.call..it.call + it.calls);
                }
                _ => {}
            }
        }
        d
    }

    /// The summary as first written: digests every folded turn, then takes
    /// the newest that fit (the oracle for the bounded walk).
    fn summary_walking_everything<T: AsRef<Turn>>(
        turns: &[T],
        items: &[Item],
        cut: usize,
        calls: &[ToolCallState],
        files: &[FileEntry],
        budget: usize,
    ) -> String {
        let folded = &items[..cut.min(items.len())];
        let mut digests: Vec<TurnDigest> = Vec::new();
        let mut start = 0;
        for i in 1..=folded.len() {
            if i == folded.len() || folded[i].turn != folded[start].turn {
                digests.push(digest_forward(turns, &folded[start..i]));
                start = i;
            }
        }
        let mut blocks: Vec<String> = Vec::new();
        let mut used = 0usize;
        let mut rest = digests.len();
        for d in digests.iter().rev() {
            let block = turn_block(d, calls, files);
            let n = block.chars().count() + 1;
            if used + n > budget && !blocks.is_empty() {
                break;
            }
            used += n;
            blocks.push(block);
            rest -= 1;
        }
        if rest > 0 {
            let older = &digests[..rest];
            let ids: Vec<u32> = older.iter().flat_map(|d| d.calls.iter().copied()).collect();
            let mut line = format!(
                "- Turns {}–{}: not summarised here",
                older[0].turn,
                older[rest - 1].turn
            );
            if let (Some(a), Some(b)) = (ids.iter().min(), ids.iter().max()) {
                line.push_str(&format!(
                    "; tool calls {}–{}",
                    call_alias(*a),
                    call_alias(*b)
                ));
            }
            blocks.push(line);
            let end = folded.iter().position(|it| it.turn > older[rest - 1].turn);
            if let Some(first) = first_prompt(turns, &folded[..end.unwrap_or(folded.len())]) {
                blocks.push(first);
            }
        }
        blocks.reverse();
        blocks.join("\n")
    }

    /// Turns of varied shape: no user (continued), no calls, several calls
    /// per message, edits and writes, text-less assistants.
    fn session(n: usize) -> (Vec<Turn>, Vec<Item>, Vec<ToolCallState>, Vec<FileEntry>) {
        let mut turns = Vec::new();
        let mut items = Items::default();
        let mut calls = Vec::new();
        let files: Vec<FileEntry> = (0..7)
            .map(|i| FileEntry {
                path: format!("src/m{i}.rs"),
                chars: 10,
            })
            .collect();
        for t in 0..n {
            let user = (t % 5 != 3).then(|| UserEntry {
                content: json!(format!(
                    "turn {t}: do the   next\nthing {}",
                    "x".repeat(t % 300)
                )),
                timestamp: Value::Null,
                fp: String::new(),
            });
            if user.is_some() {
                items.push_user(t);
            }
            let mut messages = Vec::new();
            for m in 0..(t % 4) {
                let k = (t + m) % 3;
                let first = calls.len() as u32;
                let text = if (t + m) % 2 == 0 {
                    format!("step {m} of turn {t}")
                } else {
                    "  ".into()
                };
                let mut tool_calls = Vec::new();
                for j in 0..k {
                    let tool = ["read", "edit", "write", "bash"][(t + j) % 4];
                    calls.push(ToolCallState {
                        tool: tool.into(),
                        file: Some(((t + j) % 7) as u32),
                        is_error: (t + j) % 11 == 0,
                        ..Default::default()
                    });
                    tool_calls.push(ToolCallEntry {
                        call_id: format!("c{t}_{m}_{j}"),
                        name: tool.into(),
                        toolcall_id: None,
                        arguments: None,
                    });
                }
                messages.push(MessageEntry {
                    role: "assistant".into(),
                    content: Some(vec![json!({"type": "text", "text": text})]),
                    tool_calls: Some(tool_calls),
                    ..Default::default()
                });
                items.push_assistant(t, messages.len() - 1, first, k as u32);
            }
            turns.push(Turn {
                index: t,
                user,
                messages,
            });
        }
        (turns, items.list, calls, files)
    }

    #[test]
    fn the_bounded_walk_gives_the_summary_of_the_full_walk() {
        let (turns, items, calls, files) = session(120);
        for cut in [
            0,
            1,
            2,
            7,
            40,
            41,
            items.len() / 2,
            items.len() - 1,
            items.len(),
            items.len() + 5,
        ] {
            for budget in [0, 1, 50, 400, 2_000, 100_000] {
                assert_eq!(
                    extractive_summary(&turns, &items, cut, None, &calls, &files, budget),
                    summary_walking_everything(&turns, &items, cut, &calls, &files, budget),
                    "cut {cut}, budget {budget}"
                );
            }
        }
    }

    #[test]
    fn the_first_prompt_and_whole_prompts_survive_a_fold() {
        // The task is usually stated once, in the session's first prompt; a
        // fold that drops it (or cuts every prompt to a teaser) hides what
        // the agent was asked to do.
        let (mut turns, items, calls, files) = session(60);
        let task = format!(
            "THE TASK: {}",
            "refactor the parser; keep the API. ".repeat(20)
        );
        turns[0].user.as_mut().unwrap().content = json!(task);
        let middle = format!("MID: {}", "use tabs, not spaces. ".repeat(30));
        turns[50].user.as_mut().unwrap().content = json!(middle);
        let cut = items.len() - 1;
        let s = extractive_summary(&turns, &items, cut, None, &calls, &files, 4_000);
        assert!(s.contains(&one_line(&task, FIRST_PROMPT_CHARS)), "{s}");
        assert!(s.contains(&one_line(&middle, USER_CHARS)), "{s}");
        assert!(middle.len() > 600 && one_line(&middle, USER_CHARS) == one_line(&middle, 10_000));
    }

    #[test]
    fn the_prompt_shown_after_the_summary_is_not_quoted_in_it() {
        // A cut inside the current turn shows its prompt again after the
        // summary; quoting it in the summary too put it in view twice.
        let (mut turns, items, calls, files) = session(12);
        let u = items
            .iter()
            .rposition(|it| it.kind == ItemKind::User)
            .unwrap();
        let t = items[u].turn as usize;
        turns[t].user.as_mut().unwrap().content = json!("NOW: rename the parser");
        let cut = items.len() - 1;
        assert!(u < cut);
        let quoted = extractive_summary(&turns, &items, cut, None, &calls, &files, 4_000);
        assert!(quoted.contains("NOW: rename the parser"), "{quoted}");
        let s = extractive_summary(&turns, &items, cut, Some(u), &calls, &files, 4_000);
        assert!(!s.contains("NOW: rename the parser"), "{s}");
        assert!(s.contains(&format!("- Turn {t} ({PROMPT_FOLLOWS})")), "{s}");
        // The turn's calls are still listed.
        assert_eq!(s.lines().count(), quoted.lines().count());
    }

    #[test]
    fn one_line_collapses_and_cuts() {
        assert_eq!(one_line("a \n b\t c", 10), "a b c");
        assert_eq!(one_line("abcdef", 3), "abc…");
        assert_eq!(one_line("", 3), "");
    }
}
