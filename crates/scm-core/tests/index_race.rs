//! Issue 14, defect 3: two indexers of the same changing file must never
//! leave an older content as the latest version (see `race_support`). Runs
//! on the embedded store and on the XTDB node at `SCM_TEST_XTDB_URL`; the
//! same race across two nodes of one PostgreSQL-backed cluster is in
//! `multinode.rs`.

mod race_support;

use std::sync::Arc;

use race_support::stale_write_loses;
use scm_core::store::embedded::EmbeddedStore;
use scm_core::store::xtdb::{XtdbOptions, XtdbStore};
use scm_core::store::Store;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_stale_write_loses() {
    let dir = tempfile::tempdir().unwrap();
    // Two handles on one database file: two processes' view of the store.
    let path = dir.path().join("store.sqlite");
    let a: Arc<dyn Store> = Arc::new(EmbeddedStore::open(&path).unwrap());
    let b: Arc<dyn Store> = Arc::new(EmbeddedStore::open(&path).unwrap());
    stale_write_loses(a, b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn xtdb_stale_write_loses() {
    let Ok(url) = std::env::var("SCM_TEST_XTDB_URL") else {
        assert!(
            std::env::var("SCM_REQUIRE_XTDB").as_deref() != Ok("1"),
            "SCM_REQUIRE_XTDB=1 but SCM_TEST_XTDB_URL is unset"
        );
        eprintln!("SKIPPED: needs an XTDB node (SCM_TEST_XTDB_URL)");
        return;
    };
    let store: Arc<dyn Store> = Arc::new(XtdbStore::new(XtdbOptions::new(url)).unwrap());
    stale_write_loses(store.clone(), store).await;
}
