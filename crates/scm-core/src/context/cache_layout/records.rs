//! What the cache layout decided, as persisted in the chat object
//! (`layout`): per-call state, files, epochs and folds. Field names are
//! short on purpose (stored JSON; hash vectors and old chats rely on them).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::context::epochs::CallState;

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
    /// The item the file-pool delta follows.
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
    /// From a host compaction (pi's summary) rather than the engine.
    #[serde(rename = "h", default, skip_serializing_if = "std::ops::Not::not")]
    pub host: bool,
}

/// Everything the cache layout decided, persisted in the chat object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheState {
    /// Per tool-call block, parallel to `Aliases::t`.
    #[serde(default)]
    pub calls: Vec<CallState>,
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
}
