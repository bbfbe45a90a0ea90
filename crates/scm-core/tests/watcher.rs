//! Trackers (SSOT §5.6–5.7): real files, real inotify, the real embedded
//! store. Every wait is on an event channel with a deadline; absence of an
//! event is proven with a probe (a later change whose event must arrive
//! after the one we expect not to see), never with a fixed sleep.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use scm_core::fs::indexer::{Indexer, IndexerOptions, RENAMED_FROM, RENAMED_TO};
use scm_core::fs::resolver::{ResolvedPath, Resolver};
use scm_core::fs::watcher::{PollMode, PollOptions, WatchEvent, Watcher, DEFAULT_DEBOUNCE};
use scm_core::store::embedded::EmbeddedStore;
use scm_core::store::Store;
use serde_json::Value;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

mod race_support;

const DEADLINE: Duration = Duration::from_secs(10);

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    store: Arc<EmbeddedStore>,
    indexer: Arc<Indexer>,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let store = Arc::new(EmbeddedStore::open_in_memory().unwrap());
    let resolver = Arc::new(Resolver::new("fs-test".into(), root.clone(), vec![], true));
    let indexer = Arc::new(Indexer::new(
        store.clone(),
        resolver,
        IndexerOptions::default(),
    ));
    Fixture {
        _dir: dir,
        root,
        store,
        indexer,
    }
}

impl Fixture {
    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }
    fn resolve(&self, rel: &str) -> ResolvedPath {
        self.indexer.resolver.resolve(rel).unwrap()
    }
    /// Write, index and return the resolved path.
    async fn indexed(&self, rel: &str, content: &str) -> ResolvedPath {
        std::fs::write(self.path(rel), content).unwrap();
        self.indexer.index_file(rel).await.unwrap();
        self.resolve(rel)
    }
    fn watcher(&self) -> (Watcher, UnboundedReceiver<WatchEvent>) {
        self.watcher_on(tokio::runtime::Handle::current())
    }
    fn watcher_on(
        &self,
        runtime: tokio::runtime::Handle,
    ) -> (Watcher, UnboundedReceiver<WatchEvent>) {
        let (tx, rx) = unbounded_channel();
        let w = Watcher::new(
            self.indexer.clone(),
            runtime,
            Arc::new(move |e| {
                let _ = tx.send(e);
            }),
        )
        .unwrap();
        (w, rx)
    }
    fn watcher_polling(&self, mode: PollMode) -> (Watcher, UnboundedReceiver<WatchEvent>) {
        let (tx, rx) = unbounded_channel();
        let w = Watcher::with_options(
            self.indexer.clone(),
            tokio::runtime::Handle::current(),
            Arc::new(move |e| {
                let _ = tx.send(e);
            }),
            DEFAULT_DEBOUNCE,
            PollOptions {
                mode,
                interval: Duration::from_millis(50),
            },
        )
        .unwrap();
        (w, rx)
    }
    async fn versions(&self, r: &ResolvedPath) -> usize {
        self.store
            .history(&r.source.file_object_id())
            .await
            .unwrap()
            .len()
    }
}

async fn next(rx: &mut UnboundedReceiver<WatchEvent>) -> WatchEvent {
    tokio::time::timeout(DEADLINE, rx.recv())
        .await
        .expect("no watcher event within 10 s")
        .expect("watcher channel closed")
}

fn content(doc: &serde_json::Map<String, Value>) -> Option<&str> {
    doc.get("content").and_then(Value::as_str)
}

/// The next event is an update to `want`.
async fn expect_update(rx: &mut UnboundedReceiver<WatchEvent>, want: &str) {
    match next(rx).await {
        WatchEvent::Updated { doc, .. } => assert_eq!(content(&doc), Some(want)),
        other => panic!("expected Updated, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_produces_an_update() {
    let f = fixture();
    let a = f.indexed("a.txt", "one").await;
    let (w, mut rx) = f.watcher();
    w.track(&a).unwrap();

    std::fs::write(f.path("a.txt"), "two").unwrap();
    match next(&mut rx).await {
        WatchEvent::Updated { object_id, doc, .. } => {
            assert_eq!(object_id, a.source.file_object_id());
            assert_eq!(content(&doc), Some("two"));
        }
        other => panic!("expected Updated, got {other:?}"),
    }
    assert_eq!(f.versions(&a).await, 2);
    w.close();
}

/// Another manager on the same store indexed the change first (its
/// `observeWrite`): this watcher writes nothing, but still reports the
/// current version, which its session may not hold yet (issue 10, finding 7).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_another_indexer_stored_first_is_still_reported() {
    let f = fixture();
    let a = f.indexed("a.txt", "one").await;
    let (w, mut rx) = f.watcher();
    w.track(&a).unwrap();
    let txs = f.store.submitted_tx_count();
    std::fs::write(f.path("a.txt"), "two").unwrap();
    // The other manager: its indexer stores the new version at once.
    f.indexer.index_resolved(&a).await.unwrap();
    assert_eq!(f.store.submitted_tx_count() - txs, 1);
    match next(&mut rx).await {
        WatchEvent::Updated { object_id, doc, .. } => {
            assert_eq!(object_id, a.source.file_object_id());
            assert_eq!(content(&doc), Some("two"));
        }
        other => panic!("expected Updated, got {other:?}"),
    }
    assert_eq!(f.versions(&a).await, 2, "the watcher wrote no version");
    w.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_identical_rewrite_or_touch_writes_no_version() {
    let f = fixture();
    let a = f.indexed("a.txt", "same").await;
    let probe = f.indexed("probe.txt", "p0").await;
    let (w, mut rx) = f.watcher();
    w.track(&a).unwrap();
    w.track(&probe).unwrap();
    assert_eq!(w.watched_dir_count(), 1, "one watch per directory");
    let txs = f.store.submitted_tx_count();

    std::fs::write(f.path("a.txt"), "same").unwrap();
    let file = std::fs::File::options()
        .append(true)
        .open(f.path("a.txt"))
        .unwrap();
    file.set_modified(std::time::SystemTime::now()).unwrap();
    drop(file);
    // The probe changes after a.txt: its event arrives after a.txt's batch
    // was processed (one worker, in order).
    std::fs::write(f.path("probe.txt"), "p1").unwrap();
    // a.txt may be reported with the version the store already holds (the
    // watcher reports the current version even when it wrote none: another
    // manager may have indexed the change first); it writes no new one.
    loop {
        match next(&mut rx).await {
            WatchEvent::Updated { object_id, doc, .. }
                if object_id == a.source.file_object_id() =>
            {
                assert_eq!(content(&doc), Some("same"));
            }
            WatchEvent::Updated { object_id, .. } => {
                assert_eq!(
                    object_id,
                    probe.source.file_object_id(),
                    "only the probe changed"
                );
                break;
            }
            other => panic!("expected the probe's Updated, got {other:?}"),
        }
    }
    assert_eq!(f.versions(&a).await, 1);
    assert_eq!(
        f.store.submitted_tx_count(),
        txs + 1,
        "only the probe's version"
    );
    w.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_atomic_save_is_an_update_not_a_deletion() {
    let f = fixture();
    let a = f.indexed("a.rs", "fn a() {}").await;
    let (w, mut rx) = f.watcher();
    w.track(&a).unwrap();

    // What editors do: write a temporary file, rename it over the original.
    std::fs::write(f.path(".a.rs.swp"), "fn a() { 1 }").unwrap();
    std::fs::rename(f.path(".a.rs.swp"), f.path("a.rs")).unwrap();
    match next(&mut rx).await {
        WatchEvent::Updated { object_id, doc, .. } => {
            assert_eq!(object_id, a.source.file_object_id());
            assert_eq!(content(&doc), Some("fn a() { 1 }"));
        }
        other => panic!("expected Updated, got {other:?}"),
    }
    let history = f.store.history(&a.source.file_object_id()).await.unwrap();
    assert_eq!(history.len(), 2);
    assert!(history
        .iter()
        .all(|v| v.doc.as_ref().unwrap()["state"] == "present"));

    // Still watched after the inode was replaced.
    std::fs::write(f.path("a.rs"), "fn a() { 2 }").unwrap();
    assert!(matches!(next(&mut rx).await, WatchEvent::Updated { .. }));
    w.close();
}

/// A writer that saves in place (truncate, write, close) and is slow about
/// it — a large file written in chunks, a busy machine — must not leave a
/// half-written version: the model would be told the file lost half its
/// lines, then got them back, and the history would keep the torn text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_in_place_save_is_one_version_not_a_torn_one() {
    use std::io::Write;
    let f = fixture();
    let a = f.indexed("a.txt", "old text\n").await;
    let (w, mut rx) = f.watcher();
    w.track(&a).unwrap();

    let mut file = std::fs::File::create(f.path("a.txt")).unwrap();
    file.write_all(b"first half\n").unwrap();
    // The slow writer: it holds the file open past the debounce window.
    // This wait is the scenario, not a wait for consistency.
    tokio::time::sleep(Duration::from_millis(400)).await;
    file.write_all(b"second half\n").unwrap();
    drop(file);
    expect_update(&mut rx, "first half\nsecond half\n").await;
    assert_eq!(f.versions(&a).await, 2, "no torn version in the history");
    w.close();
}

/// A batch handled late (the watcher's runtime busy) while the next save of
/// the same file is under way: the file is truncated, not yet written, and
/// the batch's last event is the earlier save's close. Reading it then would
/// store an empty version and show it as current (random seed 29 once, under
/// load); the file was written after the batch, so its own events are coming
/// and the watcher waits for them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_handled_during_the_next_save_does_not_store_it_half_written() {
    a_batch_meets_the_next_save(false).await;
}

/// The same race when the next save's truncation is stamped no later than
/// the batch's last event: the kernel stamps a file from a coarse clock (one
/// tick, 1–10 ms, behind the precise one), so a truncation within a tick of
/// the earlier save's close looks older than it. The test stamps the
/// truncated file back to the earlier save's time, as a tick does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_truncation_stamped_within_a_clock_tick_is_not_stored_empty() {
    a_batch_meets_the_next_save(true).await;
}

/// `a.txt` saved, then truncated by its next save while the watcher's only
/// worker is held up, the batch of the first save (and of a probe file)
/// handed over meanwhile; with `stamp_back`, the truncated file carries the
/// first save's time. The batch must not store `a.txt` empty.
async fn a_batch_meets_the_next_save(stamp_back: bool) {
    use std::io::Write;
    let f = fixture();
    let a = f.indexed("a.txt", "one\n").await;
    let probe = f.indexed("probe.txt", "p0").await;
    // The watcher's own runtime, one worker, so the test can hold it up.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (w, mut rx) = f.watcher_on(rt.handle().clone());
    w.track(&a).unwrap();
    w.track(&probe).unwrap();

    // (Taken before the save: a coarse stamp can be older than the save.)
    let saved = std::time::SystemTime::now();
    std::fs::write(f.path("a.txt"), "two\n").unwrap();
    std::fs::write(f.path("probe.txt"), "p1").unwrap();
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    rt.spawn(async move {
        started_tx.send(()).unwrap();
        let _ = release_rx.recv(); // blocks the only worker
    });
    started_rx.recv().unwrap();
    // Let the debouncer hand the batch (both saves, closed) over while the
    // watcher cannot run. This wait is the scenario, not a wait for
    // consistency: if the batch came later, the truncation below joins it and
    // the test passes without exercising the race.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut slow = std::fs::File::create(f.path("a.txt")).unwrap(); // truncated
    if stamp_back {
        slow.set_modified(saved).unwrap();
    }
    release_tx.send(()).unwrap();

    // The batch is handled before the probe's update is reported.
    match next(&mut rx).await {
        WatchEvent::Updated { doc, .. } => {
            assert_eq!(content(&doc), Some("p1"), "a.txt was read half-written")
        }
        other => panic!("expected the probe's update, got {other:?}"),
    }
    slow.write_all(b"three\n").unwrap();
    drop(slow);
    expect_update(&mut rx, "three\n").await;
    assert_eq!(f.versions(&a).await, 2, "no empty version in the history");
    w.close();
    rt.shutdown_background();
}

/// A report's `read_at` is when the watcher began to read the file, not when
/// it had stored the version. A session that read the file itself after that
/// holds text at least as new and ignores the report. Stamped after the store
/// write, a report of a file read while the agent's next save had it truncated
/// outlived the agent's own read of the saved file on a loaded machine (slow
/// store): the session showed the file empty ("seed 3, deletions", call 101).
/// The store here holds the watcher just after its write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_says_when_the_file_was_read_not_when_it_was_stored() {
    let f = fixture();
    let a = f.indexed("a.txt", "one\n").await;
    let gate = race_support::Gate::after_commit(f.store.clone());
    let indexer = Arc::new(Indexer::new(
        gate.clone(),
        f.indexer.resolver.clone(),
        IndexerOptions::default(),
    ));
    let (tx, mut rx) = unbounded_channel();
    let w = Watcher::new(
        indexer,
        tokio::runtime::Handle::current(),
        Arc::new(move |e| {
            let _ = tx.send(e);
        }),
    )
    .unwrap();
    w.track(&a).unwrap();

    std::fs::write(f.path("a.txt"), "two\n").unwrap();
    tokio::time::timeout(DEADLINE, gate.arrived.notified())
        .await
        .expect("the watcher never stored the change");
    // Read and stored, not reported yet.
    let stored = std::time::Instant::now();
    gate.release.notify_one();
    match next(&mut rx).await {
        WatchEvent::Updated { doc, read_at, .. } => {
            assert_eq!(content(&doc), Some("two\n"));
            assert!(
                read_at < stored,
                "the report is stamped after the store write"
            );
        }
        other => panic!("expected Updated, got {other:?}"),
    }
    w.close();
}

/// A writer that keeps the file open (a log) is still followed: the change
/// is indexed once the settle limit passes, without a close.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_kept_open_for_writing_is_still_followed() {
    use std::io::Write;
    let f = fixture();
    let a = f.indexed("log.txt", "").await;
    let (w, mut rx) = f.watcher();
    w.track(&a).unwrap();

    let mut file = std::fs::File::options()
        .append(true)
        .open(f.path("log.txt"))
        .unwrap();
    file.write_all(b"line one\n").unwrap();
    expect_update(&mut rx, "line one\n").await;
    drop(file);
    w.close();
}

/// The directory of a tracked file is deleted and made again (a branch
/// switch, `rm -rf d && mkdir d`): the kernel dropped its watch with it, yet
/// the file's later changes must still reach the model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_deleted_and_made_again_is_watched_again() {
    let f = fixture();
    std::fs::create_dir(f.path("d")).unwrap();
    let a = f.indexed("d/a.txt", "one").await;
    let (w, mut rx) = f.watcher();
    w.track(&a).unwrap();

    std::fs::remove_dir_all(f.path("d")).unwrap();
    assert!(matches!(next(&mut rx).await, WatchEvent::Deleted { .. }));
    std::fs::create_dir(f.path("d")).unwrap();
    std::fs::write(f.path("d/a.txt"), "two").unwrap();
    expect_update(&mut rx, "two").await;
    std::fs::write(f.path("d/a.txt"), "three").unwrap();
    expect_update(&mut rx, "three").await;
    w.close();
}

/// Nested: `d/e` goes with `d`; `d` comes back first, then `e` in it. The
/// watch held meanwhile moves down to `d`, then `e` is watched again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nested_directory_made_again_step_by_step_is_watched_again() {
    let f = fixture();
    std::fs::create_dir_all(f.path("d/e")).unwrap();
    let a = f.indexed("d/e/a.txt", "one").await;
    let probe = f.indexed("probe.txt", "p0").await;
    let (w, mut rx) = f.watcher();
    w.track(&a).unwrap();
    w.track(&probe).unwrap();

    std::fs::remove_dir_all(f.path("d")).unwrap();
    assert!(matches!(next(&mut rx).await, WatchEvent::Deleted { .. }));
    std::fs::create_dir(f.path("d")).unwrap();
    // The probe's event comes in a batch at or after d's: by then the
    // watcher has seen d back without e.
    std::fs::write(f.path("probe.txt"), "p1").unwrap();
    match next(&mut rx).await {
        WatchEvent::Updated { object_id, .. } => {
            assert_eq!(object_id, probe.source.file_object_id())
        }
        other => panic!("expected the probe's Updated, got {other:?}"),
    }
    std::fs::create_dir(f.path("d/e")).unwrap();
    std::fs::write(f.path("d/e/a.txt"), "two").unwrap();
    expect_update(&mut rx, "two").await;
    std::fs::write(f.path("d/e/a.txt"), "three").unwrap();
    expect_update(&mut rx, "three").await;
    w.close();
}

/// The same when the directory is moved away and a new one takes its
/// place: the old watch follows the moved directory, not the path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_moved_away_and_replaced_is_watched_at_its_path() {
    let f = fixture();
    std::fs::create_dir(f.path("d")).unwrap();
    let a = f.indexed("d/a.txt", "one").await;
    let (w, mut rx) = f.watcher();
    w.track(&a).unwrap();

    std::fs::rename(f.path("d"), f.path("d.old")).unwrap();
    assert!(matches!(next(&mut rx).await, WatchEvent::Deleted { .. }));
    std::fs::create_dir(f.path("d")).unwrap();
    std::fs::write(f.path("d/a.txt"), "two").unwrap();
    expect_update(&mut rx, "two").await;
    // A change in the moved directory is not this file's.
    std::fs::write(f.path("d.old/a.txt"), "old place").unwrap();
    std::fs::write(f.path("d/a.txt"), "three").unwrap();
    expect_update(&mut rx, "three").await;
    w.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deletion_writes_a_deletion_version_and_keeps_history() {
    let f = fixture();
    let a = f.indexed("a.md", "# a").await;
    let (w, mut rx) = f.watcher();
    w.track(&a).unwrap();

    std::fs::remove_file(f.path("a.md")).unwrap();
    match next(&mut rx).await {
        WatchEvent::Deleted { object_id, doc, .. } => {
            assert_eq!(object_id, a.source.file_object_id());
            assert_eq!(doc["state"], "deleted");
            assert!(doc["content"].is_null() && doc["file_hash"].is_null());
        }
        other => panic!("expected Deleted, got {other:?}"),
    }
    let history = f.store.history(&a.source.file_object_id()).await.unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(content(history[0].doc.as_ref().unwrap()), Some("# a"));

    // It comes back: a new version.
    std::fs::write(f.path("a.md"), "# again").unwrap();
    expect_update(&mut rx, "# again").await;
    w.close();
}

/// Issue 14, defect 6: a tracked file replaced by a directory gets a
/// deletion version (the spec's states have no "not a file": the file at
/// that path is gone), not an indexing error. A probe change afterwards
/// proves no error event was pending.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_replaced_by_a_directory_is_a_deletion() {
    let f = fixture();
    let a = f.indexed("a.md", "# a").await;
    let probe = f.indexed("probe.txt", "p0").await;
    let (w, mut rx) = f.watcher();
    w.track(&a).unwrap();
    w.track(&probe).unwrap();

    std::fs::remove_file(f.path("a.md")).unwrap();
    std::fs::create_dir(f.path("a.md")).unwrap();
    let mut deleted = 0;
    loop {
        match next(&mut rx).await {
            WatchEvent::Deleted { object_id, doc, .. } => {
                assert_eq!(object_id, a.source.file_object_id());
                assert_eq!(doc["state"], "deleted");
                deleted += 1;
                std::fs::write(f.path("probe.txt"), "p1").unwrap();
            }
            WatchEvent::Updated { object_id, .. } if object_id == probe.source.file_object_id() => {
                break
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(deleted, 1);
    assert_eq!(f.versions(&a).await, 2);
    w.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_is_a_linked_deletion_and_new_object() {
    let f = fixture();
    std::fs::create_dir(f.path("sub")).unwrap();
    let a = f.indexed("a.ts", "export {}").await;
    let (w, mut rx) = f.watcher();
    w.track(&a).unwrap();
    // The destination directory is watched too (another tracked file there).
    let other = f.indexed("sub/other.ts", "x").await;
    w.track(&other).unwrap();

    std::fs::rename(f.path("a.ts"), f.path("sub/b.ts")).unwrap();
    let b = f.resolve("sub/b.ts");
    let (from_id, to_id) = match next(&mut rx).await {
        WatchEvent::Renamed {
            from_id,
            to_id,
            to_doc,
        } => {
            assert_eq!(content(&to_doc), Some("export {}"));
            assert_eq!(to_doc[RENAMED_FROM], from_id.as_str());
            (from_id, to_id)
        }
        other => panic!("expected Renamed, got {other:?}"),
    };
    assert_eq!(from_id, a.source.file_object_id());
    assert_eq!(to_id, b.source.file_object_id());
    let old = f.store.get(&from_id).await.unwrap().unwrap();
    assert_eq!(old["state"], "deleted");
    assert_eq!(old[RENAMED_TO], to_id.as_str());
    assert_eq!(f.versions(&a).await, 2, "history at the old path kept");

    // The new path is tracked from now on.
    assert!(w.tracked_paths().contains(&f.path("sub/b.ts")));
    std::fs::write(f.path("sub/b.ts"), "export const b = 1").unwrap();
    match next(&mut rx).await {
        WatchEvent::Updated { object_id, .. } => assert_eq!(object_id, to_id),
        other => panic!("expected Updated at the new path, got {other:?}"),
    }
    w.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlinked_file_sees_changes_to_its_target() {
    let f = fixture();
    std::fs::create_dir(f.path("real")).unwrap();
    std::fs::write(f.path("real/t.txt"), "t0").unwrap();
    std::os::unix::fs::symlink(f.path("real/t.txt"), f.path("link.txt")).unwrap();
    f.indexer.index_file("link.txt").await.unwrap();
    let link = f.resolve("link.txt");
    let (w, mut rx) = f.watcher();
    w.track(&link).unwrap();
    assert_eq!(
        w.watched_dir_count(),
        2,
        "the link's and the target's directory"
    );

    std::fs::write(f.path("real/t.txt"), "t1").unwrap();
    match next(&mut rx).await {
        WatchEvent::Updated { object_id, doc, .. } => {
            assert_eq!(object_id, link.source.file_object_id());
            assert_eq!(content(&doc), Some("t1"));
        }
        other => panic!("expected Updated for the link, got {other:?}"),
    }
    w.untrack(&link);
    assert_eq!(w.watched_dir_count(), 0);
    w.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_close_or_drop_no_callback_fires() {
    let f = fixture();
    let a = f.indexed("a.txt", "v0").await;
    let (closed, mut closed_rx) = f.watcher();
    closed.track(&a).unwrap();
    let (dropped, mut dropped_rx) = f.watcher();
    dropped.track(&a).unwrap();
    closed.close();
    closed.close(); // idempotent
    drop(dropped);
    for r in [f.resolve("a.txt"), f.indexed("b.txt", "b").await] {
        assert_eq!(closed.track(&r).unwrap_err().code(), "WATCHER_ERROR");
    }

    // A live probe watcher on the same file: once it has seen the change,
    // the closed ones would have too.
    let (probe, mut probe_rx) = f.watcher();
    probe.track(&a).unwrap();
    std::fs::write(f.path("a.txt"), "v1").unwrap();
    assert!(matches!(
        next(&mut probe_rx).await,
        WatchEvent::Updated { .. }
    ));
    assert!(closed_rx.try_recv().is_err(), "closed watcher fired");
    assert!(dropped_rx.try_recv().is_err(), "dropped watcher fired");
    probe.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn directory_watches_are_reference_counted_and_unwatchable_paths_skipped() {
    let f = fixture();
    let a = f.indexed("a.txt", "a").await;
    let b = f.indexed("b.txt", "b").await;
    std::fs::create_dir(f.path("d")).unwrap();
    let c = f.indexed("d/c.txt", "c").await;
    let (w, _rx) = f.watcher();
    for r in [&a, &b, &c, &a] {
        w.track(r).unwrap();
    }
    assert_eq!(w.tracked_paths().len(), 3);
    assert_eq!(w.watched_dir_count(), 2);
    w.untrack(&a);
    assert_eq!(w.watched_dir_count(), 2);
    w.untrack(&b);
    assert_eq!(w.watched_dir_count(), 1);

    // A sandbox-internal path (no host path) is never watched.
    let sandboxed = Resolver::new("fs-sandbox".into(), "/w".into(), vec![], false);
    let inside = sandboxed.resolve("x.txt").unwrap();
    assert!(!inside.watchable);
    w.track(&inside).unwrap();
    assert_eq!(w.tracked_paths(), vec![f.path("d/c.txt")]);

    // A directory that does not exist cannot be watched: coded error.
    let missing = f.resolve("no/such/dir/x.txt");
    assert_eq!(w.track(&missing).unwrap_err().code(), "WATCHER_ERROR");
    w.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_callback_does_not_kill_the_watcher() {
    let f = fixture();
    let a = f.indexed("a.txt", "0").await;
    let (tx, mut rx) = unbounded_channel();
    let calls = std::sync::atomic::AtomicUsize::new(0);
    let w = Watcher::new(
        f.indexer.clone(),
        tokio::runtime::Handle::current(),
        Arc::new(move |e| {
            let n = calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let _ = tx.send(e);
            if n == 0 {
                panic!("callback bug (expected by this test)");
            }
        }),
    )
    .unwrap();
    w.track(&a).unwrap();
    std::fs::write(f.path("a.txt"), "1").unwrap();
    assert!(matches!(next(&mut rx).await, WatchEvent::Updated { .. }));
    std::fs::write(f.path("a.txt"), "2").unwrap();
    assert!(matches!(next(&mut rx).await, WatchEvent::Updated { .. }));
    w.close();
}

#[test]
fn watcher_is_send_and_sync() {
    fn is<T: Send + Sync>() {}
    is::<Watcher>();
}

/// A directory whose changes the platform's watcher cannot see (a network
/// filesystem) is polled. `PollMode::Always` polls without the platform's
/// watcher at all, so the events below can only come from the poller.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_polled_directory_reports_changes_and_deletions_without_platform_events() {
    let f = fixture();
    let a = f.indexed("a.txt", "one").await;
    let (w, mut rx) = f.watcher_polling(PollMode::Always);
    w.track(&a).unwrap();
    assert_eq!(w.polled_dirs(), vec![f.root.clone()]);

    // Within the same second as the first write (and as the poller's first
    // look), the same size: seen all the same.
    std::fs::write(f.path("a.txt"), "two").unwrap();
    expect_update(&mut rx, "two").await;
    assert_eq!(f.versions(&a).await, 2);

    std::fs::remove_file(f.path("a.txt")).unwrap();
    match next(&mut rx).await {
        WatchEvent::Deleted { object_id, .. } => assert_eq!(object_id, a.source.file_object_id()),
        other => panic!("expected Deleted, got {other:?}"),
    }
    w.untrack(&a);
    assert!(w.polled_dirs().is_empty());
    w.close();
}

/// A local directory is left to the platform's watcher unless polling is
/// asked for; `Never` never polls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_directory_is_not_polled_unless_asked() {
    let f = fixture();
    let a = f.indexed("a.txt", "one").await;
    for mode in [PollMode::Auto, PollMode::Never] {
        let (w, mut rx) = f.watcher_polling(mode);
        w.track(&a).unwrap();
        assert!(w.polled_dirs().is_empty(), "{mode:?}");
        let text = format!("{mode:?}");
        std::fs::write(f.path("a.txt"), &text).unwrap();
        expect_update(&mut rx, &text).await;
        w.close();
    }
}
