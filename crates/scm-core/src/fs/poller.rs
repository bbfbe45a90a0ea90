//! The watcher's poller, for directories whose changes the platform's
//! watcher cannot see (`watch_backend.rs` decides which). Every interval it
//! lists each polled directory and compares each entry's stamp
//! (modification time to the nanosecond, size, inode) with the last look.
//!
//! - **Why not notify's `PollWatcher`:** it compares modification times in
//!   whole seconds, so a write in the same second as its last look was never
//!   seen (measured: five writes 300 ms after the look, none reported).
//! - **Settled before reported.** A poll has no "writer closed the file" to
//!   wait for, so a changed entry is reported once it has kept its new stamp
//!   for one more look (a save in progress is not stored half-written), or
//!   after [`SETTLE_LOOKS`] looks at most (a log that never stops growing is
//!   still followed). A change is thus reported one to two intervals late.
//!   Deletions are reported at once.
//! - **Threads.** One thread per poller; the directory I/O runs without the
//!   lock `watch`/`unwatch` take. It waits on a channel with the interval as
//!   timeout, so `stop` ends it at once (and joins it).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use notify::event::{CreateKind, DataChange, ModifyKind, RemoveKind};
use notify::{Event, EventKind};
use notify_debouncer_full::DebouncedEvent;

use crate::error::Error;

/// Takes one look's events; false once nobody listens (the thread ends).
pub(super) type Report = Box<dyn Fn(Vec<DebouncedEvent>) -> bool + Send>;

/// A changed entry still changing after this many looks is reported as it is.
pub const SETTLE_LOOKS: u32 = 3;

/// What a look records of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    mtime: Option<SystemTime>,
    len: u64,
    ino: u64,
    dir: bool,
}

#[derive(Debug)]
struct Entry {
    /// The stamp last reported (or found by the first look); `None`: the
    /// entry appeared since and has not been reported yet.
    reported: Option<Stamp>,
    /// The stamp of the last look.
    seen: Stamp,
    /// Looks since `seen` first differed from `reported`.
    pending: u32,
}

impl Entry {
    /// An entry as a look found it: `known` (the first look, or reported
    /// since) or new (reported once it has settled).
    fn found(s: Stamp, known: bool) -> Self {
        Self {
            reported: known.then_some(s),
            seen: s,
            pending: 0,
        }
    }
}

#[derive(Debug, Default)]
struct Dir {
    /// Whether the directory was there at the last look.
    present: bool,
    entries: HashMap<PathBuf, Entry>,
}

type Dirs = Arc<Mutex<HashMap<PathBuf, Dir>>>;

pub(super) struct Poller {
    dirs: Dirs,
    stop: Option<Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

fn lock(m: &Mutex<HashMap<PathBuf, Dir>>) -> MutexGuard<'_, HashMap<PathBuf, Dir>> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Poller {
    /// Starts the polling thread; each look's events go to `report`.
    pub(super) fn new(interval: Duration, report: Report) -> crate::Result<Self> {
        let dirs: Dirs = Arc::default();
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let looked = Arc::clone(&dirs);
        let thread = std::thread::Builder::new()
            .name("scm-poller".into())
            .spawn(move || run(&looked, interval, &stopped, &report))
            .map_err(|e| Error::Watcher(format!("cannot start polling: {e}")))?;
        Ok(Self {
            dirs,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Polls `dir` from now on; what is in it now is the known state.
    pub(super) fn watch(&self, dir: &Path) -> crate::Result<()> {
        let Some(list) = list(dir) else {
            return Err(Error::Watcher(format!(
                "cannot poll {}: not a readable directory",
                dir.display()
            )));
        };
        let entries = list
            .into_iter()
            .map(|(p, s)| (p, Entry::found(s, true)))
            .collect();
        let d = Dir {
            present: true,
            entries,
        };
        lock(&self.dirs).insert(dir.to_path_buf(), d);
        Ok(())
    }

    pub(super) fn unwatch(&self, dir: &Path) {
        lock(&self.dirs).remove(dir);
    }

    /// Ends the thread (at once) and joins it.
    pub(super) fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Poller {
    fn drop(&mut self) {
        self.halt();
    }
}

fn run(dirs: &Dirs, interval: Duration, stopped: &Receiver<()>, report: &Report) {
    loop {
        match stopped.recv_timeout(interval) {
            Err(RecvTimeoutError::Timeout) => {}
            _ => return,
        }
        let paths: Vec<PathBuf> = lock(dirs).keys().cloned().collect();
        let mut events = Vec::new();
        for p in paths {
            // The I/O without the lock (a network filesystem may be slow).
            let now = list(&p);
            if let Some(d) = lock(dirs).get_mut(&p) {
                look(&p, d, now, &mut events);
            }
        }
        if !events.is_empty() && !report(events) {
            return; // the watcher is gone
        }
    }
}

/// Compares one directory's listing `now` with what `d` knows, updating it,
/// and adds the events to report.
fn look(
    dir: &Path,
    d: &mut Dir,
    now: Option<HashMap<PathBuf, Stamp>>,
    events: &mut Vec<DebouncedEvent>,
) {
    let at = Instant::now();
    let mut event = |kind: EventKind, p: &Path| {
        events.push(DebouncedEvent::new(
            Event::new(kind).add_path(p.to_path_buf()),
            at,
        ));
    };
    let Some(now) = now else {
        if d.present {
            // Gone (or unreadable): its entries with it.
            for (p, e) in d.entries.drain() {
                if e.reported.is_some() {
                    event(EventKind::Remove(RemoveKind::Any), &p);
                }
            }
            event(EventKind::Remove(RemoveKind::Folder), dir);
            d.present = false;
        }
        return;
    };
    d.present = true;
    d.entries.retain(|p, e| {
        let keep = now.contains_key(p);
        if !keep && e.reported.is_some() {
            event(EventKind::Remove(RemoveKind::Any), p);
        }
        keep
    });
    for (p, s) in now {
        let e = d.entries.entry(p.clone()).or_insert(Entry::found(s, false));
        let stable = e.seen == s;
        e.seen = s;
        if e.reported == Some(s) {
            e.pending = 0;
            continue;
        }
        e.pending += 1;
        // A new entry is reported at the look after the one that found it.
        let settled = (stable && e.pending > 1) || e.pending >= SETTLE_LOOKS;
        if !settled {
            continue;
        }
        let kind = match e.reported {
            None if s.dir => EventKind::Create(CreateKind::Folder),
            None => EventKind::Create(CreateKind::File),
            // A directory's own stamp changes with its entries: those are
            // its own poll's business (a note folder polls each one).
            Some(_) if s.dir => {
                e.reported = Some(s);
                e.pending = 0;
                continue;
            }
            Some(_) => EventKind::Modify(ModifyKind::Data(DataChange::Any)),
        };
        event(kind, &p);
        e.reported = Some(s);
        e.pending = 0;
    }
}

/// The entries of `dir` with their stamps (a symlink's target's, when it
/// has one); `None` when it is not a readable directory.
fn list(dir: &Path) -> Option<HashMap<PathBuf, Stamp>> {
    let rd = std::fs::read_dir(dir).ok()?;
    let mut out = HashMap::new();
    for entry in rd.flatten() {
        let p = entry.path();
        let Ok(m) = std::fs::metadata(&p).or_else(|_| std::fs::symlink_metadata(&p)) else {
            continue; // gone between the listing and the stat
        };
        out.insert(p, stamp(&m));
    }
    Some(out)
}

#[cfg(unix)]
fn stamp(m: &std::fs::Metadata) -> Stamp {
    use std::os::unix::fs::MetadataExt;
    Stamp {
        mtime: m.modified().ok(),
        len: m.len(),
        ino: m.ino(),
        dir: m.is_dir(),
    }
}

#[cfg(not(unix))]
fn stamp(m: &std::fs::Metadata) -> Stamp {
    Stamp {
        mtime: m.modified().ok(),
        len: m.len(),
        ino: 0,
        dir: m.is_dir(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(mtime_ns: u64, len: u64) -> Stamp {
        Stamp {
            mtime: Some(SystemTime::UNIX_EPOCH + Duration::from_nanos(mtime_ns)),
            len,
            ino: 1,
            dir: false,
        }
    }

    fn kinds(events: &[DebouncedEvent]) -> Vec<(EventKind, PathBuf)> {
        events
            .iter()
            .map(|e| (e.kind, e.paths[0].clone()))
            .collect()
    }

    fn known(entries: &[(&str, Stamp)]) -> Dir {
        Dir {
            present: true,
            entries: entries
                .iter()
                .map(|(p, s)| (PathBuf::from(p), Entry::found(*s, true)))
                .collect(),
        }
    }

    fn listing(entries: &[(&str, Stamp)]) -> Option<HashMap<PathBuf, Stamp>> {
        Some(
            entries
                .iter()
                .map(|(p, s)| (PathBuf::from(p), *s))
                .collect(),
        )
    }

    const MODIFY: EventKind = EventKind::Modify(ModifyKind::Data(DataChange::Any));

    #[test]
    fn a_change_within_the_same_second_is_reported_once_it_has_settled() {
        let mut d = known(&[("/d/a", st(1_000_000_000, 3))]);
        let mut ev = Vec::new();
        // 300 ms later in the same second, same size: a new stamp all the same.
        look(
            Path::new("/d"),
            &mut d,
            listing(&[("/d/a", st(1_300_000_000, 3))]),
            &mut ev,
        );
        assert!(ev.is_empty(), "not reported while it may still be written");
        look(
            Path::new("/d"),
            &mut d,
            listing(&[("/d/a", st(1_300_000_000, 3))]),
            &mut ev,
        );
        assert_eq!(kinds(&ev), vec![(MODIFY, PathBuf::from("/d/a"))]);
        ev.clear();
        look(
            Path::new("/d"),
            &mut d,
            listing(&[("/d/a", st(1_300_000_000, 3))]),
            &mut ev,
        );
        assert!(ev.is_empty(), "reported once");
    }

    #[test]
    fn a_file_still_growing_is_reported_after_the_settle_limit() {
        let mut d = known(&[("/d/log", st(1, 10))]);
        let mut ev = Vec::new();
        for i in 0..SETTLE_LOOKS {
            assert!(ev.is_empty(), "look {i}");
            let s = st(2 + u64::from(i), 20 + u64::from(i));
            look(Path::new("/d"), &mut d, listing(&[("/d/log", s)]), &mut ev);
        }
        assert_eq!(kinds(&ev), vec![(MODIFY, PathBuf::from("/d/log"))]);
    }

    #[test]
    fn new_entries_are_created_a_look_later_and_deletions_at_once() {
        let mut d = known(&[("/d/a", st(1, 1))]);
        let mut ev = Vec::new();
        let both = [("/d/a", st(1, 1)), ("/d/b", st(2, 2))];
        look(Path::new("/d"), &mut d, listing(&both), &mut ev);
        assert!(ev.is_empty());
        look(Path::new("/d"), &mut d, listing(&both), &mut ev);
        assert_eq!(
            kinds(&ev),
            vec![(EventKind::Create(CreateKind::File), PathBuf::from("/d/b"))]
        );
        ev.clear();
        look(
            Path::new("/d"),
            &mut d,
            listing(&[("/d/b", st(2, 2))]),
            &mut ev,
        );
        assert_eq!(
            kinds(&ev),
            vec![(EventKind::Remove(RemoveKind::Any), PathBuf::from("/d/a"))]
        );
        ev.clear();
        // The directory itself goes: what was reported in it, then itself.
        look(Path::new("/d"), &mut d, None, &mut ev);
        assert_eq!(
            kinds(&ev),
            vec![
                (EventKind::Remove(RemoveKind::Any), PathBuf::from("/d/b")),
                (EventKind::Remove(RemoveKind::Folder), PathBuf::from("/d")),
            ]
        );
        ev.clear();
        look(Path::new("/d"), &mut d, None, &mut ev);
        assert!(ev.is_empty(), "reported gone once");
    }
}
