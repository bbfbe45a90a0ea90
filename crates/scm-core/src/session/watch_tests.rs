//! The session's side of the watcher: which reports it takes.

use std::sync::Arc;
use std::time::Instant;

use super::*;
use crate::fs::indexer::{Indexer, IndexerOptions};
use crate::fs::resolver::Resolver;
use crate::fs::watcher::WatchEvent;
use crate::store::embedded::EmbeddedStore;

fn content(s: &Session, id: &str) -> Option<String> {
    s.objects[id].str("content").map(str::to_string)
}

/// The watcher read a file, the agent saved it again and the session read
/// it itself, and only then the watcher's report came (a loaded machine, a
/// slow store): the report is older than what the session holds and must
/// not bring the old text back as current. A report read after the session's
/// own read is taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_report_read_before_the_session_s_own_read_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open_in_memory().unwrap());
    let resolver = Arc::new(Resolver::new("fs-w".into(), root.clone(), vec![], true));
    let indexer = Arc::new(Indexer::new(
        store.clone(),
        resolver,
        IndexerOptions::default(),
    ));
    let mut opts = SessionOptions::new("watch-order");
    opts.watch = true;
    let mut s = Session::open(store, indexer.clone(), opts).await.unwrap();
    // Reports are handed in by the test, in the order that shows the race.
    let (tx, rx) = std::sync::mpsc::channel();
    s.watch.as_mut().expect("watching").rx = rx;

    std::fs::write(root.join("a.txt"), "one\n").unwrap();
    let id = s.read("a.txt").await.unwrap().id.unwrap();
    // The watcher's view of the first save, read now.
    let watcher_read = Instant::now();
    let old_doc = s.objects[&id].doc.clone();

    std::fs::write(root.join("a.txt"), "two\n").unwrap();
    s.observe_edit("a.txt").await.unwrap();
    tx.send(WatchEvent::Updated {
        object_id: id.clone(),
        doc: old_doc,
        read_at: watcher_read,
    })
    .unwrap();
    s.poll_watch();
    assert_eq!(
        content(&s, &id).as_deref(),
        Some("two\n"),
        "the old text came back"
    );

    // A change after the session's read is reported and taken.
    std::fs::write(root.join("a.txt"), "three\n").unwrap();
    let newer = indexer.index_file("a.txt").await.unwrap();
    tx.send(WatchEvent::Updated {
        object_id: id.clone(),
        doc: newer.doc,
        read_at: Instant::now(),
    })
    .unwrap();
    s.poll_watch();
    assert_eq!(content(&s, &id).as_deref(), Some("three\n"));
    s.close().await.unwrap();
}
