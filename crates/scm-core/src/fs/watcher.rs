//! Trackers for filesystem sources (notify, replacing chokidar): one
//! non-recursive watch per parent directory of tracked files, debounced;
//! change → index, delete → deletion version, rename → deletion + new object.
//! Watchers never touch session sets: they report what they wrote.

use std::sync::Arc;

use crate::fs::indexer::Indexer;
use crate::fs::resolver::ResolvedPath;
use crate::store::Document;

/// What a tracker wrote.
#[derive(Debug, Clone)]
pub enum WatchEvent {
    /// A new version (content changed, or the file reappeared).
    Updated { object_id: String, doc: Document },
    /// A deletion version was written.
    Deleted { object_id: String, doc: Document },
    /// Rename: a deletion at `from` and a new object at `to`, linked.
    Renamed {
        from_id: String,
        to_id: String,
        to_doc: Document,
    },
    /// A non-fatal problem (never crashes the host).
    Error { message: String },
}

/// Receives tracker events (called from the watcher's thread; must not block).
pub type WatchCallback = Arc<dyn Fn(WatchEvent) + Send + Sync>;

pub struct Watcher {
    _private: (),
}

impl Watcher {
    /// Start a watcher that indexes through `indexer` on `runtime`.
    pub fn new(
        indexer: Arc<Indexer>,
        runtime: tokio::runtime::Handle,
        callback: WatchCallback,
    ) -> crate::Result<Self> {
        let _ = (indexer, runtime, callback);
        todo!("fs helper")
    }

    /// Track a file (no-op if not watchable or already tracked).
    pub fn track(&self, resolved: &ResolvedPath) -> crate::Result<()> {
        let _ = resolved;
        todo!("fs helper")
    }

    /// Stop everything; idempotent. After it returns no callback runs.
    pub fn close(&self) {
        todo!("fs helper")
    }
}
