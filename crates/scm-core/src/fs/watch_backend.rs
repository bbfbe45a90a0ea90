//! Where a watched directory's events come from: the platform's watcher
//! (inotify, FSEvents, ReadDirectoryChangesW) and, for directories whose
//! changes it cannot see, the poller (`poller.rs`, which lists the
//! directory and compares its entries' stamps every interval).
//!
//! Why a poller at all: the platform's watcher only hears changes made
//! through this kernel. A file changed by another machine on NFS or SMB, by
//! Windows on WSL's `/mnt/c` (9p), or behind an sshfs (FUSE) mount sends no
//! event, and the agent would keep working on a version that is gone. The
//! directory is then polled as well ([`PollMode::Auto`]), as is one the
//! platform's watcher refuses (the inotify watch limit reached).
//! [`PollMode::Always`] polls every directory instead of the platform's
//! watcher (an escape hatch where its events are wrong or exhausted);
//! [`PollMode::Never`] never polls.
//!
//! What polling gives up: a poll sees a write when its interval comes, not
//! when the writer closes the file, so instead of the watcher's torn-write
//! guard (it waits for the close inotify reports) the poller reports a
//! change once it has settled, one to two intervals late; a rename reads as
//! a deletion and a new file.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use notify::{RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{new_debouncer, DebounceEventResult, Debouncer, RecommendedCache};

use super::poller::Poller;
use crate::error::Error;

/// When watched directories are polled (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PollMode {
    /// The platform's watcher; a directory on a network filesystem, or one
    /// it cannot take, is polled as well.
    #[default]
    Auto,
    /// Poll every directory; the platform's watcher is not used.
    Always,
    /// Only the platform's watcher.
    Never,
}

impl PollMode {
    /// `"auto"`, `"always"`, `"never"`.
    pub fn parse(s: &str) -> crate::Result<Self> {
        match s {
            "auto" => Ok(Self::Auto),
            "always" => Ok(Self::Always),
            "never" => Ok(Self::Never),
            other => Err(Error::InvalidArgument(format!(
                "watchPoll must be \"auto\", \"always\" or \"never\", got {other:?}"
            ))),
        }
    }
}

/// How the watcher polls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PollOptions {
    pub mode: PollMode,
    /// Time between two looks at a polled directory.
    pub interval: Duration,
}

/// One second: a change made elsewhere is reported one to two seconds
/// later (it must settle, see `poller.rs`), by the model's next call in most
/// turns; a directory of a few hundred entries costs a few hundred `stat`s
/// a second.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(1);

impl PollOptions {
    /// From the host's settings (`watchPoll`, `watchPollMs`); unset parts
    /// keep the defaults. The interval is 10 ms to one hour.
    pub fn from_settings(mode: Option<&str>, interval_ms: Option<i64>) -> crate::Result<Self> {
        let mut o = Self::default();
        if let Some(m) = mode {
            o.mode = PollMode::parse(m)?;
        }
        if let Some(ms) = interval_ms {
            if !(10..=3_600_000).contains(&ms) {
                return Err(Error::InvalidArgument(format!(
                    "watchPollMs must be 10 to 3600000 (milliseconds), got {ms}"
                )));
            }
            o.interval = Duration::from_millis(ms as u64);
        }
        Ok(o)
    }
}

impl Default for PollOptions {
    fn default() -> Self {
        Self {
            mode: PollMode::Auto,
            interval: DEFAULT_POLL_INTERVAL,
        }
    }
}

/// Which backend a batch came from: a polled batch has no close events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Source {
    Native,
    Poll,
}

pub(super) type Batch = (Source, DebounceEventResult);
type Sender = tokio::sync::mpsc::UnboundedSender<Batch>;

/// The debounced backends of one watcher and which directories each holds.
pub(super) struct Backends {
    poll: PollOptions,
    tx: Sender,
    native: Option<Debouncer<RecommendedWatcher, RecommendedCache>>,
    /// Made at the first directory that needs it.
    poller: Option<Poller>,
    native_dirs: HashSet<PathBuf>,
    polled: HashSet<PathBuf>,
}

impl Backends {
    pub(super) fn new(debounce: Duration, poll: PollOptions, tx: Sender) -> crate::Result<Self> {
        let native = match poll.mode {
            PollMode::Always => None,
            mode => {
                let tx = tx.clone();
                // Runs on the debouncer thread: forward only, never block.
                match new_debouncer(debounce, None, move |batch: DebounceEventResult| {
                    let _ = tx.send((Source::Native, batch));
                }) {
                    Ok(d) => Some(d),
                    // No inotify instance left (`max_user_instances`): poll.
                    Err(e) if mode == PollMode::Auto => {
                        tracing::warn!("file watcher unavailable ({e}); polling instead");
                        None
                    }
                    Err(e) => {
                        return Err(Error::Watcher(format!("cannot start file watcher: {e}")))
                    }
                }
            }
        };
        Ok(Self {
            poll,
            tx,
            native,
            poller: None,
            native_dirs: HashSet::new(),
            polled: HashSet::new(),
        })
    }

    /// Watch directory `dir` (non-recursively) with the backends it needs.
    pub(super) fn watch(&mut self, dir: &Path) -> crate::Result<()> {
        let native = match self.native.as_mut() {
            Some(d) => d
                .watch(dir, RecursiveMode::NonRecursive)
                .map_err(|e| Error::Watcher(format!("cannot watch {}: {e}", dir.display()))),
            None => Err(Error::Watcher(format!(
                "cannot watch {}: no file watcher",
                dir.display()
            ))),
        };
        let poll = match self.poll.mode {
            PollMode::Never => false,
            PollMode::Always => true,
            // A directory that is not there is refused either way.
            PollMode::Auto => (native.is_err() && dir.is_dir()) || on_network_filesystem(dir),
        };
        match (&native, poll) {
            (Ok(()), _) => {
                self.native_dirs.insert(dir.to_path_buf());
            }
            (Err(_), false) => return native,
            (Err(_), true) => {}
        }
        if poll {
            match self.poller().and_then(|p| p.watch(dir)) {
                Ok(()) => {
                    self.polled.insert(dir.to_path_buf());
                    tracing::debug!(dir = %dir.display(), "polling directory");
                }
                // The platform's watch stays (local changes are still seen).
                Err(e) if native.is_ok() => {
                    tracing::warn!(dir = %dir.display(), error = %e, "cannot poll; watching only");
                }
                // The platform's error: it says why it refused.
                Err(e) => return native.and(Err(e)),
            }
        }
        Ok(())
    }

    /// Stop watching `dir` (it may be gone already, and its watch with it).
    pub(super) fn unwatch(&mut self, dir: &Path) {
        if self.native_dirs.remove(dir) {
            if let Some(d) = self.native.as_mut() {
                let _ = d.unwatch(dir);
            }
        }
        if self.polled.remove(dir) {
            if let Some(p) = self.poller.as_ref() {
                p.unwatch(dir);
            }
        }
    }

    /// The directories polled now.
    pub(super) fn polled(&self) -> impl Iterator<Item = &PathBuf> {
        self.polled.iter()
    }

    /// Stop both backends (joining their threads).
    pub(super) fn stop(self) {
        if let Some(d) = self.native {
            d.stop();
        }
        if let Some(p) = self.poller {
            p.stop();
        }
    }

    fn poller(&mut self) -> crate::Result<&Poller> {
        if self.poller.is_none() {
            let tx = self.tx.clone();
            let report = Box::new(move |events| tx.send((Source::Poll, Ok(events))).is_ok());
            self.poller = Some(Poller::new(self.poll.interval, report)?);
        }
        Ok(self.poller.as_ref().expect("made above"))
    }
}

/// Whether `dir` is on a filesystem whose changes other machines (or the
/// host of a VM) make without this kernel hearing of them.
pub fn on_network_filesystem(dir: &Path) -> bool {
    filesystem_magic(dir).is_some_and(is_network_magic)
}

/// Linux `statfs` magic numbers of network and user-space filesystems:
/// NFS, SMB, CIFS, SMB2, 9p (WSL 2's `/mnt/c`, VM shares), FUSE (sshfs,
/// rclone, s3fs …), Ceph, AFS, Coda, NCP.
pub fn is_network_magic(magic: u32) -> bool {
    matches!(
        magic,
        0x6969
            | 0x517B
            | 0xFF53_4D42
            | 0xFE53_4D42
            | 0x0102_1997
            | 0x6573_5546
            | 0x00C3_6400
            | 0x5346_414F
            | 0x7375_7245
            | 0x564C
    )
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn filesystem_magic(dir: &Path) -> Option<u32> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut s: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid NUL-terminated path and `s` a properly sized,
    // writable statfs; the call only writes into `s`.
    let rc = unsafe { libc::statfs(c.as_ptr(), &mut s) };
    // The magic is 32 bits; `f_type`'s width and sign vary by architecture.
    #[allow(clippy::unnecessary_cast)]
    (rc == 0).then_some((s.f_type as u64 & 0xFFFF_FFFF) as u32)
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn filesystem_magic(_dir: &Path) -> Option<u32> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_and_user_space_filesystems_are_told_apart_from_local_ones() {
        // NFS, CIFS, 9p, FUSE: polled.
        for m in [0x6969, 0xFF53_4D42, 0x0102_1997, 0x6573_5546] {
            assert!(is_network_magic(m), "{m:#x}");
        }
        // ext4, tmpfs, btrfs, xfs, overlayfs: the platform's watcher sees them.
        for m in [0xEF53, 0x0102_1994, 0x9123_683E, 0x5846_5342, 0x794C_7630] {
            assert!(!is_network_magic(m), "{m:#x}");
        }
        let tmp = tempfile::tempdir().unwrap();
        assert!(!on_network_filesystem(tmp.path()));
    }

    #[test]
    fn poll_modes_parse_and_refuse_others() {
        assert_eq!(PollMode::parse("auto").unwrap(), PollMode::Auto);
        assert_eq!(PollMode::parse("always").unwrap(), PollMode::Always);
        assert_eq!(PollMode::parse("never").unwrap(), PollMode::Never);
        assert_eq!(
            PollMode::parse("sometimes").unwrap_err().code(),
            "INVALID_ARGUMENT"
        );
        let o = PollOptions::from_settings(Some("always"), Some(500)).unwrap();
        assert_eq!(
            (o.mode, o.interval),
            (PollMode::Always, Duration::from_millis(500))
        );
        assert_eq!(
            PollOptions::from_settings(None, None).unwrap(),
            PollOptions::default()
        );
        for bad in [0, 9, 3_600_001, -1] {
            let e = PollOptions::from_settings(None, Some(bad)).unwrap_err();
            assert_eq!(e.code(), "INVALID_ARGUMENT", "{bad}");
        }
    }
}
