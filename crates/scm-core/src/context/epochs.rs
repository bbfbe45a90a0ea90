//! The cache layout's collapse policy (docs/notes/layout-experiments.md §6.3):
//! collapse in **batched epochs**, not a sliding window. Between epochs the
//! context only grows at its end, so a provider's prefix cache serves all of
//! it; an epoch breaks the prefix once, by a lot.
//!
//! Sizes are **units** = ⌈chars / 4⌉ with chars in UTF-16 code units (what
//! JavaScript's `length` counts); the engine has no tokenizer. On the
//! measured sessions one unit ≈ 0.87 o200k tokens.

use serde::{Deserialize, Serialize};

/// Thresholds and switches of [`crate::context::Layout::Cache`].
/// The defaults are the measured recommendation ("REC").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CachePolicy {
    /// Run an epoch when the live collapsible content exceeds this (units).
    pub high: u32,
    /// At an epoch keep the newest tool calls that fit in this (units).
    pub low: u32,
    /// Results and edit/write bodies shorter than this (chars) never
    /// collapse: a ref would save too little.
    pub min_collapse_chars: u32,
    /// bash commands longer than this (chars) collapse like edit bodies.
    pub bash_collapse_chars: u32,
    /// Fold the chat into a summary when its skeleton (rendered − live
    /// content) exceeds this after an epoch (units); 0 = never.
    pub fold: u32,
    /// Length budget of the engine's extractive fold summary (chars).
    pub summary_chars: u32,
    /// Rewrite provider tool-call ids to the call's alias (`t12`). Turn off
    /// for APIs whose call ids carry server item ids (OpenAI Responses'
    /// `call_…|fc_…`; such ids are never rewritten anyway) or when something
    /// outside the model matches results to calls by the provider id.
    pub rewrite_call_ids: bool,
    /// Drop thinking of assistant messages older than the kept region at
    /// an epoch. Off by default (session 16): dropping it changes messages
    /// before the epoch's first collapse, so the provider's cache misses
    /// from there on; on both recorded sessions that costs more than the
    /// thinking saves, under every price model.
    pub drop_thinking: bool,
    /// A re-read identical to a still-live earlier read of the same file
    /// (same arguments, no edit/write in between) renders as a pointer.
    pub dedupe_reads: bool,
    /// Render a host compaction (pi's `compactionSummary`) as a fold at the
    /// host's cut. Off: the engine keeps the whole chat and folds on its own.
    pub honour_host_compaction: bool,
    /// Force an epoch when pending deactivations free more than this
    /// (units); 0 = wait for the next regular epoch.
    pub deactivate_epoch: u32,
    /// A file is *working* while one of the newest this many tool calls
    /// touched it (read, edit, write, activation); an epoch keeps its view
    /// (see [`super::working`]), or for a file being edited whose view does
    /// not fit, the bodies of its edits among these calls. 0 = no working
    /// files.
    pub working_calls: u32,
    /// A file the agent edited or wrote stays working while one of the
    /// newest this many tool calls did so (an edited file is quoted from
    /// again and again: a plan document, the module being refactored).
    pub working_edited_calls: u32,
    /// At an epoch keep the working files' views that fit in this (units),
    /// on top of `low`.
    pub working_units: u32,
    /// A file the agent is editing whose view cannot be kept whole (too
    /// big, or part of it collapsed) is shown once as its current version
    /// (a *working copy*, see [`super::working`]) while the live copies fit
    /// in this (units). 0 = no working copies.
    pub working_copy_units: u32,
    /// Once a session has made 20 reads and their median output is larger
    /// than this (units), `high`, `low`, `working_units` and
    /// `working_copy_units` grow in proportion, up to 2× (see
    /// [`crate::context::scale`]). 0 = never.
    pub scale_above: u32,
}

impl Default for CachePolicy {
    fn default() -> Self {
        Self {
            high: 10_000,
            low: 2_000,
            min_collapse_chars: 200,
            bash_collapse_chars: 300,
            fold: 4_000,
            summary_chars: 4_000,
            rewrite_call_ids: true,
            drop_thinking: false,
            dedupe_reads: true,
            honour_host_compaction: true,
            deactivate_epoch: 5_000,
            working_calls: 12,
            working_edited_calls: 32,
            working_units: 6_000,
            working_copy_units: 16_000,
            scale_above: 1_000,
        }
    }
}

/// ⌈chars / 4⌉
pub fn units(chars: u64) -> u64 {
    chars.div_ceil(4)
}

pub use crate::model::utf16_len;

/// Where a showing item's content came from (activate/pin results).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shown {
    /// The object shown.
    pub id: String,
    /// The exact version (the content is frozen at activation).
    #[serde(rename = "h")]
    pub object_hash: String,
    /// First line of the rendered block (alias, tool or path).
    #[serde(rename = "l")]
    pub head: String,
    /// True when the object was already live: a one-line note was shown.
    #[serde(rename = "n", default, skip_serializing_if = "is_false")]
    pub note: bool,
    /// A note's link metadata lines as they were at activation (shown after
    /// its content, memory-system-v0 §5.2; see `memory::links`).
    #[serde(rename = "k", default, skip_serializing_if = "Option::is_none")]
    pub links: Option<String>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Where a working copy is (see [`super::working`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CopyAt {
    /// In the chat, after an epoch: (epoch record index, copy index).
    Epoch(u32, u32),
    /// In the current fold's working area: (fold index, copy index). It
    /// stays until the next fold.
    Area(u32, u32),
}

/// What an identical re-read points at: an earlier call showing the same
/// text, or a working copy in view showing it (see
/// `cache_layout/dedupe.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dedupe {
    Call(u32),
    Copy(CopyAt),
}

/// One tool-call block (alias `t<index+1>`): what the policy needs to know.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallState {
    #[serde(rename = "k")]
    pub tool: String,
    /// Collapsible argument chars (edit old+new text, write content, bash command).
    #[serde(rename = "a", default)]
    pub arg_chars: u64,
    /// Rendered result chars (0 without a result).
    #[serde(rename = "r", default)]
    pub result_chars: u64,
    #[serde(rename = "x", default, skip_serializing_if = "is_false")]
    pub has_result: bool,
    #[serde(rename = "e", default, skip_serializing_if = "is_false")]
    pub is_error: bool,
    /// The file a read/write/edit names (file alias index).
    #[serde(rename = "f", default, skip_serializing_if = "Option::is_none")]
    pub file: Option<u32>,
    /// Epoch (1-based) at which the result collapsed to a ref. Permanent.
    #[serde(rename = "c", default, skip_serializing_if = "Option::is_none")]
    pub collapsed: Option<u32>,
    /// Epoch at which the collapsible arguments collapsed. Permanent.
    #[serde(rename = "ac", default, skip_serializing_if = "Option::is_none")]
    pub args_collapsed: Option<u32>,
    /// Identical re-read of this earlier call (see [`ToolCallState::dedupe`]).
    #[serde(rename = "d", default, skip_serializing_if = "Option::is_none")]
    pub dedupe_of: Option<u32>,
    /// Identical re-read of a working copy in view (a read of a file whose
    /// copy shows the same text; see [`ToolCallState::copy_dedupe`]).
    #[serde(rename = "dc", default, skip_serializing_if = "Option::is_none")]
    pub dedupe_copy: Option<CopyAt>,
    /// Epoch (1-based) from which `dedupe_of` (or `dedupe_copy`) no longer
    /// holds: the fold that came with it folded the original away, or the
    /// copy went, so the call shows its text.
    #[serde(rename = "dv", default, skip_serializing_if = "Option::is_none")]
    pub dedupe_void: Option<u32>,
    /// An activation that found its target live points at the call showing
    /// it: keeping this call keeps that one (the note stays true).
    #[serde(rename = "n", default, skip_serializing_if = "Option::is_none")]
    pub points_to: Option<u32>,
    /// A read with offset/limit (shows part of the file).
    #[serde(rename = "g", default, skip_serializing_if = "is_false")]
    pub ranged: bool,
    /// A ranged read that prints every line of the file numbered (`cat -n
    /// F`, `nl -ba F`): the whole file for the model, not its text.
    #[serde(rename = "nb", default, skip_serializing_if = "is_false")]
    pub numbered: bool,
    /// activate/pin results: what they show instead of the op's message.
    #[serde(rename = "s", default, skip_serializing_if = "Vec::is_empty")]
    pub shows: Vec<Shown>,
    /// A successful edit whose `oldText` shows as a ref from its first
    /// showing: the text it replaced is gone from the file
    /// ([`crate::context::tool_args::replaced_text_gone`]). Decided when the
    /// result arrives, before the call was ever rendered. Permanent.
    #[serde(rename = "or", default, skip_serializing_if = "is_false")]
    pub old_ref: bool,
}

impl ToolCallState {
    /// The earlier call this identical re-read points at, while it does.
    pub fn dedupe(&self) -> Option<u32> {
        self.dedupe_of.filter(|_| self.dedupe_void.is_none())
    }

    /// An activation or pin that found its target shown and answered only
    /// "[f3 is shown above]" (it names a call, `points_to`, or a copy).
    pub fn is_note(&self) -> bool {
        !self.shows.is_empty() && self.shows.iter().all(|s| s.note)
    }

    /// [`ToolCallState::dedupe`] as it was with `epochs` epochs done.
    pub fn dedupe_at(&self, epochs: u32) -> Option<u32> {
        self.dedupe_of
            .filter(|_| self.dedupe_void.is_none_or(|e| e > epochs))
    }

    /// The working copy this identical re-read points at, while it does
    /// (the copy is in view: when it goes, the pointer is voided).
    pub fn copy_dedupe(&self) -> Option<CopyAt> {
        self.dedupe_copy.filter(|_| self.dedupe_void.is_none())
    }

    /// [`ToolCallState::copy_dedupe`] as it was with `epochs` epochs done.
    pub fn copy_dedupe_at(&self, epochs: u32) -> Option<CopyAt> {
        self.dedupe_copy
            .filter(|_| self.dedupe_void.is_none_or(|e| e > epochs))
    }

    /// An identical re-read pointing at a call or a copy: it shows nothing
    /// itself.
    pub fn is_dedupe(&self) -> bool {
        self.dedupe().is_some() || self.copy_dedupe().is_some()
    }

    /// [`ToolCallState::is_dedupe`] as it was with `epochs` epochs done.
    pub fn is_dedupe_at(&self, epochs: u32) -> bool {
        self.dedupe_at(epochs).is_some() || self.copy_dedupe_at(epochs).is_some()
    }

    pub fn result_collapsible(&self, p: &CachePolicy) -> bool {
        self.has_result && self.result_chars >= u64::from(p.min_collapse_chars)
    }

    pub fn args_collapsible(&self, p: &CachePolicy) -> bool {
        match self.tool.as_str() {
            "edit" | "write" => self.arg_chars >= u64::from(p.min_collapse_chars),
            "bash" => self.arg_chars > u64::from(p.bash_collapse_chars),
            _ => false,
        }
    }

    /// Whether the result shows its content at `epochs` epochs done.
    pub fn result_live_at(&self, epochs: u32) -> bool {
        self.collapsed.is_none_or(|e| e > epochs)
    }

    pub fn args_live_at(&self, epochs: u32) -> bool {
        self.args_collapsed.is_none_or(|e| e > epochs)
    }

    /// Live collapsible units now (what an epoch could free).
    pub fn live_units(&self, p: &CachePolicy) -> u64 {
        let mut n = 0;
        if self.result_collapsible(p) && self.collapsed.is_none() && !self.is_dedupe() {
            n += units(self.result_chars);
        }
        if self.args_collapsible(p) && self.args_collapsed.is_none() {
            n += units(self.arg_chars);
        }
        n
    }

    /// Whether [`ToolCallState::live_units`] is 0 for good: the result arrived
    /// and what could collapse has (nothing un-collapses a call).
    pub fn settled(&self, p: &CachePolicy) -> bool {
        self.has_result
            && (self.collapsed.is_some() || self.is_dedupe() || !self.result_collapsible(p))
            && (self.args_collapsed.is_some() || !self.args_collapsible(p))
    }

    /// Whether an epoch could still collapse something of this call: its
    /// result may yet arrive, or its result or arguments are collapsible and
    /// not collapsed. Once false, false for good.
    pub fn open(&self, p: &CachePolicy) -> bool {
        !self.has_result
            || (self.result_collapsible(p) && self.collapsed.is_none())
            || (self.args_collapsible(p) && self.args_collapsed.is_none())
    }

    /// Size used to fill the kept region (collapsed or not).
    fn keep_units(&self, p: &CachePolicy) -> u64 {
        units(self.result_chars)
            + if self.args_collapsible(p) {
                units(self.arg_chars)
            } else {
                0
            }
    }
}

/// Live units of all calls, pinned ones excluded.
pub fn live_units(calls: &[ToolCallState], p: &CachePolicy, pinned: impl Fn(usize) -> bool) -> u64 {
    calls
        .iter()
        .enumerate()
        .filter(|(i, _)| !pinned(*i))
        .map(|(_, c)| c.live_units(p))
        .sum()
}

/// The kept region of an epoch: the newest calls whose sizes fit in `low`
/// (the newest always), minus `excluded` (deactivated), plus the originals
/// of kept identical re-reads and the targets of kept "shown above" notes.
/// Sorted ascending.
pub fn kept_calls(
    calls: &[ToolCallState],
    p: &CachePolicy,
    excluded: impl Fn(usize) -> bool,
) -> Vec<usize> {
    let mut kept = Vec::new();
    let mut budget = 0u64;
    for i in (0..calls.len()).rev() {
        if excluded(i) {
            continue;
        }
        let size = calls[i].keep_units(p);
        if !kept.is_empty() && budget + size > u64::from(p.low) {
            break;
        }
        budget += size;
        kept.push(i);
    }
    with_originals(calls, &mut kept, excluded);
    kept
}

/// Adds to `kept` what its pointers name (the originals of identical
/// re-reads, the targets of "shown above" notes) and sorts it: a kept
/// pointer keeps what it names. A deactivated (`excluded`) original goes
/// even when a kept pointer names it.
pub fn with_originals(
    calls: &[ToolCallState],
    kept: &mut Vec<usize>,
    excluded: impl Fn(usize) -> bool,
) {
    let originals: Vec<usize> = kept
        .iter()
        .flat_map(|&i| [calls[i].dedupe(), calls[i].points_to])
        .flatten()
        .map(|d| d as usize)
        .filter(|&d| !excluded(d))
        .collect();
    kept.extend(originals);
    kept.sort_unstable();
    kept.dedup();
}

/// Collapses every call among `candidates` (ascending call indices: at
/// least every call [`ToolCallState::open`]) outside `kept` that is not pinned,
/// stamped with `epoch`. Returns the calls whose result or arguments
/// collapsed.
pub fn collapse_all_but(
    calls: &mut [ToolCallState],
    candidates: &[u32],
    kept: &[usize],
    p: &CachePolicy,
    epoch: u32,
    pinned: impl Fn(usize) -> bool,
) -> Vec<u32> {
    let mut changed = Vec::new();
    for &c in candidates {
        let i = c as usize;
        let Some(st) = calls.get_mut(i) else { continue };
        if kept.binary_search(&i).is_ok() || pinned(i) {
            continue;
        }
        let mut hit = false;
        if st.result_collapsible(p) && st.collapsed.is_none() {
            st.collapsed = Some(epoch);
            hit = true;
        }
        if st.args_collapsible(p) && st.args_collapsed.is_none() {
            st.args_collapsed = Some(epoch);
            hit = true;
        }
        if hit {
            changed.push(c);
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(tool: &str, result: u64, args: u64) -> ToolCallState {
        ToolCallState {
            tool: tool.into(),
            result_chars: result,
            has_result: true,
            arg_chars: args,
            ..Default::default()
        }
    }

    #[test]
    fn sizes_follow_the_rules() {
        let p = CachePolicy::default();
        assert_eq!(
            call("read", 199, 0).live_units(&p),
            0,
            "short results never collapse"
        );
        assert_eq!(call("read", 201, 0).live_units(&p), 51);
        assert_eq!(call("edit", 10, 200).live_units(&p), 50);
        assert_eq!(
            call("bash", 10, 300).live_units(&p),
            0,
            "bash only over 300"
        );
        assert_eq!(call("bash", 10, 301).live_units(&p), 76);
        assert_eq!(utf16_len("a😀"), 3);
        assert_eq!(units(utf16_len("a😀")), 1);
    }

    #[test]
    fn an_epoch_keeps_the_newest_that_fit_plus_dedupe_originals() {
        let p = CachePolicy {
            low: 100,
            ..Default::default()
        };
        let mut calls = vec![
            call("read", 4000, 0),
            call("read", 400, 0),
            call("bash", 200, 0),
            call("read", 200, 0),
        ];
        calls[3].dedupe_of = Some(0);
        let kept = kept_calls(&calls, &p, |_| false);
        assert_eq!(
            kept,
            vec![0, 2, 3],
            "50 + 50 fit, 100 more does not; 0 is 3's original"
        );
        let all: Vec<u32> = (0..calls.len() as u32).collect();
        let changed = collapse_all_but(&mut calls, &all, &kept, &p, 1, |_| false);
        assert_eq!(changed, [1]);
        assert_eq!(calls[1].collapsed, Some(1));
        // The newest is kept even when it alone is over budget; excluded calls are skipped.
        let big = vec![call("read", 40_000, 0), call("read", 40_000, 0)];
        assert_eq!(kept_calls(&big, &p, |_| false), vec![1]);
        assert_eq!(kept_calls(&big, &p, |i| i == 1), vec![0]);
    }
}
