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
use crate::fs::indexer::VersionPlan;
use crate::fs::resolver::ResolvedPath;
use crate::model::object::FilePayload;

/// What the transcripts taken in so far say of the workspace.
#[derive(Default)]
pub(super) struct NamedFiles {
    /// A file a transcript names is in this workspace: the workspace is the
    /// one the transcript worked in (not a session recorded elsewhere and
    /// replayed here).
    on_disk: bool,
    /// Files the ingest under way names that are not on disk now, told gone
    /// at its end when the workspace is the transcript's.
    gone: Vec<ResolvedPath>,
}

impl Session {
    /// Indexes the file a successful `read`/`write`/`edit` result names,
    /// or a `bash` that only prints it (`read`, context/shell_read.rs), when
    /// the session has not (read from disk now, planned against what the
    /// session knows; a write that loses to another writer is rebased as
    /// any). A file of the workspace that is not there now waits for the
    /// end of the ingest ([`Session::index_gone_files`]); one unreadable, or
    /// outside the workspace, stays unknown.
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
        let inside = self.resolver().is_in_workspace(&resolved.source);
        if self.sets.index.contains(&id) {
            self.named.on_disk |= inside && !self.is_deleted(&id);
            return;
        }
        let plan = match self.read_offline(path) {
            Ok(plan) => plan,
            Err(_) if inside && missing(&resolved) => {
                self.named.gone.push(resolved);
                return;
            }
            Err(_) => return,
        };
        self.named.on_disk |= inside;
        self.take_version(plan);
        self.enter(&id, true, false);
        self.track(&id);
        if self.options.layout == crate::context::Layout::Cache {
            self.cache.seen.from_transcript(&id);
        }
    }

    /// At the end of an ingest: the files it named that are gone now
    /// (deleted or moved since the transcript showed them) get a deleted
    /// version, are tracked (their return is a change too) and, in the cache
    /// layout, told at this call — when the workspace is the transcript's: a
    /// session recorded on another machine and replayed into an empty
    /// workspace would otherwise have every file it read told gone.
    pub(super) fn index_gone_files(&mut self) {
        let gone = std::mem::take(&mut self.named.gone);
        if !self.named.on_disk {
            return;
        }
        for resolved in gone {
            let id = resolved.source.file_object_id();
            if self.sets.index.contains(&id) {
                continue;
            }
            let known = self.objects.get(&id).map(|c| c.doc.clone());
            self.take_version(VersionPlan::of(
                &resolved.source,
                FilePayload::Deleted,
                known,
                None,
            ));
            self.enter(&id, true, false);
            self.track(&id);
            if self.options.layout == crate::context::Layout::Cache {
                self.seen_gone(&id);
            }
        }
    }
}

/// Nothing is at `resolved`'s path now (not unreadable: gone).
fn missing(resolved: &ResolvedPath) -> bool {
    resolved.host_path.as_deref().is_some_and(|host| {
        matches!(
            std::fs::symlink_metadata(host),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound
        )
    })
}
