//! Indexing protocol (SSOT §5.5, implementation-plan §4): files → versioned
//! file objects. Unchanged `file_hash` → one lookup, zero writes.

use std::sync::Arc;

use crate::error::Result;
use crate::fs::resolver::{ResolvedPath, Resolver};
use crate::store::{Document, Store, TxReceipt};

/// What indexing did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexAction {
    Created,
    Updated,
    Unchanged,
}

impl IndexAction {
    pub fn as_str(self) -> &'static str {
        match self {
            IndexAction::Created => "created",
            IndexAction::Updated => "updated",
            IndexAction::Unchanged => "unchanged",
        }
    }
}

#[derive(Debug, Clone)]
pub struct IndexResult {
    pub object_id: String,
    pub action: IndexAction,
    /// The latest document after indexing (the stored one when unchanged).
    pub doc: Document,
    /// Receipt of the write; None when nothing was written.
    pub receipt: Option<TxReceipt>,
}

/// Limits and knobs.
#[derive(Debug, Clone)]
pub struct IndexerOptions {
    /// Files larger than this become metadata-only (`content_omitted: too_large`).
    pub max_content_bytes: u64,
}

impl Default for IndexerOptions {
    fn default() -> Self {
        Self {
            max_content_bytes: 1024 * 1024,
        }
    }
}

pub struct Indexer {
    pub store: Arc<dyn Store>,
    pub resolver: Arc<Resolver>,
    pub options: IndexerOptions,
}

impl Indexer {
    pub fn new(store: Arc<dyn Store>, resolver: Arc<Resolver>, options: IndexerOptions) -> Self {
        Self {
            store,
            resolver,
            options,
        }
    }

    /// Read the file at `agent_path` and index it (created / updated / unchanged).
    /// Unreadable, vanished or special files → coded error, nothing written.
    pub async fn index_file(&self, agent_path: &str) -> Result<IndexResult> {
        let _ = agent_path;
        todo!("fs helper")
    }

    /// Same for an already resolved path.
    pub async fn index_resolved(&self, resolved: &ResolvedPath) -> Result<IndexResult> {
        let _ = resolved;
        todo!("fs helper")
    }

    /// Discovery: a stub (null content and hashes) unless the object exists,
    /// which is never overwritten. Batched: one lookup and at most one write.
    pub async fn discover_files(&self, agent_paths: &[String]) -> Result<Vec<IndexResult>> {
        let _ = agent_paths;
        todo!("fs helper")
    }

    /// Confirmed deletion: a new version with null content and hashes.
    pub async fn index_file_deletion(&self, resolved: &ResolvedPath) -> Result<IndexResult> {
        let _ = resolved;
        todo!("fs helper")
    }
}
