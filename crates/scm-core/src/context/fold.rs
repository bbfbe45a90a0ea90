//! The engine's fold summary (docs/notes/layout-experiments.md §6.6). The
//! engine cannot call a model, so the summary is **extractive** and
//! deterministic: per folded turn the user's prompt, the tool calls by id
//! and the files changed, and the assistant's last text, newest turns first
//! until the budget is spent; older turns get one line of ids. Everything
//! folded stays retrievable by id.

use super::aliases::{call_alias, file_alias};
use super::cache_layout::{FileEntry, Item, ItemKind};
use super::chat::{MessageEntry, Turn};
use super::epochs::CallState;
use serde_json::Value;

/// First line of every fold message.
pub const FOLD_LINE: &str = "[Earlier turns are folded into this summary; their tool calls and files keep their ids (activate to view).]";

const USER_CHARS: usize = 200;
const OUTCOME_CHARS: usize = 300;

/// Whitespace collapsed to single spaces, cut to `max` chars with `…`.
pub fn one_line(s: &str, max: usize) -> String {
    let mut out = String::new();
    let mut n = 0;
    for word in s.split_whitespace() {
        if n > 0 {
            out.push(' ');
            n += 1;
        }
        for ch in word.chars() {
            if n >= max {
                out.push('…');
                return out;
            }
            out.push(ch);
            n += 1;
        }
    }
    out
}

/// The text parts of a message `content` (string or parts), joined.
pub fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter(|p| p["type"] == "text")
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

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
/// the turns that make it into the summary (the walk covers every folded
/// item, so it must not build strings).
#[derive(Default)]
struct TurnDigest<'a> {
    turn: u32,
    user: Option<&'a Value>,
    outcome: Option<&'a MessageEntry>,
    calls: Vec<u32>,
}

/// One block per folded turn; see the module docs. `cut`: the first item
/// that stays (everything before it is folded).
pub fn extractive_summary<T: AsRef<Turn>>(
    turns: &[T],
    items: &[Item],
    cut: usize,
    calls: &[CallState],
    files: &[FileEntry],
    budget: usize,
) -> String {
    let mut digests: Vec<TurnDigest> = Vec::new();
    for it in &items[..cut.min(items.len())] {
        if digests.last().is_none_or(|d| d.turn != it.turn) {
            digests.push(TurnDigest {
                turn: it.turn,
                ..Default::default()
            });
        }
        let d = digests.last_mut().expect("pushed");
        let turn = turns[it.turn as usize].as_ref();
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
    }
    blocks.reverse();
    blocks.join("\n")
}

fn turn_block(d: &TurnDigest, calls: &[CallState], files: &[FileEntry]) -> String {
    let mut s = format!("- Turn {}", d.turn);
    match d.user {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_collapses_and_cuts() {
        assert_eq!(one_line("a \n b\t c", 10), "a b c");
        assert_eq!(one_line("abcdef", 3), "abc…");
        assert_eq!(one_line("", 3), "");
    }
}
