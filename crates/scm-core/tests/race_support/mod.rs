//! Shared by `index_race.rs` and `multinode.rs`. Issue 14, defect 3: two
//! indexers of the same changing file must never leave an older content as
//! the latest version. An indexer that read older bytes may reach the store
//! after one that read newer bytes; its write is a compare-and-set on the
//! version it started from, so it fails there, and the indexer reads again.
//!
//! The interleaving is made deterministic by a gate in front of a real store:
//! the slow indexer's first submit waits until the fast one has committed.
//! `watcher.rs` holds its watcher just after a commit instead.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use scm_core::error::Result;
use scm_core::fs::indexer::{IndexAction, Indexer, IndexerOptions};
use scm_core::fs::resolver::Resolver;
use scm_core::store::{AsOf, Document, Store, TxOp, TxReceipt, Version};
use serde_json::Value;
use tokio::sync::Notify;

/// A real store whose first `submit` waits for `release` (after announcing
/// itself on `arrived`), before its write or, made with
/// [`Gate::after_commit`], after it. Everything else passes straight through.
pub struct Gate {
    inner: Arc<dyn Store>,
    armed: AtomicBool,
    after_commit: bool,
    pub arrived: Notify,
    pub release: Notify,
}

impl Gate {
    pub fn new(inner: Arc<dyn Store>) -> Arc<Self> {
        Self::with(inner, false)
    }

    /// The first submit commits, then waits.
    pub fn after_commit(inner: Arc<dyn Store>) -> Arc<Self> {
        Self::with(inner, true)
    }

    fn with(inner: Arc<dyn Store>, after_commit: bool) -> Arc<Self> {
        Arc::new(Gate {
            inner,
            armed: AtomicBool::new(true),
            after_commit,
            arrived: Notify::new(),
            release: Notify::new(),
        })
    }

    async fn hold(&self) {
        self.arrived.notify_one();
        self.release.notified().await;
    }
}

#[async_trait]
impl Store for Gate {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }
    async fn submit(&self, ops: Vec<TxOp>) -> Result<TxReceipt> {
        let held = self.armed.swap(false, Ordering::SeqCst);
        if held && !self.after_commit {
            self.hold().await;
        }
        let receipt = self.inner.submit(ops).await;
        if held && self.after_commit {
            self.hold().await;
        }
        receipt
    }
    async fn get(&self, id: &str) -> Result<Option<Document>> {
        self.inner.get(id).await
    }
    async fn get_many(&self, ids: &[String]) -> Result<Vec<Document>> {
        self.inner.get_many(ids).await
    }
    async fn get_as_of(&self, id: &str, as_of: AsOf<'_>) -> Result<Option<Document>> {
        self.inner.get_as_of(id, as_of).await
    }
    async fn history(&self, id: &str) -> Result<Vec<Version>> {
        self.inner.history(id).await
    }
    async fn latest_tx_id(&self) -> Result<Option<i64>> {
        self.inner.latest_tx_id().await
    }
    async fn ids_of_type(&self, ty: &str) -> scm_core::Result<Vec<String>> {
        self.inner.ids_of_type(ty).await
    }
    async fn counts(&self) -> scm_core::Result<scm_core::store::StoreCounts> {
        self.inner.counts().await
    }
    fn submitted_tx_count(&self) -> u64 {
        self.inner.submitted_tx_count()
    }
}

fn content(doc: &Document) -> Option<&str> {
    doc.get("content").and_then(Value::as_str)
}

/// The race on stores `slow_store` and `fast_store` (one store, or two nodes
/// of one database): the slow indexer reads "old", is held before its write,
/// the file becomes "new", the fast indexer commits "new", the slow one goes
/// on. The latest version must be "new" and no "old" may follow it.
pub async fn stale_write_loses(slow_store: Arc<dyn Store>, fast_store: Arc<dyn Store>) {
    let dir = tempfile::tempdir().unwrap();
    let root: PathBuf = std::fs::canonicalize(dir.path()).unwrap();
    // A unique filesystem id isolates runs on a shared XTDB node.
    let fs_id = format!("race-{}", uuid_like());
    let resolver = |_: ()| Arc::new(Resolver::new(fs_id.clone(), root.clone(), vec![], true));
    let file = root.join("shared.txt");

    std::fs::write(&file, "v1\n").unwrap();
    let fast = Indexer::new(fast_store.clone(), resolver(()), IndexerOptions::default());
    let first = fast.index_file("shared.txt").await.unwrap();
    assert_eq!(first.action, IndexAction::Created);

    std::fs::write(&file, "old\n").unwrap();
    let gate = Gate::new(slow_store.clone());
    let slow = Indexer::new(gate.clone(), resolver(()), IndexerOptions::default());
    let slow_task = tokio::spawn(async move { slow.index_file("shared.txt").await });
    // The slow indexer has read "old" and is about to write it.
    gate.arrived.notified().await;

    std::fs::write(&file, "new\n").unwrap();
    let won = fast.index_file("shared.txt").await.unwrap();
    assert_eq!(won.action, IndexAction::Updated);
    assert_eq!(content(&won.doc), Some("new\n"));

    gate.release.notify_one();
    let late = slow_task.await.unwrap().unwrap();
    // It found its write refused, read the file again and saw "new".
    assert_eq!(
        content(&late.doc),
        Some("new\n"),
        "the late indexer reports the stale content it wrote"
    );

    let id = first.object_id.clone();
    for store in [&slow_store, &fast_store] {
        let latest = store.get(&id).await.unwrap().unwrap();
        assert_eq!(
            content(&latest),
            Some("new\n"),
            "{}: latest version is stale",
            store.kind()
        );
    }
    let contents: Vec<Option<String>> = fast_store
        .history(&id)
        .await
        .unwrap()
        .iter()
        .map(|v| v.doc.as_ref().and_then(content).map(str::to_owned))
        .collect();
    assert_eq!(
        contents,
        vec![Some("v1\n".to_owned()), Some("new\n".to_owned())],
        "history: the stale read must not be committed"
    );
}

/// Enough uniqueness for test ids on a shared node (time + pid + counter).
pub fn uuid_like() -> String {
    use std::sync::atomic::AtomicU64;
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "{nanos:x}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}
