//! Watchers for filesystem sources (notify, replacing chokidar): one
//! non-recursive watch per parent directory of tracked files, debounced;
//! change → index, delete → deletion version, rename → deletion + new object.
//! Watchers never touch session sets: they report what they wrote.
//!
//! # Design
//!
//! - **Parent-directory watches.** Watching a file directly stops working
//!   after the first atomic save (the watched inode is replaced). So each
//!   parent directory of a tracked file gets one non-recursive watch,
//!   reference-counted by the tracked files in it, and events are filtered to
//!   tracked paths. A tracked path that is a symlink also watches its
//!   target's directory, and the target's events count for the link.
//! - **Event kinds are hints, the filesystem is the truth.** After the
//!   debounce window every tracked path an event mentions is re-stat'ed and
//!   re-indexed through the [`Indexer`]: present → index (a new version only
//!   if `file_hash` changed, so touches and identical rewrites are silent);
//!   gone, or no longer a regular file (replaced by a directory) → deletion
//!   version. An atomic save (write a temp file, rename it
//!   over the tracked one) therefore reads as a change, never a deletion.
//! - **Torn writes** (`settle.rs`). A slow in-place save can arrive
//!   half-written, and a batch handled late can meet the next save with the
//!   file truncated: such a path waits for its writer's close (or
//!   [`SETTLE_LIMIT`]) before it is indexed.
//! - **A directory that goes away.** Deleting a watched directory drops
//!   its watch; moving it away takes the watch along. Either way its tracked
//!   files are re-checked (they are gone) and the nearest existing ancestor
//!   is watched until the directory is back at its path; then it is watched
//!   again and its tracked files re-checked (a branch switch, `rm -rf d &&
//!   mkdir d`).
//! - **Renames.** The debouncer pairs inotify's `MOVED_FROM`/`MOVED_TO`. If a
//!   tracked file's old path is gone and the new path is a file, the old
//!   object gets a deletion version with `renamed_to` (new object id) and the
//!   new path is indexed with `renamed_from` (old object id); both fields are
//!   descriptive, outside the hashes. The new path becomes tracked; the old
//!   one stays tracked so a file reappearing there is noticed.
//! - **Threads.** notify's inotify thread feeds the debouncer thread, which
//!   only forwards batches into a channel, as the poller's thread does. One
//!   task on the given tokio runtime drains it and does all indexing, in
//!   order.
//! - **Closing.** [`Watcher::close`] marks the watcher closed, waits for a
//!   callback in flight, stops the backends (joining their threads) and aborts
//!   the task. Callbacks run under a read lock and check the closed flag, so
//!   none runs after `close` returns. Dropping the watcher closes it.
//! - **Note folders** ([`Watcher::track_folder`]): every directory under
//!   the folder gets a watch; a note file appearing there (created, or
//!   renamed into it) is tracked and indexed, a directory appearing there
//!   is watched and its notes indexed. Changes and deletions of the notes
//!   are those of any tracked file.
//! - **Polling** (`watch_backend.rs`, `poller.rs`): a directory on a
//!   network filesystem, or one the platform's watcher refuses, is polled as
//!   well (or every directory instead, by choice). The poller reports a
//!   change once it has settled; a polled batch has no close events to wait
//!   for.
//! - **Errors** (notify errors, unreadable files, store failures) are reported
//!   as [`WatchEvent::Error`]; a panicking callback is caught and logged.

use std::cell::Cell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Duration;

use notify::event::{AccessKind, AccessMode, ModifyKind, RenameMode};
use notify::EventKind;
use notify_debouncer_full::DebouncedEvent;

use crate::error::Error;
use crate::fs::indexer::Indexer;
use crate::fs::resolver::ResolvedPath;
pub use crate::fs::settle::SETTLE_LIMIT;
use crate::fs::settle::{leaves_open, written_after, Unsettled};
use crate::fs::watch_backend::{Backends, Batch, Source};
pub use crate::fs::watch_backend::{PollMode, PollOptions};
use crate::store::Document;

/// What a watcher wrote. `read_at` is when the watcher began to look at the
/// file (before its read or stat): a session that read the file itself later
/// than that holds a version at least as new and ignores the report, which
/// can reach it after its own read (the watcher read, the agent saved again,
/// the session read, then the report came; or the watcher read the file
/// while the agent's save had it truncated). A change the watcher saw and
/// the session did not has its own events, and so a later report.
#[derive(Debug, Clone)]
pub enum WatchEvent {
    /// A new version (content changed, or the file reappeared).
    Updated {
        object_id: String,
        doc: Document,
        read_at: std::time::Instant,
    },
    /// A deletion version was written.
    Deleted {
        object_id: String,
        doc: Document,
        read_at: std::time::Instant,
    },
    /// Rename: a deletion at `from` and a new object at `to`, linked.
    Renamed {
        from_id: String,
        to_id: String,
        to_doc: Document,
    },
    /// A non-fatal problem (never crashes the host).
    Error { message: String },
}

/// Receives watcher events (called from the watcher's thread; must not block).
pub type WatchCallback = Arc<dyn Fn(WatchEvent) + Send + Sync>;

/// How long events settle before they are processed: long enough to pair a
/// rename and coalesce an editor's write bursts, short enough to feel live.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(100);

/// Whether the platform's watcher reports a writer's close (inotify does;
/// FSEvents and ReadDirectoryChangesW do not: there a change is indexed when
/// its batch comes, as before).
const REPORTS_CLOSE: bool = cfg!(any(target_os = "linux", target_os = "android"));

thread_local! {
    /// Set while this thread runs the user callback, so `close()` called from
    /// inside it does not wait for itself.
    static IN_CALLBACK: Cell<bool> = const { Cell::new(false) };
}

pub struct Watcher {
    inner: Arc<Inner>,
}

struct Inner {
    indexer: Arc<Indexer>,
    callback: WatchCallback,
    closed: AtomicBool,
    /// Held (read) while a callback runs; `close` takes it (write) to wait.
    gate: RwLock<()>,
    /// The platform's watcher and the poller (see `watch_backend.rs`).
    backends: Mutex<Option<Backends>>,
    tracking: Mutex<Tracking>,
    worker: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Tracked paths to look at once more after the debounce window (see
    /// [`Watcher::look_again`]), and the worker's queue, to wake it.
    looks: Mutex<Vec<PathBuf>>,
    wake: tokio::sync::mpsc::UnboundedSender<Batch>,
    debounce: Duration,
}

#[derive(Default)]
struct Tracking {
    /// Host path → what it resolved to.
    files: HashMap<PathBuf, ResolvedPath>,
    /// Watched directory → number of tracked files (or symlink targets) in it.
    dirs: HashMap<PathBuf, usize>,
    /// Symlink target → the tracked link pointing at it.
    targets: HashMap<PathBuf, PathBuf>,
    /// Note folders (host paths): a new note under one is tracked and
    /// indexed, a new directory under one is watched.
    folders: Vec<PathBuf>,
    /// Watched directories gone from their path (deleted, or moved away),
    /// each with the existing ancestor held meanwhile to see it come back.
    lost: HashMap<PathBuf, PathBuf>,
}

impl Tracking {
    /// Drop one reference to `dir`; unwatch it with the last one.
    fn release_dir(&mut self, dir: &Path, backends: &Mutex<Option<Backends>>) {
        let Some(count) = self.dirs.get_mut(dir) else {
            return;
        };
        *count -= 1;
        if *count == 0 {
            self.dirs.remove(dir);
            if let Some(d) = lock(backends).as_mut() {
                // The directory may already be gone (and its watch with it).
                d.unwatch(dir);
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere must not turn every later call into a panic.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Watcher {
    /// Start a watcher that indexes through `indexer` on `runtime`.
    pub fn new(
        indexer: Arc<Indexer>,
        runtime: tokio::runtime::Handle,
        callback: WatchCallback,
    ) -> crate::Result<Self> {
        Self::with_debounce(indexer, runtime, callback, DEFAULT_DEBOUNCE)
    }

    /// Same, with an explicit debounce window.
    pub fn with_debounce(
        indexer: Arc<Indexer>,
        runtime: tokio::runtime::Handle,
        callback: WatchCallback,
        debounce: Duration,
    ) -> crate::Result<Self> {
        Self::with_options(indexer, runtime, callback, debounce, PollOptions::default())
    }

    /// Same, saying when directories are polled (see `watch_backend.rs`).
    pub fn with_options(
        indexer: Arc<Indexer>,
        runtime: tokio::runtime::Handle,
        callback: WatchCallback,
        debounce: Duration,
        poll: PollOptions,
    ) -> crate::Result<Self> {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Batch>();
        let backends = Backends::new(debounce, poll, tx.clone())?;
        let inner = Arc::new(Inner {
            indexer,
            callback,
            closed: AtomicBool::new(false),
            gate: RwLock::new(()),
            backends: Mutex::new(Some(backends)),
            tracking: Mutex::new(Tracking::default()),
            worker: Mutex::new(None),
            looks: Mutex::new(Vec::new()),
            wake: tx,
            debounce,
        });
        let worker = runtime.spawn(Arc::clone(&inner).run(rx));
        *lock(&inner.worker) = Some(worker);
        Ok(Self { inner })
    }

    /// Track a file (no-op if not watchable or already tracked).
    /// Fails with `WATCHER_ERROR` once closed, or if its directory cannot be
    /// watched (missing, inotify limit reached).
    pub fn track(&self, resolved: &ResolvedPath) -> crate::Result<()> {
        self.inner.track(resolved)
    }

    /// Look at a tracked file once more when the debounce window after now
    /// is over. The debouncer drops a file created and removed within one
    /// window — both events, as if nothing happened — which is right for a
    /// file nobody knew, wrong for one the session has just indexed itself
    /// (the agent's `write` made it): without this look its deletion a few
    /// milliseconds later would never be told (random sessions with
    /// deletions, seed 258).
    pub fn look_again(&self, resolved: &ResolvedPath) {
        let Some(host) = &resolved.host_path else {
            return;
        };
        if self.inner.is_closed() || self.inner.tracked(host).is_none() {
            return;
        }
        lock(&self.inner.looks).push(host.clone());
        // An empty batch: the worker takes the look and sleeps until it is due.
        let _ = self.inner.wake.send((Source::Native, Ok(Vec::new())));
    }

    /// Stop tracking a file; its directory watch goes with the last file in it.
    pub fn untrack(&self, resolved: &ResolvedPath) {
        if let Some(host) = &resolved.host_path {
            self.inner.untrack(host);
        }
    }

    /// Watch a note folder: `dirs` (the folder and the directories under
    /// it, as [`crate::fs::note_walk::walk`] lists them) get a directory
    /// watch each; a note file that appears under `root` later is tracked
    /// and indexed, a new directory under it watched (and its notes
    /// indexed). The notes already there are tracked with [`Watcher::track`].
    pub fn track_folder(&self, root: &Path, dirs: &[PathBuf]) -> crate::Result<()> {
        self.inner.track_folder(root, dirs)
    }

    /// Host paths currently tracked (sorted).
    pub fn tracked_paths(&self) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = lock(&self.inner.tracking).files.keys().cloned().collect();
        v.sort();
        v
    }

    /// Number of directory watches held.
    pub fn watched_dir_count(&self) -> usize {
        lock(&self.inner.tracking).dirs.len()
    }

    /// Watched directories that are polled (sorted).
    pub fn polled_dirs(&self) -> Vec<PathBuf> {
        let backends = lock(&self.inner.backends);
        let mut v: Vec<PathBuf> = backends.iter().flat_map(|b| b.polled()).cloned().collect();
        v.sort();
        v
    }

    /// Stop everything; idempotent. After it returns no callback runs.
    pub fn close(&self) {
        self.inner.close();
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.inner.close();
    }
}

impl Inner {
    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        if !IN_CALLBACK.with(Cell::get) {
            // Wait for a callback in flight; later ones see `closed`.
            drop(
                self.gate
                    .write()
                    .unwrap_or_else(std::sync::PoisonError::into_inner),
            );
        }
        // Joins the backends' threads: the debouncer's (at most one tick)
        // and the poller's (at most one look). Their handlers only send on
        // an unbounded channel, so they cannot be stuck on us.
        let backends = lock(&self.backends).take();
        if let Some(d) = backends {
            d.stop();
        }
        if let Some(w) = lock(&self.worker).take() {
            w.abort();
        }
    }

    fn emit(&self, event: WatchEvent) {
        let _gate = self
            .gate
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if self.is_closed() {
            return;
        }
        IN_CALLBACK.with(|c| c.set(true));
        let result =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (self.callback)(event)));
        IN_CALLBACK.with(|c| c.set(false));
        if result.is_err() {
            tracing::error!("file watcher callback panicked; event dropped");
        }
    }

    fn error(&self, message: String) {
        tracing::warn!("{message}");
        self.emit(WatchEvent::Error { message });
    }

    fn track(&self, resolved: &ResolvedPath) -> crate::Result<()> {
        if self.is_closed() {
            return Err(Error::Watcher("watcher is closed".into()));
        }
        let (true, Some(host)) = (resolved.watchable, resolved.host_path.as_ref()) else {
            return Ok(());
        };
        let mut tracking = lock(&self.tracking);
        if tracking.files.contains_key(host) {
            return Ok(());
        }
        // A symlinked file changes where its target lives: watch that
        // directory too and map the target's events back to the link.
        let target = std::fs::canonicalize(host)
            .ok()
            .filter(|t| t != host && !tracking.targets.contains_key(t));
        let mut dirs: Vec<&Path> = host.parent().into_iter().collect();
        if let Some(t) = target.as_deref().and_then(Path::parent) {
            dirs.push(t);
        }
        for dir in &dirs {
            if tracking.lost.contains_key(*dir) && dir.is_dir() {
                self.rearm(&mut tracking, dir)?;
            }
            if !tracking.dirs.contains_key(*dir) {
                if let Err(e) = self.watch_dir(dir) {
                    // Roll back what this call already took.
                    for done in dirs.iter().take_while(|d| *d != dir) {
                        tracking.release_dir(done, &self.backends);
                    }
                    return Err(e);
                }
            }
            *tracking.dirs.entry(dir.to_path_buf()).or_default() += 1;
        }
        if let Some(t) = target {
            tracking.targets.insert(t, host.clone());
        }
        tracking.files.insert(host.clone(), resolved.clone());
        Ok(())
    }

    fn track_folder(&self, root: &Path, dirs: &[PathBuf]) -> crate::Result<()> {
        if self.is_closed() {
            return Err(Error::Watcher("watcher is closed".into()));
        }
        let mut tracking = lock(&self.tracking);
        if !tracking.folders.iter().any(|f| f == root) {
            tracking.folders.push(root.to_path_buf());
        }
        for dir in dirs {
            self.hold_dir(&mut tracking, dir)?;
        }
        Ok(())
    }

    /// One more reference to a watched directory (watching it with the first).
    fn hold_dir(&self, tracking: &mut Tracking, dir: &Path) -> crate::Result<()> {
        if !tracking.dirs.contains_key(dir) {
            self.watch_dir(dir)?;
        }
        *tracking.dirs.entry(dir.to_path_buf()).or_default() += 1;
        Ok(())
    }

    /// Whether `path` lies under a note folder, below no hidden entry.
    fn in_note_folder(&self, path: &Path) -> bool {
        lock(&self.tracking).folders.iter().any(|root| {
            path.strip_prefix(root).is_ok_and(|rest| {
                !rest.as_os_str().is_empty()
                    && !rest
                        .components()
                        .any(|c| crate::fs::note_walk::is_hidden(c.as_os_str()))
            })
        })
    }

    /// A path under a note folder that is not tracked yet: a note file is
    /// tracked and indexed; a directory is watched and its notes indexed.
    async fn appeared_in_folder(&self, path: &Path) {
        let Ok(meta) = tokio::fs::metadata(path).await else {
            return; // gone again: nothing was stored for it
        };
        let files: Vec<PathBuf> = if meta.is_dir() {
            let (dirs, files) = crate::fs::note_walk::walk(path);
            let mut tracking = lock(&self.tracking);
            let new: Vec<&PathBuf> = dirs
                .iter()
                .filter(|d| !tracking.dirs.contains_key(*d))
                .collect();
            for d in new {
                if let Err(e) = self.hold_dir(&mut tracking, d) {
                    drop(tracking);
                    self.error(format!("watching note folder {}: {e}", d.display()));
                    return;
                }
            }
            files
        } else if meta.is_file() && crate::fs::note_walk::is_note_path(path) {
            vec![path.to_path_buf()]
        } else {
            return;
        };
        for f in files {
            if self.is_closed() || self.tracked(&f).is_some() {
                continue;
            }
            let Some(res) = self.indexer.resolver.resolve_host_path(&f) else {
                continue;
            };
            if let Err(e) = self.track(&res) {
                self.error(format!("tracking note {}: {e}", res.source.path));
                continue;
            }
            self.recheck(&res).await;
        }
    }

    /// Watched directory `dir` is no longer at its path: drop its watch
    /// and hold its nearest existing ancestor instead — or, when a new
    /// directory is there already, watch that. Returns the tracked files
    /// in it, to re-check.
    fn lose_dir(&self, dir: &Path) -> Vec<PathBuf> {
        let mut tracking = lock(&self.tracking);
        if !tracking.dirs.contains_key(dir) || tracking.lost.contains_key(dir) {
            return Vec::new();
        }
        if let Some(d) = lock(&self.backends).as_mut() {
            // Deleted: notify dropped the watch already. Moved: it follows
            // the directory, not the path.
            d.unwatch(dir);
        }
        let ancestor = dir.ancestors().skip(1).find(|a| a.is_dir());
        let held = match ancestor {
            _ if dir.is_dir() => self.watch_dir(dir).map(|()| None),
            Some(a) => self
                .hold_dir(&mut tracking, a)
                .map(|()| Some(a.to_path_buf())),
            None => Ok(None),
        };
        match held {
            Ok(Some(a)) => {
                tracking.lost.insert(dir.to_path_buf(), a);
            }
            Ok(None) => {}
            Err(e) => {
                drop(tracking);
                self.error(format!("watching for {} to come back: {e}", dir.display()));
                return Vec::new();
            }
        }
        files_in(&tracking, dir)
    }

    /// Lost directories that are back: watched again; their tracked files
    /// are returned, to re-check. One still missing has its held ancestor
    /// moved down to the nearest existing one.
    fn rearm_lost(&self) -> Vec<PathBuf> {
        let mut tracking = lock(&self.tracking);
        let lost: Vec<(PathBuf, PathBuf)> = tracking
            .lost
            .iter()
            .map(|(d, a)| (d.clone(), a.clone()))
            .collect();
        let mut out = Vec::new();
        let mut errors = Vec::new();
        for (dir, held) in lost {
            if !tracking.dirs.contains_key(&dir) {
                // Its files were untracked meanwhile.
                tracking.lost.remove(&dir);
                tracking.release_dir(&held, &self.backends);
            } else if dir.is_dir() {
                match self.rearm(&mut tracking, &dir) {
                    Ok(()) => out.extend(files_in(&tracking, &dir)),
                    Err(e) => errors.push(format!("watching {} again: {e}", dir.display())),
                }
            } else if let Some(a) = dir.ancestors().skip(1).find(|a| a.is_dir()) {
                if a != held && self.hold_dir(&mut tracking, a).is_ok() {
                    tracking.lost.insert(dir.clone(), a.to_path_buf());
                    tracking.release_dir(&held, &self.backends);
                }
            }
        }
        // The callback runs without the lock (it may call back in).
        drop(tracking);
        for e in errors {
            self.error(e);
        }
        out
    }

    /// Lost directory `dir` is back: watch it, release its ancestor.
    fn rearm(&self, tracking: &mut Tracking, dir: &Path) -> crate::Result<()> {
        self.watch_dir(dir)?;
        if let Some(held) = tracking.lost.remove(dir) {
            tracking.release_dir(&held, &self.backends);
        }
        Ok(())
    }

    fn watch_dir(&self, dir: &Path) -> crate::Result<()> {
        let mut backends = lock(&self.backends);
        let Some(d) = backends.as_mut() else {
            return Err(Error::Watcher("watcher is closed".into()));
        };
        d.watch(dir)
    }

    fn untrack(&self, host: &Path) {
        let mut tracking = lock(&self.tracking);
        if tracking.files.remove(host).is_none() {
            return;
        }
        if let Some(dir) = host.parent() {
            tracking.release_dir(dir, &self.backends);
        }
        let targets: Vec<PathBuf> = tracking
            .targets
            .iter()
            .filter(|(_, link)| *link == host)
            .map(|(t, _)| t.clone())
            .collect();
        for t in targets {
            tracking.targets.remove(&t);
            if let Some(dir) = t.parent() {
                tracking.release_dir(dir, &self.backends);
            }
        }
    }

    /// The tracked path an event path stands for: itself, or the symlink
    /// whose target it is.
    fn tracked_for(&self, path: &Path) -> Option<PathBuf> {
        let tracking = lock(&self.tracking);
        if tracking.files.contains_key(path) {
            Some(path.to_path_buf())
        } else {
            tracking.targets.get(path).cloned()
        }
    }

    fn tracked(&self, host: &Path) -> Option<ResolvedPath> {
        lock(&self.tracking).files.get(host).cloned()
    }

    async fn run(self: Arc<Self>, mut rx: tokio::sync::mpsc::UnboundedReceiver<Batch>) {
        let mut unsettled = Unsettled::default();
        loop {
            let looks = std::mem::take(&mut *lock(&self.looks));
            for p in looks {
                // Past the window of the events it follows, and one more.
                let at = tokio::time::Instant::now() + self.debounce * 2;
                unsettled.look_at(p, at);
            }
            let due = unsettled.next_due();
            let batch = tokio::select! {
                b = rx.recv() => match b {
                    Some(b) => Some(b),
                    None => break,
                },
                () = tokio::time::sleep_until(due.unwrap_or_else(tokio::time::Instant::now)), if due.is_some() => None,
            };
            if self.is_closed() {
                break;
            }
            match batch {
                Some((source, Ok(events))) => self.process(events, source, &mut unsettled).await,
                Some((_, Err(errors))) => {
                    for e in errors {
                        self.error(format!("file watcher: {e}"));
                    }
                }
                // A writer kept a file open past the settle limit: index it as it is.
                None => {
                    for p in unsettled.take_due() {
                        if self.is_closed() {
                            return;
                        }
                        if let Some(res) = self.tracked(&p) {
                            self.recheck(&res).await;
                        }
                    }
                }
            }
        }
    }

    /// One debounced batch: pair renames, then re-check every tracked path
    /// the batch mentions, in order, once — but a path whose writer has not
    /// closed it yet waits in `unsettled` (see "Torn writes"; a poller
    /// reports no close, so a polled batch does not wait for one).
    async fn process(
        &self,
        events: Vec<DebouncedEvent>,
        source: Source,
        unsettled: &mut Unsettled,
    ) {
        let reports_close = REPORTS_CLOSE && source == Source::Native;
        let mut renames: Vec<(PathBuf, PathBuf)> = Vec::new();
        let mut mentioned: Vec<PathBuf> = Vec::new();
        // Per event path: still open for writing after the batch?
        let mut open: HashMap<PathBuf, bool> = HashMap::new();
        // Per event path: when the batch last heard of it.
        let mut heard: HashMap<PathBuf, std::time::Instant> = HashMap::new();
        // Watched directories an event says left their path (or whose
        // ancestor did).
        let mut gone: Vec<PathBuf> = Vec::new();
        let mut rescan = false;
        for ev in events {
            if ev.need_rescan() {
                rescan = true; // the kernel queue overflowed: events were lost
                continue;
            }
            if matches!(
                ev.kind,
                EventKind::Remove(_) | EventKind::Modify(ModifyKind::Name(RenameMode::From))
            ) {
                // The debouncer drops the events under a removed path: a
                // watched directory below it went too.
                let tracking = lock(&self.tracking);
                for p in &ev.paths {
                    gone.extend(tracking.dirs.keys().filter(|d| d.starts_with(p)).cloned());
                }
            }
            if let Some(o) = leaves_open(&ev.kind) {
                for p in &ev.paths {
                    open.insert(p.clone(), o);
                }
            }
            for p in &ev.paths {
                let t = heard.entry(p.clone()).or_insert(ev.time);
                *t = (*t).max(ev.time);
            }
            match ev.kind {
                // Opening or reading (our own indexer does) changes nothing.
                EventKind::Access(AccessKind::Close(AccessMode::Write)) => {}
                EventKind::Access(_) | EventKind::Other => continue,
                EventKind::Modify(ModifyKind::Name(RenameMode::Both)) if ev.paths.len() == 2 => {
                    renames.push((ev.paths[0].clone(), ev.paths[1].clone()));
                    continue;
                }
                _ => {}
            }
            mentioned.extend(ev.paths.iter().cloned());
        }
        if rescan {
            mentioned.extend(lock(&self.tracking).files.keys().cloned());
        }

        let mut check: Vec<PathBuf> = Vec::new();
        let push = |check: &mut Vec<PathBuf>, p: &Path| {
            if !check.iter().any(|c| c == p) {
                check.push(p.to_path_buf());
            }
        };
        let mut handled: Vec<PathBuf> = Vec::new();
        for (from, to) in renames {
            if self.is_closed() {
                return;
            }
            match self.tracked(&from) {
                Some(from_res) if !exists(&from).await && is_file(&to).await => {
                    self.rename(&from_res, &to).await;
                    handled.push(from);
                    handled.push(to);
                }
                // Not a move of a tracked file (or its old path is back
                // already, as in a backup-and-rewrite save): ordinary
                // changes at both paths.
                _ => mentioned.extend([from, to]),
            }
        }
        // Directories back at their path, and those just gone: their
        // tracked files are re-checked.
        mentioned.extend(self.rearm_lost());
        for d in gone {
            mentioned.extend(self.lose_dir(&d));
        }
        let mut appeared: Vec<PathBuf> = Vec::new();
        let mut writing: Vec<PathBuf> = Vec::new();
        // Per tracked path: the last time the batch heard of it (or of its
        // link's target).
        let mut last_heard: HashMap<PathBuf, std::time::Instant> = HashMap::new();
        for p in mentioned {
            if let Some(tracked) = self.tracked_for(&p) {
                if reports_close && open.get(&p) == Some(&true) {
                    writing.push(tracked.clone());
                } else {
                    writing.retain(|w| *w != tracked);
                }
                if let Some(&t) = heard.get(&p) {
                    let e = last_heard.entry(tracked.clone()).or_insert(t);
                    *e = (*e).max(t);
                }
                push(&mut check, &tracked);
            } else if !handled.contains(&p) && self.in_note_folder(&p) {
                push(&mut appeared, &p);
            }
        }
        for p in appeared {
            if self.is_closed() {
                return;
            }
            self.appeared_in_folder(&p).await;
        }
        for p in check {
            if self.is_closed() {
                return;
            }
            if handled.contains(&p) {
                unsettled.settled(&p);
                continue;
            }
            // Still being written, or written again since the batch's events.
            let wait = writing.contains(&p)
                || match last_heard.get(&p) {
                    Some(&t) => written_after(&p, t).await,
                    None => false,
                };
            if wait {
                unsettled.wait(&p);
                continue;
            }
            unsettled.settled(&p);
            if let Some(res) = self.tracked(&p) {
                self.recheck(&res).await;
            }
        }
    }

    /// Re-stat and re-index one tracked path. The current version is
    /// reported even when the store already held it (`Unchanged`): another
    /// manager on the same store may have indexed the change first (its
    /// `observeWrite`), and this session may still hold the older version.
    /// The session ignores a version it already has.
    ///
    /// The report is stamped before the file is read: the read may catch an
    /// in-place save truncated, and a session that read the file itself once
    /// that save was done must hold on to its newer text however long the
    /// store write took (see [`WatchEvent`]).
    async fn recheck(&self, res: &ResolvedPath) {
        let read_at = std::time::Instant::now();
        match self.indexer.index_resolved(res).await {
            Ok(r) => self.emit(WatchEvent::Updated {
                object_id: r.object_id,
                doc: r.doc,
                read_at,
            }),
            // Replaced by a directory (or a FIFO …): the file is gone too. Reported even when
            // another manager stored the deletion first (the session ignores a version it has).
            Err(Error::FileNotFound { .. } | Error::NotAFile { .. }) => {
                match self.indexer.index_file_deletion(res).await {
                    Ok(r) => self.emit(WatchEvent::Deleted {
                        object_id: r.object_id,
                        doc: r.doc,
                        read_at,
                    }),
                    Err(e) => self.error(format!("recording deletion of {}: {e}", res.source.path)),
                }
            }
            Err(e) => self.error(format!("indexing {}: {e}", res.source.path)),
        }
    }

    /// A tracked file moved to `to`: deletion at the old path, new object at
    /// the new one, linked both ways; then track the new path.
    async fn rename(&self, from: &ResolvedPath, to: &Path) {
        let Some(to_res) = self.indexer.resolver.resolve_host_path(to) else {
            // Moved somewhere this client cannot name: just a deletion.
            self.recheck(from).await;
            return;
        };
        let from_id = from.source.file_object_id();
        let to_id = to_res.source.file_object_id();
        if let Err(e) = self.indexer.index_file_deletion_renamed(from, &to_id).await {
            self.error(format!("recording rename of {}: {e}", from.source.path));
            return;
        }
        match self.indexer.index_renamed(&to_res, &from_id).await {
            Ok(r) => {
                if let Err(e) = self.track(&to_res) {
                    self.error(format!("tracking {}: {e}", to_res.source.path));
                }
                self.emit(WatchEvent::Renamed {
                    from_id,
                    to_id,
                    to_doc: r.doc,
                });
            }
            Err(e) => self.error(format!("indexing renamed {}: {e}", to_res.source.path)),
        }
    }
}

/// The tracked paths whose file (or symlink target) lies in `dir`.
fn files_in(tracking: &Tracking, dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = tracking
        .files
        .keys()
        .filter(|f| f.parent() == Some(dir))
        .cloned()
        .chain(
            tracking
                .targets
                .iter()
                .filter(|(t, _)| t.parent() == Some(dir))
                .map(|(_, link)| link.clone()),
        )
        .collect();
    out.sort();
    out.dedup();
    out
}

async fn exists(p: &Path) -> bool {
    tokio::fs::symlink_metadata(p).await.is_ok()
}

async fn is_file(p: &Path) -> bool {
    tokio::fs::metadata(p).await.is_ok_and(|m| m.is_file())
}
