//! Static references (memory-system-v0 §7.2): for every assembled context,
//! which version of every shown object it used, so any past model call can be
//! rebuilt exactly from the store.
//!
//! A record is compact (it lives in the chat object, one per call): the
//! metadata pool is append-only, so the pool shown is a prefix of the
//! session's `metadata_pool` (`pool_len`) and the active objects are pool
//! positions. `versions` holds only the shown versions that changed since the
//! previous record (a delta); the version of an object at call *n* is the
//! last entry for it in records `0..=n`. `tx_id: None` means "the record's own
//! `basis_tx`" — the transaction that wrote the record, at which the version
//! was current.

use serde::{Deserialize, Serialize};

/// One shown version: addressable by `tx_id`, verifiable by the hashes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionRef {
    pub id: String,
    #[serde(default)]
    pub tx_id: Option<i64>,
    pub object_hash: String,
    #[serde(default)]
    pub content_hash: Option<String>,
}

/// What one `transform_context` call showed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelCallRecord {
    pub call_index: usize,
    /// Harness messages consumed after this call (the cursor).
    pub messages_consumed: usize,
    /// Chat messages rendered (verification).
    pub chat_messages: usize,
    /// The shown pool is `metadata_pool[..pool_len]`.
    pub pool_len: usize,
    /// Active objects as `metadata_pool` positions, in activation order.
    pub active: Vec<usize>,
    /// Shown versions that changed since the previous record (pool objects
    /// and the system prompt).
    pub versions: Vec<VersionRef>,
    /// The transaction that wrote this record (None until its flush lands).
    #[serde(default)]
    pub basis_tx: Option<i64>,
    /// Cache layout: epochs done at this call (`chat_messages` then counts
    /// its chat items). None for the spec layout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epochs: Option<u32>,
    /// Estimated tokens of the context sent (the session report's estimate,
    /// [`crate::context::output::context_tokens`]), so listing sessions needs
    /// no rebuild. None in records written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// Messages the model was sent (the harness's system prompt counted),
    /// and the estimated tokens of their leading part equal to the previous
    /// call's — the rest of what listing calls shows, so it needs no
    /// rebuild. None where the session did not see both calls' outputs (the
    /// first call after a resume, a whole hand-over) or in records written
    /// before they were kept: the tools rebuild those calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
}

/// A shown object with its exact version (the expanded form of a record).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShownRef {
    pub id: String,
    pub tx_id: Option<i64>,
    pub object_hash: String,
    pub content_hash: Option<String>,
}
