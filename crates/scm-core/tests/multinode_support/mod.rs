//! Shared by the multi-node suites (`multinode.rs`, `multinode_crash.rs`):
//! the node URLs from `SCM_TEST_XTDB_NODES`, one workspace indexed through
//! several nodes, history compared across nodes after await-tx.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use scm_core::fs::indexer::{Indexer, IndexerOptions};
use scm_core::fs::resolver::Resolver;
use scm_core::session::{Session, SessionOptions};
use scm_core::store::xtdb::{XtdbOptions, XtdbStore};
use scm_core::store::{Document, Store};
use serde_json::Value;

use crate::session_support::unique_id;

pub fn node_urls() -> Option<Vec<String>> {
    let urls: Vec<String> = std::env::var("SCM_TEST_XTDB_NODES")
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    if urls.len() >= 2 {
        return Some(urls);
    }
    assert!(
        std::env::var("SCM_REQUIRE_XTDB_NODES").as_deref() != Ok("1"),
        "SCM_REQUIRE_XTDB_NODES=1 but SCM_TEST_XTDB_NODES does not list two nodes; start them \
         with `bash xtdb/cluster.sh start 2` and pass the URLs comma-separated"
    );
    eprintln!(
        "SKIPPED: multi-node tests need SCM_TEST_XTDB_NODES=url1,url2 \
         (bash xtdb/setup.sh && bash xtdb/cluster.sh start 2)"
    );
    None
}

pub fn xtdb(url: &str) -> Arc<XtdbStore> {
    Arc::new(XtdbStore::new(XtdbOptions::new(url)).expect("valid XTDB options"))
}

/// One shared workspace directory; each agent indexes it through its own
/// node, with the same filesystem id (the same machine's files).
pub struct Shared {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub fs_id: String,
}

impl Shared {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        Shared {
            _dir: dir,
            root,
            fs_id: unique_id("fs-multinode"),
        }
    }
    pub fn indexer(&self, store: Arc<dyn Store>) -> Arc<Indexer> {
        let resolver = Arc::new(Resolver::new(
            self.fs_id.clone(),
            self.root.clone(),
            vec![],
            true,
        ));
        Arc::new(Indexer::new(store, resolver, IndexerOptions::default()))
    }
    /// Writes `rel` whole, as an editor's atomic save does (a temporary file
    /// renamed over it): an indexer on another task reads the old content or
    /// the new, never the empty file `std::fs::write` leaves between its
    /// truncate and its write (CI once indexed that as a version "").
    pub fn write(&self, rel: &str, content: &str) {
        let p = self.root.join(rel);
        let dir = p.parent().unwrap();
        std::fs::create_dir_all(dir).unwrap();
        let tmp = dir.join(format!(
            ".{}.{}.tmp",
            p.file_name().unwrap().to_string_lossy(),
            unique_id("w")
        ));
        std::fs::write(&tmp, content).unwrap();
        std::fs::rename(tmp, p).unwrap();
    }
    pub async fn session(&self, store: Arc<dyn Store>, prefix: &str) -> Session {
        Session::open(
            store.clone(),
            self.indexer(store),
            SessionOptions::new(unique_id(prefix)),
        )
        .await
        .unwrap()
    }
}

pub fn content(doc: &Document) -> Option<&str> {
    doc.get("content").and_then(Value::as_str)
}

/// The same history on both nodes, once `tx_id` is indexed on each.
pub async fn same_history(
    a: &XtdbStore,
    b: &XtdbStore,
    id: &str,
    tx_id: i64,
) -> Vec<Option<String>> {
    a.await_tx(tx_id).await.unwrap();
    b.await_tx(tx_id).await.unwrap();
    let ha = a.history(id).await.unwrap();
    let hb = b.history(id).await.unwrap();
    assert_eq!(ha, hb, "{id}: the two nodes disagree on history");
    ha.iter()
        .map(|v| v.doc.as_ref().and_then(content).map(str::to_owned))
        .collect()
}

/// Run `bash xtdb/cluster.sh ARGS` (kill / restart a node of the cluster).
pub fn cluster(args: &[&str]) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../xtdb/cluster.sh");
    let status = Command::new("bash")
        .arg(script)
        .args(args)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("run xtdb/cluster.sh");
    assert!(status.success(), "xtdb/cluster.sh {args:?} failed");
}
