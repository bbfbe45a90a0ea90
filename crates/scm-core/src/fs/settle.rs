//! When a tracked path's change is ready to be indexed (the watcher's
//! "Torn writes"): the debouncer hands an event over once it is older than
//! its window, so a slow in-place save (truncate, write, … close) can arrive
//! half-written. Where the platform reports a writer's close (inotify's
//! `IN_CLOSE_WRITE`), a path whose last write in a batch has no close after
//! it waits for that close, or for [`SETTLE_LIMIT`] at most (a writer that
//! keeps the file open, a log, is still followed). No API says "this writer
//! is done" short of the close, hence the bounded wait. A batch handled late
//! can also meet the *next* save under way: its last event is the earlier
//! save's close, and the file is truncated, not yet written. A path whose
//! file was modified after the batch's last event of it waits the same way
//! ([`written_after`]): that save's own events are coming.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use notify::event::{AccessKind, AccessMode, ModifyKind};
use notify::EventKind;

/// How long a write whose writer has not closed the file waits for the
/// close before the file is indexed anyway (see the module docs).
pub const SETTLE_LIMIT: Duration = Duration::from_millis(1_000);

/// Tracked paths written to whose writer has not closed them yet, with the
/// time they are indexed anyway.
#[derive(Default)]
pub(super) struct Unsettled {
    due: HashMap<PathBuf, tokio::time::Instant>,
}

impl Unsettled {
    /// `p` waits for its writer's close, [`SETTLE_LIMIT`] at most.
    pub(super) fn wait(&mut self, p: &Path) {
        self.look_at(p.to_path_buf(), tokio::time::Instant::now() + SETTLE_LIMIT);
    }

    /// `p` is looked at again at `at` (unless it already waits).
    pub(super) fn look_at(&mut self, p: PathBuf, at: tokio::time::Instant) {
        self.due.entry(p).or_insert(at);
    }

    /// `p` was indexed (or handled otherwise): it waits no more.
    pub(super) fn settled(&mut self, p: &Path) {
        self.due.remove(p);
    }

    pub(super) fn next_due(&self) -> Option<tokio::time::Instant> {
        self.due.values().min().copied()
    }

    /// The paths whose wait is over, removed.
    pub(super) fn take_due(&mut self) -> Vec<PathBuf> {
        let now = tokio::time::Instant::now();
        let mut out: Vec<PathBuf> = self
            .due
            .iter()
            .filter(|(_, &t)| t <= now)
            .map(|(p, _)| p.clone())
            .collect();
        out.sort();
        for p in &out {
            self.due.remove(p);
        }
        out
    }
}

/// After this event, is the path still open for writing? `None`: the event
/// says nothing about it.
pub(super) fn leaves_open(kind: &EventKind) -> Option<bool> {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => Some(false),
        EventKind::Modify(ModifyKind::Data(_) | ModifyKind::Any) | EventKind::Create(_) => {
            Some(true)
        }
        EventKind::Access(_) | EventKind::Other => None,
        _ => Some(false),
    }
}

/// Whether the file at `p` was modified after `heard`, the last event of it
/// the batch holds: a save the batch does not include is under way (the file
/// may be truncated and not yet written) or done, and its own events are on
/// their way. The kernel stamps a write no later than the event that reports
/// it arrives, so a write the batch includes never counts. A file stamped in
/// the future (clock skew, `touch -d`) waits [`SETTLE_LIMIT`] at most.
///
/// The kernel's stamp comes from a coarse clock (one tick, 1–10 ms, behind
/// the precise one), so a save truncated within a tick of the earlier save's
/// close can look older than it. An empty file, what a truncated save looks
/// like, therefore counts from [`EMPTY_MARGIN`] earlier; a file really
/// emptied is indexed [`SETTLE_LIMIT`] later at most.
pub(super) async fn written_after(p: &Path, heard: std::time::Instant) -> bool {
    let Ok(meta) = tokio::fs::metadata(p).await else {
        return false;
    };
    let Ok(modified) = meta.modified() else {
        return false;
    };
    let margin = if meta.len() == 0 {
        EMPTY_MARGIN
    } else {
        Duration::ZERO
    };
    std::time::SystemTime::now()
        .checked_sub(heard.elapsed() + margin)
        .is_some_and(|since| modified > since)
}

/// See [`written_after`]: several ticks, and the time a loaded machine takes
/// between a close and the debouncer hearing of it.
const EMPTY_MARGIN: Duration = Duration::from_millis(50);
