//! Store outages: the session keeps working from memory.
//!
//! Everything the model is shown is assembled from the session's memory;
//! the store only receives it. So when a write fails with a transient error
//! (`STORE_UNAVAILABLE`, `STORE_TIMEOUT`), `transform_context` and the
//! file operations still answer: the write stays queued exactly as it was
//! ([`Session::restore_pending`]) and goes with the next flush — the next
//! call's, or an explicit one — and [`Session::write_error`] says why it is
//! pending until a write lands. Any other failure is returned as before.
//!
//! Reading a file needs a store lookup (is this version known?). When the
//! lookup fails transiently the file is read here and its version queued
//! like the session's own documents; the session's cache decides
//! "unchanged", so only a file the session did not know yet may land as a
//! second, identical version of what the store already held.

use super::{FileOp, OpResult, PendingWrite, Session};
use crate::error::{Error, Result};
use crate::fs::indexer::VersionPlan;
use crate::model::FilePayload;

impl Session {
    /// The error of the last session write that failed: its documents are
    /// queued and go with the next flush. None once a write landed.
    pub fn write_error(&self) -> Option<&Error> {
        self.writes.error.as_ref()
    }

    /// [`Session::restore_pending`] for a write that failed with `error`
    /// (the split form's counterpart of a failed [`Session::flush`]).
    pub fn restore_failed_write(&mut self, pending: PendingWrite, error: &Error) {
        if matches!(error, Error::SessionSuperseded(_)) {
            // The session is another instance's now: what this one queued
            // is not written (its objects are in the host's transcript).
            self.superseded = true;
            self.read_only = true;
        } else {
            self.restore_pending(pending);
        }
        self.writes.error = Some(error.clone());
    }

    /// [`Session::apply_file_op`]; when indexing failed because the store
    /// could not be asked, the file at `path` is read here (blocking
    /// `std::fs`, like activating a stub) and its version queued.
    pub fn apply_file_op_or_read(
        &mut self,
        op: FileOp,
        path: &str,
        result: Result<VersionPlan>,
    ) -> OpResult {
        match result {
            Err(e) if e.is_transient() => match self.read_offline(path) {
                Ok(r) => {
                    let mut out = self.apply_file_op(op, Ok(r));
                    if out.ok {
                        out.message
                            .push_str(" (store unreachable: stored with the next write)");
                    }
                    out
                }
                Err(read) => {
                    if matches!(read, Error::FileNotFound { .. } | Error::NotAFile { .. }) {
                        self.record_gone(path);
                    }
                    OpResult::failure(&read, None)
                }
            },
            Err(e @ (Error::FileNotFound { .. } | Error::NotAFile { .. })) => {
                let id = self.record_gone(path);
                OpResult::failure(&e, id)
            }
            r => self.apply_file_op(op, r),
        }
    }

    /// The file at `path` is gone (or is no longer a regular file): if the
    /// session knows its object and has not recorded that yet, a deletion
    /// version is queued (with or without watchers, history records what a
    /// read found). Its id, when known.
    pub(super) fn record_gone(&mut self, path: &str) -> Option<String> {
        let source = self.resolver().resolve_read(path).ok()?.source;
        let id = source.file_object_id();
        let known = self.objects.get(&id)?.doc.clone();
        let plan = VersionPlan::of(&source, FilePayload::Deleted, Some(known), None);
        self.take_version(plan);
        Some(id)
    }

    /// The file's version planned against the one this session knows (the
    /// store could not be asked).
    pub(super) fn read_offline(&mut self, path: &str) -> Result<VersionPlan> {
        self.ensure_open()?;
        let resolved = self.resolver().resolve_read(path)?;
        let known = self
            .objects
            .get(&resolved.source.file_object_id())
            .map(|c| c.doc.clone());
        self.indexer.plan_blocking(&resolved, known)
    }
}
