//! **Working files** of the cache layout (issue 10, "what the model sees
//! must be right"): the files the agent is working on keep their visible
//! state through epochs, and output never collapses before the model has
//! seen it once.
//!
//! A file is *working* while one of the newest [`CachePolicy::working_calls`]
//! tool calls read, edited or wrote it, or showed it (activate/pin). Its
//! *view* is what the model needs to quote it exactly: walking back from
//! its newest call, every edit and write body and every read or activation
//! result, up to and including the first write, whole-file read or
//! activation (each of those shows the whole file). An epoch keeps the
//! views of the working files, newest-touched first, while they fit in
//! [`CachePolicy::working_units`]; a file whose view does not fit is not
//! kept at all (half a view cannot be quoted from).
//!
//! Why views kept in place rather than a copy of the current version at the
//! epoch: the calls stay where they were, so the kept ones before the first
//! collapse stay in the cached prefix, ranged reads stay ranged (the median
//! read before an edit is 1.3k chars, the file several times that), and
//! nothing is shown twice. Measured with the edit-anchor instrument in
//! docs/benchmarks.md ("Context sufficiency").

use std::collections::HashMap;

use super::epochs::{units, CachePolicy, CallState};

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
fn touched(c: &CallState, shows_files: &dyn Fn(&CallState) -> Vec<u32>) -> Vec<u32> {
    let mut out: Vec<u32> = c.file.into_iter().collect();
    out.extend(shows_files(c));
    out
}

/// Units a kept call costs in view.
fn view_units(c: &CallState, p: &CachePolicy) -> u64 {
    let mut n = 0;
    if c.result_collapsible(p) && c.dedupe_of.is_none() {
        n += units(c.result_chars);
    }
    if c.args_collapsible(p) {
        n += units(c.arg_chars);
    }
    n
}

/// One file's view, newest call first, or `None` when part of it has
/// collapsed already (nothing un-collapses: the view cannot be whole).
fn view_of(file: u32, calls: &[CallState], fc: &FileCalls) -> Option<Vec<u32>> {
    let mut view = Vec::new();
    for &k in fc.of(file).iter().rev() {
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
                return Some(view);
            }
            "read" => {
                if c.collapsed.is_some() {
                    return None;
                }
                view.push(k);
                if !c.ranged {
                    return Some(view);
                }
            }
            _ if !c.shows.is_empty() => {
                if c.collapsed.is_some() {
                    return None;
                }
                view.push(k);
                return Some(view);
            }
            _ => {}
        }
    }
    // Reached the file's first call: only ranged reads and edits (a file the
    // agent never saw whole). Keep what there is.
    (!view.is_empty()).then_some(view)
}

/// Files whose views the last epoch kept (`prev`) come first: a view kept
/// once stays in the cached prefix, and dropping it for a newer file would
/// collapse what the model may still quote.
pub fn working_calls(
    calls: &[CallState],
    fc: &FileCalls,
    p: &CachePolicy,
    shows_files: &dyn Fn(&CallState) -> Vec<u32>,
    prev: &[u32],
) -> Vec<usize> {
    if p.working_calls == 0 || p.working_units == 0 {
        return Vec::new();
    }
    // Working files, newest touch first: any touch in the newest
    // `working_calls`, an edit or write in the newest `working_edited_calls`.
    let n = calls.len();
    let reach = p.working_calls.max(p.working_edited_calls) as usize;
    let mut files: Vec<u32> = Vec::new();
    for (i, c) in calls.iter().enumerate().skip(n.saturating_sub(reach)).rev() {
        if c.is_error {
            continue;
        }
        let recent = n - i <= p.working_calls as usize;
        let edited =
            matches!(c.tool.as_str(), "edit" | "write") && n - i <= p.working_edited_calls as usize;
        if !recent && !edited {
            continue;
        }
        for f in touched(c, shows_files) {
            if !files.contains(&f) {
                files.push(f);
            }
        }
    }
    let was_kept = |f: &u32| {
        prev.iter()
            .any(|&k| touched(&calls[k as usize], shows_files).contains(f))
    };
    let (mut first, rest): (Vec<u32>, Vec<u32>) = files.into_iter().partition(was_kept);
    first.extend(rest);
    let mut kept = Vec::new();
    let mut budget = 0u64;
    for f in first {
        let Some(view) = view_of(f, calls, fc) else {
            continue;
        };
        let size: u64 = view
            .iter()
            .map(|&k| view_units(&calls[k as usize], p))
            .sum();
        if budget + size > u64::from(p.working_units) {
            continue;
        }
        budget += size;
        kept.extend(view.into_iter().map(|k| k as usize));
    }
    kept.sort_unstable();
    kept.dedup();
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(tool: &str, file: u32, result: u64, args: u64) -> CallState {
        CallState {
            tool: tool.into(),
            file: Some(file),
            result_chars: result,
            has_result: true,
            arg_chars: args,
            ..Default::default()
        }
    }

    fn index(calls: &[CallState]) -> FileCalls {
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
        assert!(
            kept.is_empty(),
            "f1's read collapsed; f2's 1000 units exceed 500"
        );
    }
}
