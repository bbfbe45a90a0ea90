//! Files a transcript names that no tool of this session indexed.
//!
//! In the pi package each `read`, `write` and `edit` indexes its file when
//! the tool runs, before its result reaches an ingest. A transcript the
//! session did not see happen — the package installed into a running pi
//! session, a fork of a session this store never had, a host calling
//! `transformContext` alone — brings results whose files the session never
//! indexed: such a file is indexed as its result is taken in (memory-system
//! §22: events are processed into "toolcall objects, index files, update
//! pools"), listed in the pool, not made active, and tracked, so the
//! toolcall's `file_refs` names an object that exists and a later change
//! reaches the model. What the model saw of it is what the transcript shows
//! (`SeenFiles::from_transcript`, `Session::seen_in_transcript`).

use serde_json::Value;

use super::Session;
use crate::context::tool_args::{path_arg, ReadOf};

impl Session {
    /// Indexes the file a successful `read`/`write`/`edit` result names,
    /// or a `bash` that only prints it (`read`, context/shell_read.rs), when
    /// the session has not (read from disk now, planned against what the
    /// session knows; a write that loses to another writer is rebased as
    /// any). A file gone or unreadable stays unknown.
    pub(super) fn index_named_file(&mut self, tool: &str, args: &Value, read: Option<&ReadOf>) {
        let path = match tool {
            "read" | "write" | "edit" => path_arg(args),
            _ => read.map(|r| r.path.as_str()),
        };
        let Some(path) = path else {
            return;
        };
        let Ok(resolved) = self.resolver().resolve_read(path) else {
            return;
        };
        let id = resolved.source.file_object_id();
        if self.sets.index.contains(&id) {
            return;
        }
        let Ok(plan) = self.read_offline(path) else {
            return;
        };
        self.take_version(plan);
        self.enter(&id, true, false);
        self.track(&id);
        if self.options.layout == crate::context::Layout::Cache {
            self.cache.seen.from_transcript(&id);
        }
    }
}
