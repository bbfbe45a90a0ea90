//! The store: one trait, two backends (embedded SQLite, XTDB v1 over HTTP),
//! one conformance suite (`conformance`) that both must pass.
//!
//! Documents are JSON objects whose id key is literally `"xt/id"` (XTDB's
//! convention, kept for the embedded store so documents are portable).

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::error::Result;

pub mod conformance;
pub mod embedded;
pub mod search;
/// Transaction times as text (the model's: a pure format both stores write).
pub use crate::model::time;
pub mod xtdb;

pub use crate::model::{Document, ID_KEY};

/// One operation inside an atomic transaction.
#[derive(Debug, Clone, PartialEq)]
pub enum TxOp {
    /// Write a new version of the document (its `"xt/id"` names the object).
    Put(Document),
    /// Compare-and-set guard: the transaction commits only if the latest
    /// version of `id` equals `expected` exactly (`None` = must not exist).
    /// Mirrors XTDB's `match`.
    Match {
        id: String,
        expected: Option<Document>,
    },
}

/// What a committed (or aborted) transaction returns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxReceipt {
    /// Monotonic transaction id: the only reliable way to address a version.
    pub tx_id: i64,
    /// RFC 3339 transaction time (XTDB's JSON API truncates it to seconds).
    pub tx_time: String,
    /// False when a `Match` failed and the whole transaction was aborted.
    pub committed: bool,
}

/// One version in an object's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Version {
    pub tx_id: i64,
    pub tx_time: String,
    /// `None` for an XTDB `delete` (never written by this project: deletions are
    /// new versions with null content, history is never erased).
    pub doc: Option<Document>,
}

/// Store-wide counts (the command-line tool's `stats`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreCounts {
    /// Distinct object ids with at least one version.
    pub objects: u64,
    /// Versions of all objects together (committed puts).
    pub versions: u64,
    /// Size of the store's files in bytes, where the backend reports it.
    pub bytes: Option<u64>,
}

/// Which point in transaction time to read at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AsOf<'a> {
    TxId(i64),
    /// RFC 3339 time; versions written at or before it are visible.
    TxTime(&'a str),
}

/// The store contract. Every method is read-your-writes: once `submit`
/// returns, every later read (from any client of the same database) sees it.
#[async_trait]
pub trait Store: Send + Sync {
    /// Short name for diagnostics: "embedded" or "xtdb".
    fn kind(&self) -> &'static str;

    /// Apply `ops` atomically and wait until they are visible to reads.
    /// A failed `Match` aborts everything and returns `committed: false`.
    async fn submit(&self, ops: Vec<TxOp>) -> Result<TxReceipt>;

    /// Latest version, or `None` if the object was never written.
    async fn get(&self, id: &str) -> Result<Option<Document>>;

    /// Latest versions of many objects in one round trip; missing ids are absent.
    async fn get_many(&self, ids: &[String]) -> Result<Vec<Document>>;

    /// The version visible at `as_of`.
    async fn get_as_of(&self, id: &str, as_of: AsOf<'_>) -> Result<Option<Document>>;

    /// Every version, oldest first.
    async fn history(&self, id: &str) -> Result<Vec<Version>>;

    /// The newest transaction id visible to reads (None for an empty store).
    /// Used as the basis of static references: a version read after this call
    /// is addressable as of this tx id.
    async fn latest_tx_id(&self) -> Result<Option<i64>>;

    /// Ids of the objects whose latest version has `"type": ty`, sorted.
    /// Lists sessions (`"session"`) without knowing their ids.
    async fn ids_of_type(&self, ty: &str) -> Result<Vec<String>>;

    /// Objects, versions and size of the whole store. Reads everything's
    /// history on backends without a count (XTDB): slow on large stores.
    async fn counts(&self) -> Result<StoreCounts>;

    /// Full-text search over the latest version of every content object
    /// (see [`crate::store::search`]; call it through
    /// `memory::search`, which prepares the query). Stores that do not index
    /// say so.
    async fn search(
        &self,
        query: &crate::store::search::SearchQuery,
    ) -> Result<Vec<crate::store::search::SearchHit>> {
        let _ = query;
        Err(crate::Error::InvalidArgument(format!(
            "search: the {} store does not support search",
            self.kind()
        )))
    }

    /// Every object id in the store, sorted (export of the whole store).
    async fn all_ids(&self) -> Result<Vec<String>> {
        Err(crate::Error::InvalidArgument(format!(
            "all_ids: the {} store does not list its objects",
            self.kind()
        )))
    }

    /// Ids of the objects whose latest version links to `id` (its
    /// `link_ids` holds it: notes, see [`crate::memory::notes`]), sorted.
    /// A query over the documents, not a second copy to keep in sync.
    async fn backlinks(&self, id: &str) -> Result<Vec<String>> {
        let _ = id;
        Err(crate::Error::InvalidArgument(format!(
            "backlinks: the {} store does not support backlinks",
            self.kind()
        )))
    }

    /// Number of transactions this client has submitted (committed or not).
    /// Lets tests assert "zero writes" without racing other writers.
    fn submitted_tx_count(&self) -> u64;
}

/// Convenience wrappers shared by every backend.
impl dyn Store {
    /// Put one document and wait for it.
    pub async fn put(&self, doc: Document) -> Result<TxReceipt> {
        self.submit(vec![TxOp::Put(doc)]).await
    }
}
