//! **Working files** of the cache layout (issue 10, "what the model sees
//! must be right"): the files the agent is working on keep their visible
//! state through epochs, and output never collapses before the model has
//! seen it once.
//!
//! A file is *working* while one of the newest [`CachePolicy::working_calls`]
//! tool calls read, edited or wrote it, or showed it (activate/pin), or one
//! of the newest `working_edited_calls` edited or wrote it (twice that for a
//! file the agent has edited from memory, even if its latest edit quoted
//! what it could see; four times, to keep a small live copy). Its
//! *view* is what the model needs to quote it exactly: walking back from
//! its newest call, every edit and write body and every read or activation
//! result, up to and including the first write, whole-file read or
//! activation (each of those shows the whole file). An epoch keeps the
//! views of the working files, newest-touched first, while they fit in
//! [`CachePolicy::working_units`]; a file whose view does not fit is not
//! kept at all (half a view cannot be quoted from); instead, a file being
//! edited keeps the bodies of its recent edits (the text the agent wrote
//! there, which it quotes when it revises or undoes an edit).
//!
//! Why views kept in place first rather than a copy of the current version
//! at every epoch: the calls stay where they were, so the kept ones before
//! the first collapse stay in the cached prefix, ranged reads stay ranged
//! (the median read before an edit is 1.3k chars, the file several times
//! that), and nothing is shown twice.
//!
//! **Working copies.** A file the agent edits *from memory* — one of its
//! edits quoted text the model could not see, or failed, or the agent
//! wrote it and it is larger than the views' budget (`CacheState::recall`,
//! kept by `session/recall.rs`) — whose view cannot be kept (too big: a plan
//! document written once and ticked off for hundreds of calls, whose write
//! plus every edit body is twice the file; or partly collapsed) is shown
//! once as its *current version*, while the copies fit in
//! [`CachePolicy::working_copy_units`]. From then on its view is the copy
//! plus the file's calls after it; the copy stays where it is (cached) until
//! the view can no longer be kept, when a new copy replaces it and the old
//! one collapses to `[f3 · 620 lines]`. Where copies go, and what a fold
//! does with them, is `cache_layout/copies.rs`. Measured with the
//! edit-anchor instrument in docs/benchmarks.md ("Context sufficiency").
//!
//! **A slice of a file being edited** ([`slice_of_edited`]): a ranged read
//! of a small file the agent edited in the newest `working_edited_calls`,
//! whose whole text it no longer has in view, gets the file's current
//! version appended at that call, once. The agent looks at part of the file
//! it is changing and edits next, quoting lines around the slice from what
//! it remembers of the whole (on the two real sessions, 2 of the 6 edits
//! still hidden quoted lines just past the slice read the call before).

use std::collections::{HashMap, HashSet};

use serde_json::Value;

pub use super::epochs::CopyAt;
use super::epochs::{units, CachePolicy, ToolCallState};
use super::tool_args::{apply_edit, quotable_lines};

/// Per file (alias index): the calls that touched it, ascending.
#[derive(Debug, Clone, Default)]
pub struct FileCalls {
    by_file: HashMap<u32, Vec<u32>>,
}

impl FileCalls {
    pub fn clear(&mut self) {
        self.by_file.clear();
    }

    /// Call `call` touched file `file` (calls arrive in ascending order; a
    /// repeat is ignored).
    pub fn note(&mut self, file: u32, call: u32) {
        let v = self.by_file.entry(file).or_default();
        match v.binary_search(&call) {
            Ok(_) => {}
            Err(at) => v.insert(at, call),
        }
    }

    pub fn of(&self, file: u32) -> &[u32] {
        self.by_file.get(&file).map_or(&[], Vec::as_slice)
    }
}

/// The files a call touched: its path argument's file, and the files its
/// activation shows (`shows_files`).
fn touched(c: &ToolCallState, shows_files: &dyn Fn(&ToolCallState) -> Vec<u32>) -> Vec<u32> {
    let mut out: Vec<u32> = c.file.into_iter().collect();
    out.extend(shows_files(c));
    out
}

/// Units a kept call costs in view.
pub fn view_units(c: &ToolCallState, p: &CachePolicy) -> u64 {
    let mut n = 0;
    if c.result_collapsible(p) && !c.is_dedupe() {
        n += units(c.result_chars);
    }
    if c.args_collapsible(p) {
        n += units(c.arg_chars);
    }
    n
}

/// A working copy still shown whole (see [`crate::context::cache_layout::WorkingCopy`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveCopy {
    pub file: u32,
    /// Calls from this index on came after the copy.
    pub after: u32,
    pub units: u64,
    pub at: CopyAt,
}

/// What an epoch keeps for the working files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkingPlan {
    /// Calls kept (the views), ascending.
    pub calls: Vec<usize>,
    /// Live copies that stay (the base of a kept view); every other live
    /// copy collapses.
    pub keep_copies: Vec<CopyAt>,
    /// Files that get a new working copy at this epoch.
    pub new_copies: Vec<u32>,
}

/// A file's view: its calls (newest first), whether it rests on a live
/// working copy, and whether it ends at a call showing the whole file (a
/// whole read, a write, an activation), not at the file's first call.
struct View {
    calls: Vec<u32>,
    on_copy: bool,
    whole: bool,
}

/// One file's view, newest call first, or `None` when part of it has
/// collapsed already (nothing un-collapses: the view cannot be whole).
/// With a live copy made before call `copy_after`, the view ends there.
fn view_of(
    file: u32,
    calls: &[ToolCallState],
    fc: &FileCalls,
    copy_after: Option<u32>,
) -> Option<View> {
    let mut view = Vec::new();
    let done = |calls: Vec<u32>| {
        Some(View {
            calls,
            on_copy: false,
            whole: true,
        })
    };
    for &k in fc.of(file).iter().rev() {
        if copy_after.is_some_and(|a| k < a) {
            return Some(View {
                calls: view,
                on_copy: true,
                whole: false,
            });
        }
        let c = &calls[k as usize];
        if c.is_error || (!c.has_result && c.tool != "edit" && c.tool != "write") {
            continue;
        }
        match c.tool.as_str() {
            "edit" => {
                if c.args_collapsed.is_some() {
                    return None;
                }
                view.push(k);
            }
            "write" => {
                if c.args_collapsed.is_some() {
                    return None;
                }
                view.push(k);
                return done(view);
            }
            "read" => {
                if c.collapsed.is_some() {
                    return None;
                }
                view.push(k);
                // A re-read pointing at the file's copy shows nothing
                // itself: the view goes on to the copy. A numbered listing
                // shows every line (quotable), as a whole read does.
                if (!c.ranged || c.numbered) && c.copy_dedupe().is_none() {
                    return done(view);
                }
            }
            _ if !c.shows.is_empty() => {
                if c.collapsed.is_some() {
                    return None;
                }
                view.push(k);
                return done(view);
            }
            _ => {}
        }
    }
    // Reached the file's first call: only ranged reads and edits (a file the
    // agent never saw whole). Keep what there is.
    if copy_after.is_some() {
        return Some(View {
            calls: view,
            on_copy: true,
            whole: false,
        });
    }
    (!view.is_empty()).then_some(View {
        calls: view,
        on_copy: false,
        whole: false,
    })
}

/// File `file`'s view (newest call first) when it shows the whole file: a
/// whole read, write or activation and every call after it, none collapsed.
/// Whether those calls are in view now is the layout's to say
/// (`CacheLayout::whole_in_view`).
pub fn whole_view(file: u32, calls: &[ToolCallState], fc: &FileCalls) -> Option<Vec<u32>> {
    view_of(file, calls, fc, None)
        .filter(|v| v.whole)
        .map(|v| v.calls)
}

/// The largest working copy counted as small: it may stay longer, and a
/// slice of its file being edited calls for it ([`slice_of_edited`]).
pub fn small_copy_units(p: &CachePolicy) -> u64 {
    u64::from(p.working_copy_units) / 4
}

/// Call `call`, a slice of a file (a ranged read, not a numbered listing)
/// the agent saw whole before (read, wrote or activated) and edited or
/// wrote in the newest `working_edited_calls` tool calls: that file, which
/// may get its current version appended at this call (if small and not in
/// view whole: `CacheLayout::from_memory_copies`). A file only ever seen in
/// slices is not one it remembers whole.
pub fn slice_of_edited(
    calls: &[ToolCallState],
    fc: &FileCalls,
    call: u32,
    p: &CachePolicy,
) -> Option<u32> {
    let c = calls.get(call as usize)?;
    if c.tool != "read" || !c.ranged || c.numbered || c.is_error {
        return None;
    }
    let f = c.file?;
    let before = || fc.of(f).iter().rev().skip_while(|&&k| k >= call);
    let edited = before()
        .take_while(|&&k| call - k <= p.working_edited_calls)
        .any(|&k| {
            let o = &calls[k as usize];
            !o.is_error && matches!(o.tool.as_str(), "edit" | "write")
        });
    let seen_whole = before().any(|&k| {
        let o = &calls[k as usize];
        !o.is_error
            && match o.tool.as_str() {
                "write" => true,
                "read" => !o.ranged || o.numbered,
                _ => !o.shows.is_empty(),
            }
    });
    (edited && seen_whole).then_some(f)
}

/// What an epoch's working plan reads.
#[derive(Clone, Copy)]
pub struct PlanInput<'a> {
    pub calls: &'a [ToolCallState],
    pub fc: &'a FileCalls,
    pub p: &'a CachePolicy,
    /// The files a call's activation shows.
    pub shows_files: &'a dyn Fn(&ToolCallState) -> Vec<u32>,
    /// Calls the last epoch kept for the working files.
    pub prev: &'a [u32],
    /// Working copies shown whole now.
    pub copies: &'a [LiveCopy],
    /// Files that keep nothing (the agent deactivated them).
    pub skip: &'a dyn Fn(u32) -> bool,
    /// Files the agent has edited from memory, with how many of its edits
    /// needed that since one did not (see `CacheState::recall`): above 0
    /// they get new copies; every such file keeps its reach.
    pub recall: &'a dyn Fn(u32) -> Option<u32>,
}

/// Files whose views the last epoch kept (`prev`) or that have a live copy
/// come first: a view kept once stays in the cached prefix, and dropping it
/// for a newer file would collapse what the model may still quote.
/// `current_units(f)`: the size of file f's current text, `None` when it is
/// not known (no working copy then).
pub fn plan(
    input: &PlanInput<'_>,
    current_units: &mut dyn FnMut(u32) -> Option<u64>,
) -> WorkingPlan {
    let PlanInput {
        calls,
        fc,
        p,
        shows_files,
        prev,
        copies,
        skip,
        recall: needed,
    } = *input;
    // Gets new copies: edited from memory (or written large), and no edit
    // since quoted what was in view.
    let recall = |f: u32| needed(f).is_some_and(|k| k > 0);
    // Has been edited from memory: its view and copy reach further.
    let from_memory = |f: u32| needed(f).is_some();
    let mut out = WorkingPlan::default();
    if p.working_calls == 0 || (p.working_units == 0 && p.working_copy_units == 0) {
        return out;
    }
    // Working files, newest touch first: any touch in the newest
    // `working_calls`, an edit or write in the newest `working_edited_calls`.
    let n = calls.len();
    // A file the agent edits from memory stays working twice as long: it is
    // the document it keeps coming back to (a plan, a checklist).
    let recall_calls = p.working_edited_calls.saturating_mul(2);
    // A small one keeps its live copy twice as long again (the docs it
    // updates after each change, a hundred calls apart): the copy is in the
    // cached prefix already and costs little to carry; nothing new is shown
    // for it past `recall_calls`.
    let copy_calls = recall_calls.saturating_mul(2);
    // The newest live copy of f (an older one is never a view's base).
    let copy_of = |f: u32| {
        copies
            .iter()
            .filter(|c| c.file == f)
            .max_by_key(|c| c.after)
    };
    let small_copy = |f: u32| copy_of(f).is_some_and(|c| c.units <= small_copy_units(p));
    let reach = p.working_calls.max(copy_calls) as usize;
    let mut files: Vec<u32> = Vec::new();
    let mut editing: Vec<u32> = Vec::new();
    // Files working only for their live copy; never `editing`, so they get
    // no new copy and no edit bodies.
    let mut copy_only: Vec<u32> = Vec::new();
    // Edits and writes per file in the window: the files worked on most
    // get the budgets first.
    let mut edits: HashMap<u32, u32> = HashMap::new();
    for (i, c) in calls.iter().enumerate().skip(n.saturating_sub(reach)).rev() {
        if c.is_error {
            continue;
        }
        let recent = n - i <= p.working_calls as usize;
        let is_edit = matches!(c.tool.as_str(), "edit" | "write");
        let edited = is_edit && n - i <= p.working_edited_calls as usize;
        let recalled = is_edit && n - i <= recall_calls as usize && c.file.is_some_and(from_memory);
        let edited = edited || recalled;
        if !recent && !edited {
            let kept_copy = is_edit && n - i <= copy_calls as usize;
            if let Some(f) = c
                .file
                .filter(|&f| kept_copy && from_memory(f) && small_copy(f) && !files.contains(&f))
            {
                files.push(f);
                copy_only.push(f);
            }
            continue;
        }
        for f in touched(c, shows_files) {
            if !files.contains(&f) {
                files.push(f);
            }
            if edited {
                *edits.entry(f).or_default() += 1;
                if !editing.contains(&f) {
                    editing.push(f);
                }
            }
        }
    }
    // A live copy that a later write or whole read replaced is no view's
    // base: it holds no place (it collapses), as a file without one.
    let on_copy: Vec<u32> = files
        .iter()
        .copied()
        .filter(|&f| {
            copy_of(f)
                .is_some_and(|c| view_of(f, calls, fc, Some(c.after)).is_some_and(|v| v.on_copy))
        })
        .collect();
    let rests_on_copy = |f: u32| on_copy.contains(&f);
    // A file kept only for its copy is working while its view rests on it.
    files.retain(|f| !copy_only.contains(f) || rests_on_copy(*f));
    let was_kept = |f: &u32| {
        rests_on_copy(*f)
            || prev
                .iter()
                .any(|&k| touched(&calls[k as usize], shows_files).contains(f))
    };
    let (mut first, rest): (Vec<u32>, Vec<u32>) = files.into_iter().partition(was_kept);
    first.extend(rest);
    // A file whose view rests on a live copy first (it is paid for,
    // cached), then the files edited most; stable, so kept views before
    // others, then recency. Files kept only for their copy come last: they
    // are no longer worked on.
    first.sort_by_key(|&f| {
        (
            copy_only.contains(&f),
            !rests_on_copy(f),
            std::cmp::Reverse(needed(f).unwrap_or(0)),
            std::cmp::Reverse(edits.get(&f).copied().unwrap_or(0)),
        )
    });
    let mut budget = 0u64;
    let mut copy_budget = 0u64;
    let mut recent_used = 0u64;
    for f in first {
        if skip(f) {
            continue;
        }
        let copy = copy_of(f);
        if let Some(view) = view_of(f, calls, fc, copy.map(|c| c.after)) {
            let size: u64 = view
                .calls
                .iter()
                .map(|&k| view_units(&calls[k as usize], p))
                .sum();
            let base = match (view.on_copy, copy) {
                (true, Some(c)) => c.units,
                _ => 0,
            };
            // A view resting on a copy is paid from the copies' budget, so
            // copies never take the room other files' views had.
            let fits = if view.on_copy {
                copy_budget + base + size <= u64::from(p.working_copy_units)
            } else {
                budget + size <= u64::from(p.working_units)
            };
            // A file being edited whose view is over the views' budget may
            // keep it in place from the copies' budget while it is not much
            // larger than the file (a write and a few edits): it is in the
            // cached prefix already, a copy would send it again. A view grown
            // well past the file (every edit's old and new text) gets a copy.
            // A copy in the fold's working area stays until the next fold
            // anyway: its view is kept whatever it costs, rather than a
            // second copy beside it (the fold makes it anew if it grew).
            let in_area = view.on_copy && copy.is_some_and(|c| matches!(c.at, CopyAt::Area(..)));
            let as_copy = !fits
                && recall(f)
                && editing.contains(&f)
                && copy_budget + base + size <= u64::from(p.working_copy_units)
                && current_units(f).is_some_and(|u| size * 4 <= u * 5);
            if fits || as_copy || in_area {
                if fits && !view.on_copy {
                    budget += size;
                } else {
                    copy_budget += base + size;
                }
                out.calls.extend(view.calls.into_iter().map(|k| k as usize));
                if let (true, Some(c)) = (view.on_copy, copy) {
                    out.keep_copies.push(c.at);
                }
                continue;
            }
        }
        // Its view cannot be kept whole: the current version instead, once,
        // for a file being edited.
        if editing.contains(&f) && recall(f) {
            if let Some(u) = current_units(f) {
                if copy_budget + u <= u64::from(p.working_copy_units) {
                    copy_budget += u;
                    out.new_copies.push(f);
                    continue;
                }
            }
        }
        // Neither its view nor a copy: the bodies of its edits among the
        // newest `working_calls` still show the file's text where the agent
        // is working, and it quotes them when it revises or undoes an edit
        // ("undo that" right after a fold: 2 of the 9 edits the two real
        // sessions hid). Newest first, while they fit in a third of the
        // views' budget.
        if editing.contains(&f) {
            let recent = fc
                .of(f)
                .iter()
                .rev()
                .take_while(|&&k| n - k as usize <= p.working_calls as usize)
                .filter(|&&k| {
                    let c = &calls[k as usize];
                    c.tool == "edit" && !c.is_error && c.args_collapsed.is_none()
                });
            for &k in recent {
                let size = view_units(&calls[k as usize], p);
                if budget + size > u64::from(p.working_units)
                    || recent_used + size > u64::from(p.working_units) / 3
                {
                    break;
                }
                budget += size;
                recent_used += size;
                out.calls.push(k as usize);
            }
        }
    }
    out.calls.sort_unstable();
    out.calls.dedup();
    out
}

/// What an engine fold keeps beside the working views (`keep`): for each
/// file the agent edited in the newest `working_edited_calls`, its newest
/// slice (a ranged read among the newest `working_calls`, still shown whole)
/// when nothing kept after that slice shows the file whole. A fold cuts at
/// the current turn's prompt, taking what the recency rule kept; a file
/// whose view is over budget then kept only its edits' bodies, and the
/// agent's next edit quotes the lines it has just read (on the themes
/// session with files twice as large: the prompt "continue" after an
/// interrupted edit folded the 80 lines the edit had quoted, and the retry
/// quoted them again). The fold's copies cover it like any view.
pub fn fold_slices(
    calls: &[ToolCallState],
    fc: &FileCalls,
    p: &CachePolicy,
    keep: &HashSet<usize>,
) -> Vec<usize> {
    let n = calls.len();
    let mut out = Vec::new();
    let mut seen: Vec<u32> = Vec::new();
    let newest = n.saturating_sub(p.working_calls as usize);
    for (k, c) in calls.iter().enumerate().skip(newest).rev() {
        let Some(f) = c.file else { continue };
        let slice = c.tool == "read" && c.ranged && !c.numbered && !c.is_error;
        if !slice || c.collapsed.is_some() || seen.contains(&f) {
            continue;
        }
        seen.push(f);
        let of = fc.of(f);
        let edited = of
            .iter()
            .rev()
            .take_while(|&&j| n - j as usize <= p.working_edited_calls as usize)
            .any(|&j| {
                let o = &calls[j as usize];
                !o.is_error && matches!(o.tool.as_str(), "edit" | "write")
            });
        let shown_whole_after = of.iter().any(|&j| {
            let o = &calls[j as usize];
            j as usize > k
                && keep.contains(&(j as usize))
                && o.has_result
                && (o.tool == "write" || (o.tool == "read" && (!o.ranged || o.numbered)))
        });
        if edited && !keep.contains(&k) && !shown_whole_after {
            out.push(k);
        }
    }
    out
}

/// Most lines of one edit [`quoted_in_view`] looks for.
const MAX_CHECKED_LINES: usize = 64;

/// Whether an edit quoted text the model had in view: at least 90% of the
/// lines of its old texts (trimmed, 8+ chars) occur in `view_json`, the
/// context it was given, as JSON (lines are searched JSON-escaped). The
/// replay instrument's edit-anchor rule (docs/notes/replay.md), online.
/// A line counts only where it occurs outside the texts `except` (JSON
/// escaped, e.g. the file's working copies): so a `false` with copies given
/// says the edit needed them.
pub fn quoted_in_view(old_texts: &[&str], view_json: &str, except: &[String]) -> bool {
    let lines: Vec<&str> = old_texts.iter().flat_map(|t| quotable_lines(t)).collect();
    if lines.is_empty() {
        return true;
    }
    // An edit of thousands of lines is judged on a sample spread over it:
    // one scan of the view per line checked, on the model call's path.
    let lines: Vec<&str> = if lines.len() > MAX_CHECKED_LINES {
        let step = lines.len() as f64 / MAX_CHECKED_LINES as f64;
        (0..MAX_CHECKED_LINES)
            .map(|i| lines[(i as f64 * step) as usize])
            .collect()
    } else {
        lines
    };
    // Stops as soon as the answer is known.
    let need = (lines.len() * 9).div_ceil(10);
    let (mut found, mut missed) = (0, 0);
    for l in &lines {
        let esc = serde_json::to_string(l).unwrap_or_default();
        let esc = &esc.as_bytes()[1..esc.len() - 1];
        let count = |hay: &str| memchr::memmem::find_iter(hay.as_bytes(), esc).count();
        let outside = if except.is_empty() {
            memchr::memmem::find(view_json.as_bytes(), esc).is_some()
        } else {
            count(view_json) > except.iter().map(|e| count(e)).sum::<usize>()
        };
        if outside {
            found += 1;
            if found >= need {
                return true;
            }
        } else {
            missed += 1;
            if missed > lines.len() - need {
                return false;
            }
        }
    }
    found >= need
}

/// The text of a file as the session's own calls show it: the newest write
/// or whole-file read, with every successful edit after it applied. `None`
/// when there is no such base or an edit does not apply exactly once (the
/// store's version is used when it has one; this serves a store that has
/// none, e.g. a replay without the files on disk).
pub fn text_from_calls(
    file: u32,
    calls: &[ToolCallState],
    fc: &FileCalls,
    args_of: &dyn Fn(u32) -> Option<(Value, String)>,
) -> Option<String> {
    let ks = fc.of(file);
    let base = ks.iter().rposition(|&k| {
        let c = &calls[k as usize];
        !c.is_error
            && c.has_result
            && c.dedupe_of.is_none()
            && c.dedupe_copy.is_none()
            && (c.tool == "write" || (c.tool == "read" && (!c.ranged || c.numbered)))
    })?;
    let (args, content) = args_of(ks[base])?;
    let from = &calls[ks[base] as usize];
    let mut text = match from.tool.as_str() {
        "write" => args.get("content")?.as_str()?.to_string(),
        _ if cut_by_host(&content) => return None,
        _ if from.numbered => super::shell_read::denumber(&content)?,
        _ => content,
    };
    for &k in &ks[base + 1..] {
        let c = &calls[k as usize];
        if c.tool != "edit" || c.is_error || !c.has_result {
            continue;
        }
        let (args, _) = args_of(k)?;
        text = apply_edit(&text, &args)?;
    }
    Some(text)
}

/// pi says so on the last line when it cut a read (`[Showing lines 1-2000
/// of 5210. Use offset=2001 to continue.]`, `[N more lines in file. Use
/// offset=…]`, in older sessions `... (N more lines not shown. Use
/// offset=…)`) or a command's output (a shell read: `[Showing lines 1-2000
/// of 5210. Full output: /tmp/…]`): not the whole file. Only the last line:
/// a file may mention it (pi's own `read.ts` does).
fn cut_by_host(content: &str) -> bool {
    content.trim_end().rsplit('\n').next().is_some_and(|l| {
        l.contains("Use offset=") || (l.starts_with("[Showing") && l.contains("Full output: "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(tool: &str, file: u32, result: u64, args: u64) -> ToolCallState {
        ToolCallState {
            tool: tool.into(),
            file: Some(file),
            result_chars: result,
            has_result: true,
            arg_chars: args,
            ..Default::default()
        }
    }

    fn working_calls(
        calls: &[ToolCallState],
        fc: &FileCalls,
        p: &CachePolicy,
        shows: &dyn Fn(&ToolCallState) -> Vec<u32>,
        prev: &[u32],
    ) -> Vec<usize> {
        let input = PlanInput {
            calls,
            fc,
            p,
            shows_files: shows,
            prev,
            copies: &[],
            skip: &|_| false,
            recall: &|_| Some(1),
        };
        plan(&input, &mut |_| None).calls
    }

    /// A plan's input with live copies: no activations, nothing kept
    /// before, nothing deactivated.
    fn copies_input<'a>(
        calls: &'a [ToolCallState],
        fc: &'a FileCalls,
        p: &'a CachePolicy,
        copies: &'a [LiveCopy],
        recall: &'a dyn Fn(u32) -> Option<u32>,
    ) -> PlanInput<'a> {
        fn no_files(_: &ToolCallState) -> Vec<u32> {
            Vec::new()
        }
        PlanInput {
            calls,
            fc,
            p,
            shows_files: &no_files,
            prev: &[],
            copies,
            skip: &|_| false,
            recall,
        }
    }

    fn index(calls: &[ToolCallState]) -> FileCalls {
        let mut fc = FileCalls::default();
        for (i, c) in calls.iter().enumerate() {
            if let Some(f) = c.file {
                fc.note(f, i as u32);
            }
        }
        fc
    }

    #[test]
    fn a_working_file_keeps_its_read_and_the_edits_after_it() {
        let p = CachePolicy::default();
        let mut calls = vec![
            call("read", 0, 4000, 0),  // 0: old read of f1, superseded by 2
            call("read", 1, 4000, 0),  // 1: f2, not touched recently
            call("read", 0, 4000, 0),  // 2: whole read of f1
            call("edit", 0, 40, 800),  // 3
            call("bash", 9, 9000, 10), // 4
        ];
        calls[4].file = None;
        let mut p2 = p.clone();
        p2.working_calls = 3;
        p2.working_edited_calls = 0;
        let kept = working_calls(&calls, &index(&calls), &p2, &|_| Vec::new(), &[]);
        assert_eq!(
            kept,
            vec![2, 3],
            "f1's view: read 2 and edit 3; f2 is not working"
        );
    }

    #[test]
    fn a_slice_of_a_file_seen_whole_and_edited_lately_calls_for_it() {
        let p = CachePolicy {
            working_edited_calls: 3,
            ..Default::default()
        };
        let mut calls = vec![
            call("read", 0, 4000, 0), // 0: whole read of f1
            call("edit", 0, 40, 300), // 1
            call("bash", 9, 900, 10), // 2
            call("read", 0, 400, 0),  // 3: a slice, 2 calls after the edit
            call("bash", 9, 900, 10), // 4
            call("read", 0, 400, 0),  // 5: a slice, 4 calls after it
            call("read", 1, 400, 0),  // 6: a slice of f2, never seen whole
            call("read", 0, 900, 0),  // 7: `nl -ba F`, every line
        ];
        for k in [2, 4] {
            calls[k].file = None;
        }
        for k in [3, 5, 6, 7] {
            calls[k].ranged = true;
        }
        calls[7].numbered = true;
        let fc = index(&calls);
        let of = |k: u32| slice_of_edited(&calls, &fc, k, &p);
        assert_eq!(of(3), Some(0));
        assert_eq!(of(5), None, "the edit is past the window");
        assert_eq!(of(0), None, "a whole read");
        assert_eq!(of(6), None, "f2 was never seen whole (nor edited)");
        assert_eq!(of(7), None, "a numbered listing shows every line");
    }

    #[test]
    fn ranged_reads_stack_until_a_whole_read_and_a_write_ends_the_view() {
        let p = CachePolicy::default();
        let mut calls = vec![
            call("write", 0, 20, 900),
            call("read", 0, 400, 0),
            call("read", 0, 400, 0),
            call("edit", 0, 40, 300),
        ];
        calls[1].ranged = true;
        calls[2].ranged = true;
        let kept = working_calls(&calls, &index(&calls), &p, &|_| Vec::new(), &[]);
        assert_eq!(kept, vec![0, 1, 2, 3]);
    }

    #[test]
    fn a_numbered_listing_of_the_whole_file_ends_the_view_as_a_whole_read_does() {
        let p = CachePolicy::default();
        let mut calls = vec![
            call("read", 0, 4_000, 0), // an old whole read
            call("read", 0, 400, 0),   // a slice
            call("read", 0, 900, 0),   // `nl -ba F`: every line
            call("edit", 0, 40, 300),
        ];
        calls[1].ranged = true;
        (calls[2].ranged, calls[2].numbered) = (true, true);
        let kept = working_calls(&calls, &index(&calls), &p, &|_| Vec::new(), &[]);
        assert_eq!(kept, vec![2, 3], "the listing and the edit after it");
        calls[2].numbered = false; // a numbered slice: back to the whole read
        let kept = working_calls(&calls, &index(&calls), &p, &|_| Vec::new(), &[]);
        assert_eq!(kept, vec![0, 1, 2, 3]);
    }

    #[test]
    fn a_view_with_a_collapsed_part_or_over_budget_is_not_kept() {
        let p = CachePolicy {
            working_units: 500,
            ..Default::default()
        };
        let mut calls = vec![
            call("read", 0, 800, 0),
            call("edit", 0, 40, 400),
            call("read", 1, 4000, 0),
        ];
        calls[0].collapsed = Some(1);
        let kept = working_calls(&calls, &index(&calls), &p, &|_| Vec::new(), &[]);
        assert_eq!(
            kept,
            vec![1],
            "f1's read collapsed: only its recent edit stays; f2's 1000 units exceed 500"
        );
    }

    #[test]
    fn a_file_whose_view_cannot_be_kept_keeps_its_recent_edits_bodies() {
        let p = CachePolicy {
            working_units: 3_000,
            working_calls: 4,
            ..Default::default()
        };
        let mut calls = vec![
            call("read", 0, 40_000, 0), // 0: whole read of f1, too big to keep
            call("edit", 0, 40, 2_000), // 1: out of the newest 4 calls
            call("edit", 0, 40, 1_600), // 2
            call("edit", 0, 40, 400),   // 3: failed
            call("edit", 0, 40, 2_400), // 4
            call("bash", 9, 90, 10),    // 5
        ];
        calls[3].is_error = true;
        calls[5].file = None;
        let kept = working_calls(&calls, &index(&calls), &p, &|_| Vec::new(), &[]);
        assert_eq!(kept, vec![2, 4], "the newest edits that worked");
        // At most a third of the views' budget, newest first: 1,000 units
        // hold edits 4 and 2 (600 + 400 units), but not both once edit 4
        // is 900.
        calls[4].arg_chars = 3_600;
        let kept = working_calls(&calls, &index(&calls), &p, &|_| Vec::new(), &[]);
        assert_eq!(kept, vec![4]);
    }

    /// A live copy that a later write of the whole file replaced holds no
    /// place: the file edited from memory most often gets the copies'
    /// budget first (the live-played recorded session: a file's copy from
    /// before the agent rewrote it kept the plan document out of a fold,
    /// docs/benchmarks.md "Session 32").
    #[test]
    fn a_copy_a_write_replaced_does_not_put_its_file_first() {
        let p = CachePolicy::default();
        let mut calls = vec![
            call("read", 0, 40_000, 0),   // 0: the plan, read whole, collapsed
            call("edit", 0, 40, 400),     // 1
            call("read", 1, 2_000, 0),    // 2: a slice of f1
            call("edit", 1, 40, 400),     // 3: after f1's copy (made before 3)
            call("write", 1, 40, 48_000), // 4: f1 rewritten whole
            call("edit", 0, 40, 400),     // 5
        ];
        calls[0].collapsed = Some(1);
        calls[2].ranged = true;
        let fc = index(&calls);
        let copies = [LiveCopy {
            file: 1,
            after: 3,
            units: 500,
            at: CopyAt::Epoch(0, 0),
        }];
        let recall = |f| Some(if f == 0 { 5 } else { 1 });
        let input = copies_input(&calls, &fc, &p, &copies, &recall);
        let out = plan(&input, &mut |f| Some(if f == 0 { 9_000 } else { 12_000 }));
        assert_eq!(out.new_copies, vec![0], "the plan gets its copy");
        assert!(
            out.keep_copies.is_empty(),
            "f1's old copy is no base: it goes"
        );
    }

    /// Call 0 reads file 0 whole (collapsed since), call 1 edits it from
    /// memory, then `n` calls of other work.
    fn edited_then_other_work(n: usize) -> Vec<ToolCallState> {
        let mut calls = vec![call("read", 0, 40_000, 0), call("edit", 0, 40, 400)];
        calls[0].collapsed = Some(1);
        for _ in 0..n {
            let mut c = call("bash", 0, 90, 10);
            c.file = None;
            calls.push(c);
        }
        calls
    }

    /// File 0's copy, made before call 1 (its edit).
    fn copy_after_the_edit(units: u64) -> LiveCopy {
        LiveCopy {
            file: 0,
            after: 1,
            units,
            at: CopyAt::Epoch(0, 0),
        }
    }

    /// A file the agent has edited from memory whose latest edit quoted what
    /// it could see (`recall` 0): its view and copy reach as far as for a file
    /// edited from memory, but it gets no new copy.
    #[test]
    fn a_file_once_edited_from_memory_keeps_its_reach_but_gets_no_new_copy() {
        let p = CachePolicy::default();
        // 40 calls on: past `working_edited_calls`, within twice that.
        let calls = edited_then_other_work(39);
        let fc = index(&calls);
        let copy = [copy_after_the_edit(8_000)];
        let input = copies_input(&calls, &fc, &p, &copy, &|_| Some(0));
        let out = plan(&input, &mut |_| Some(8_000));
        assert_eq!(out.keep_copies, vec![CopyAt::Epoch(0, 0)], "the copy stays");
        assert_eq!(out.calls, vec![1], "with the edit after it");
        assert!(out.new_copies.is_empty());
        // A file never edited from memory has gone by then.
        let never = PlanInput {
            recall: &|_| None,
            ..input
        };
        assert_eq!(plan(&never, &mut |_| Some(8_000)), WorkingPlan::default());
        // Without a live copy none is made for it; one edit from memory
        // since, and one is.
        let bare = PlanInput {
            copies: &[],
            ..input
        };
        assert_eq!(plan(&bare, &mut |_| Some(8_000)), WorkingPlan::default());
        let again = PlanInput {
            recall: &|_| Some(1),
            ..bare
        };
        assert_eq!(plan(&again, &mut |_| Some(8_000)).new_copies, vec![0]);
    }

    /// A small document the agent edits from memory keeps its live copy
    /// four times `working_edited_calls`: it comes back to it a hundred
    /// calls later ("update the docs too") and quotes the copy (the second
    /// real session's `docs/theme.md`, docs/benchmarks.md "Session 33"). A
    /// large one (a plan of 48k chars) does not: carrying it costs more than
    /// a re-read; nor is anything new shown for either past twice that.
    #[test]
    fn a_small_file_edited_from_memory_keeps_its_copy_a_hundred_calls_on() {
        let p = CachePolicy::default();
        let calls = edited_then_other_work(99);
        let fc = index(&calls);
        let small = [copy_after_the_edit(2_500)];
        let input = copies_input(&calls, &fc, &p, &small, &|_| Some(1));
        let out = plan(&input, &mut |_| Some(2_500));
        assert_eq!(out.keep_copies, vec![CopyAt::Epoch(0, 0)], "the copy stays");
        assert_eq!(out.calls, vec![1], "with the edit after it");
        let keeps_nothing = |input: PlanInput<'_>, units: u64| {
            assert_eq!(plan(&input, &mut |_| Some(units)), WorkingPlan::default());
        };
        // A large copy goes.
        let large = [LiveCopy {
            units: 12_000,
            ..small[0]
        }];
        keeps_nothing(
            PlanInput {
                copies: &large,
                ..input
            },
            12_000,
        );
        // So does a large copy made after a small one: the newest counts.
        let both = [
            small[0],
            LiveCopy {
                after: 2,
                units: 12_000,
                at: CopyAt::Epoch(2, 0),
                ..small[0]
            },
        ];
        keeps_nothing(
            PlanInput {
                copies: &both,
                ..input
            },
            12_000,
        );
        // Without a live copy, none is made this late.
        keeps_nothing(
            PlanInput {
                copies: &[],
                ..input
            },
            2_500,
        );
        // Past four times, the small one goes too.
        let late: Vec<ToolCallState> = calls.iter().chain(&calls[2..32]).cloned().collect();
        keeps_nothing(
            PlanInput {
                calls: &late,
                ..input
            },
            2_500,
        );
        // It comes after the files still worked on, however often it was
        // edited from memory: f1, edited now, keeps its copy.
        let mut now = calls.clone();
        now.extend([call("read", 1, 40_000, 0), call("edit", 1, 40, 400)]);
        now[101].collapsed = Some(1);
        let fc = index(&now);
        let p = CachePolicy {
            working_copy_units: 4_000,
            ..p
        };
        let both = [
            LiveCopy {
                units: 900,
                ..small[0]
            },
            LiveCopy {
                file: 1,
                after: 102,
                units: 3_500,
                at: CopyAt::Epoch(101, 0),
            },
        ];
        let often = |f| Some(if f == 0 { 9 } else { 1 });
        let out = plan(&copies_input(&now, &fc, &p, &both, &often), &mut |f| {
            Some(if f == 0 { 900 } else { 3_500 })
        });
        assert_eq!(out.keep_copies, vec![CopyAt::Epoch(101, 0)]);
    }

    #[test]
    fn the_text_from_calls_is_the_write_with_its_edits_applied() {
        let mut calls = vec![
            call("write", 0, 20, 30),
            call("read", 0, 10, 0),
            call("edit", 0, 20, 10),
        ];
        calls[1].ranged = true;
        let fc = index(&calls);
        let docs = |k: u32| -> Option<(Value, String)> {
            Some(match k {
                0 => (
                    serde_json::json!({"content": "one\ntwo\nthree\n"}),
                    String::new(),
                ),
                1 => (serde_json::json!({"offset": 2}), "two".into()),
                _ => (
                    serde_json::json!({"oldText": "two", "newText": "TWO"}),
                    "ok".into(),
                ),
            })
        };
        assert_eq!(
            text_from_calls(0, &calls, &fc, &docs).as_deref(),
            Some("one\nTWO\nthree\n")
        );
        // An edit whose old text is not there exactly once: not known.
        let ambiguous = |k: u32| -> Option<(Value, String)> {
            match k {
                2 => Some((
                    serde_json::json!({"oldText": "o", "newText": "0"}),
                    "ok".into(),
                )),
                _ => docs(k),
            }
        };
        assert_eq!(text_from_calls(0, &calls, &fc, &ambiguous), None);

        // A numbered listing of the whole file is its text, numbers taken off.
        calls[1].numbered = true;
        let listed = |k: u32| match k {
            1 => Some((
                serde_json::json!({"command": "nl -ba a"}),
                "     1\tone\n     2\ttwo\n     3\tthree\n".into(),
            )),
            _ => docs(k),
        };
        assert_eq!(
            text_from_calls(0, &calls, &fc, &listed).as_deref(),
            Some("one\nTWO\nthree\n")
        );
    }

    /// pi's note that it cut a read is its last line; a file whose text
    /// merely mentions it (pi's own `read.ts`) is read whole.
    #[test]
    fn a_read_is_cut_only_when_its_last_line_says_so() {
        assert!(cut_by_host(
            "a\nb\n\n[Showing lines 1-2 of 9. Use offset=3 to continue.]"
        ));
        assert!(cut_by_host(
            "a\n\n[7 more lines in file. Use offset=2 to continue.]\n"
        ));
        assert!(cut_by_host(
            "a\n\n... (257 more lines not shown. Use offset=180 to continue reading)"
        ));
        assert!(cut_by_host(
            "a\n\n[Showing lines 1-2000 of 5210. Full output: /tmp/pi-bash-1.log]"
        ));
        let source = "outputText += `[${n} more lines in file. Use offset=${next} to continue.]`;\nreturn outputText;\n";
        assert!(!cut_by_host(source));
        let calls = vec![call("read", 0, 10, 0)];
        let fc = index(&calls);
        let docs = |_| Some((serde_json::json!({"path": "read.ts"}), source.to_string()));
        assert_eq!(
            text_from_calls(0, &calls, &fc, &docs).as_deref(),
            Some(source)
        );
    }

    #[test]
    fn an_edit_is_quoted_in_view_when_nine_in_ten_of_its_lines_are_there() {
        let view = serde_json::to_string(&serde_json::json!([
            {"role": "user", "content": "\tlet s = \"quoted\";\nanother line here"}
        ]))
        .unwrap();
        assert!(
            quoted_in_view(&["  let s = \"quoted\";"], &view, &[]),
            "escaped in the JSON"
        );
        assert!(
            quoted_in_view(&["short\nanother line here"], &view, &[]),
            "short lines do not count"
        );
        assert!(!quoted_in_view(
            &["another line here\nnot in the view at all"],
            &view,
            &[]
        ));
        assert!(quoted_in_view(&[""], &view, &[]), "nothing to quote");
        let copy = serde_json::to_string("another line here").unwrap();
        assert!(
            !quoted_in_view(&["another line here"], &view, &[copy]),
            "only in the copy"
        );
    }

    #[test]
    fn a_huge_edit_is_judged_on_a_sample() {
        let old: String = (0..10_000)
            .map(|i| format!("line number {i:05} here\n"))
            .collect();
        let view = serde_json::to_string(&serde_json::json!([{"content": old}])).unwrap();
        assert!(quoted_in_view(&[old.as_str()], &view, &[]));
        assert!(!quoted_in_view(&[old.as_str()], "[]", &[]));
    }
}
