//! What the cache layout decided, as persisted in the chat object
//! (`layout`): per-call state, files, epochs and folds. Field names are
//! short on purpose (stored JSON; hash vectors and old chats rely on them).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::context::epochs::ToolCallState;

/// A file alias's listing facts (`f<index+1>`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    #[serde(rename = "p")]
    pub path: String,
    /// Size as the tool calls showed it (a cached file object's
    /// `char_count` wins when listing).
    #[serde(rename = "c", default)]
    pub chars: u64,
}

/// One epoch (numbered from 1 by position).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EpochRecord {
    /// The model call that ran it.
    #[serde(rename = "k")]
    pub call: u32,
    /// Assistant items before this index render without thinking (running max).
    #[serde(rename = "t")]
    pub thinking_before: u32,
    /// The item the `FILES +k` list follows.
    #[serde(rename = "a")]
    pub anchor: u32,
    #[serde(rename = "d", default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<String>,
    /// Calls kept for the working files (see [`super::working`]); until the
    /// next epoch their live units do not trigger one.
    #[serde(rename = "w", default, skip_serializing_if = "Vec::is_empty")]
    pub working: Vec<u32>,
    /// Not an epoch: a record that collapses nothing, only appends its text
    /// (in `delta`): `CHANGED` notices, or a `FILES` list due when an epoch
    /// had nothing to collapse yet.
    #[serde(rename = "n", default, skip_serializing_if = "std::ops::Not::not")]
    pub notice: bool,
    /// Working copies this record shows after its delta (see
    /// [`crate::context::working`]).
    #[serde(rename = "cp", default, skip_serializing_if = "Vec::is_empty")]
    pub copies: Vec<WorkingCopy>,
    /// The item the copies precede, when not the one after `anchor`: the
    /// first item this epoch rewrote, so a copy sits ahead of the output
    /// kept for recency (which the next epoch collapses) and stays in the
    /// cached prefix after it; after a fold, the fold's cut (right after
    /// its block).
    #[serde(rename = "cb", default, skip_serializing_if = "Option::is_none")]
    pub copy_before: Option<u32>,
}

impl EpochRecord {
    /// The item its working copies precede.
    pub fn copies_before(&self) -> u32 {
        self.copy_before.unwrap_or(self.anchor + 1)
    }
}

/// The current version of a file the agent is editing, shown once after an
/// epoch's delta because the file's view could not be kept whole. The
/// file's calls after it (`after` on) are the rest of its view.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkingCopy {
    /// The file (alias index).
    #[serde(rename = "f")]
    pub file: u32,
    /// Tool calls that existed when it was made: calls from this index on
    /// came after it.
    #[serde(rename = "c")]
    pub after: u32,
    /// The message text as shown (kept verbatim: reconstruction renders it
    /// as the call saw it).
    #[serde(rename = "s")]
    pub text: String,
    /// Its one-line ref once collapsed.
    #[serde(rename = "r")]
    pub ref_text: String,
    /// Epoch (1-based) from which it renders as `ref_text`. Permanent.
    #[serde(rename = "x", default, skip_serializing_if = "Option::is_none")]
    pub collapsed: Option<u32>,
}

impl WorkingCopy {
    /// Shown whole at a call that had done `epochs` epochs.
    pub fn live_at(&self, epochs: u32) -> bool {
        self.collapsed.is_none_or(|x| x > epochs)
    }

    /// The file's text it shows: `text` after the head line
    /// [`crate::context::words::working_copy`] puts first.
    pub fn body(&self) -> &str {
        self.text.split_once('\n').map_or("", |(_, t)| t)
    }
}

/// A fold: items before `cut` are replaced by `text`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FoldRecord {
    /// The epoch it came with (visible from that epoch on).
    #[serde(rename = "e")]
    pub epoch: u32,
    #[serde(rename = "c")]
    pub cut: u32,
    /// The current turn's user item, repeated after the summary.
    #[serde(rename = "u", default, skip_serializing_if = "Option::is_none")]
    pub user: Option<u32>,
    #[serde(rename = "s")]
    pub text: String,
    /// `PINNED` block: pinned content whose place was folded.
    #[serde(rename = "p", default, skip_serializing_if = "Option::is_none")]
    pub pinned: Option<String>,
    /// The calls that block shows (ascending): what is in view there.
    #[serde(rename = "b", default, skip_serializing_if = "Vec::is_empty")]
    pub block: Vec<u32>,
    /// From a host compaction (pi's summary) rather than the engine.
    #[serde(rename = "h", default, skip_serializing_if = "std::ops::Not::not")]
    pub host: bool,
    /// The working area: working copies shown after the header, before the
    /// summary, for as long as this fold is the current one. The next fold
    /// carries the ones still wanted over verbatim (in order), so they stay
    /// in the cached prefix across folds.
    #[serde(rename = "w", default, skip_serializing_if = "Vec::is_empty")]
    pub copies: Vec<WorkingCopy>,
    /// The `PINNED` block comes before the summary (folds since session
    /// 16): a block entry the next fold keeps (a plan document pinned or
    /// worked on) then stays in the cached prefix while the summary
    /// changes. Older folds render as they were sent, summary first.
    #[serde(rename = "bf", default, skip_serializing_if = "std::ops::Not::not")]
    pub block_first: bool,
}

/// Everything the cache layout decided, persisted in the chat object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheState {
    /// Per tool-call block, parallel to `Aliases::t`.
    #[serde(default)]
    pub calls: Vec<ToolCallState>,
    /// Per file, parallel to `Aliases::f`.
    #[serde(default)]
    pub files: Vec<FileEntry>,
    #[serde(default)]
    pub epochs: Vec<EpochRecord>,
    #[serde(default)]
    pub folds: Vec<FoldRecord>,
    /// Files listed by deltas so far.
    #[serde(default)]
    pub files_listed: u32,
    /// Calls to collapse at the next epoch (deactivated).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deactivated: Vec<u32>,
    /// Per file object id, the `object_hash` of the version the model last
    /// saw (change notices; persisted so a resume still notices a change
    /// made while no session ran).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub seen: BTreeMap<String, String>,
    /// Files (alias indices) the agent has edited from memory — an edit
    /// quoted text that was not in its view, or failed — with how many of
    /// its edits did since the last one that quoted text shown outside its
    /// copies. While that count is above 0 the file gets new working copies
    /// (see [`crate::context::working`]); at 0 (the agent read before it
    /// edited again) it gets none, but stays a file the agent comes back to
    /// from memory: it keeps its view and copy as long as one edited from
    /// memory.
    #[serde(rename = "recall", default, skip_serializing_if = "BTreeMap::is_empty")]
    pub recall: BTreeMap<u32, u32>,
    /// Per object id, the `object_hash` of the version each `activate`/`pin`
    /// since the last call ran on, in order: its result shows that version,
    /// though a later tool of the same assistant message (parallel calls)
    /// changed the object since. Persisted: a restart may fall between the
    /// tools and the next call.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub op_shows: BTreeMap<String, Vec<String>>,
    /// Per file object id, the `object_hash` of the version each whole
    /// `read` since the last call indexed, in order: its result shows that
    /// version, though the file may have changed before the next call.
    /// Persisted: a restart may fall between the read and that call.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub read_shows: BTreeMap<String, Vec<String>>,
    /// Per file object id, for each of the model's edits since the last call
    /// (of a file it had seen), in order: the `object_hash` of the version
    /// the edit was applied to and of the one it made. Persisted: a restart
    /// may fall between the edits and their results (two edits of one file
    /// in one message, the second already in the file when the first's
    /// result arrives).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub edit_shows: BTreeMap<String, Vec<(String, String)>>,
}

#[cfg(test)]
mod tests {
    use super::FoldRecord;

    /// A fold stored before session 16 has no `bf`: it renders as it was
    /// sent (summary, then block), so reconstruction and the cached prefix
    /// of a resumed session do not change under an upgrade.
    #[test]
    fn a_fold_stored_before_the_block_moved_first_keeps_its_order() {
        let old: FoldRecord = serde_json::from_str(
            r#"{"e":3,"c":40,"s":"summary","p":"PINNED\n--- t1 read ---\nx"}"#,
        )
        .unwrap();
        assert!(!old.block_first);
        let new = FoldRecord {
            block_first: true,
            ..old
        };
        let json = serde_json::to_value(&new).unwrap();
        assert_eq!(json["bf"], true);
        let back: FoldRecord = serde_json::from_value(json).unwrap();
        assert!(back.block_first);
    }
}
