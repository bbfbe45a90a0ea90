//! Note folders (issue 12 item 1: "the files under configurable note
//! folders"): every Markdown file under them is indexed as a note when a
//! session opens — content, frontmatter, links, tags, as for a note the
//! agent read — so `search` and backlinks find notes the agent never
//! touched; with a watcher, new, changed and deleted notes there become new
//! versions.
//!
//! Decisions:
//! - A folder is an agent path (relative to the workspace root, or
//!   absolute), resolved as the file tools resolve paths (mounts apply); a
//!   folder that does not exist or is not a directory is skipped with a
//!   warning, so one configuration can serve several workspaces.
//! - The walk skips hidden entries (`.git`, `.obsidian`, `.trash`) and does
//!   not follow symlinked directories (no loops, no escaping the folder).
//! - At most [`MAX_NOTE_FILES`] files per session start (the first in path
//!   order; a warning says how many were left out). Each file is read under
//!   the indexer's limits: larger than `max_content_bytes` → metadata-only,
//!   on the secret list → withheld, as for any file.
//! - The notes join the store, not the session: they are not in the
//!   session index or pool (a folder of hundreds of notes must not fill the
//!   context); `search` finds them and `activate` adopts one by id.

use std::path::PathBuf;

use crate::fs::resolver::{ResolvedPath, Resolver};

/// Most note files indexed per session start.
pub const MAX_NOTE_FILES: usize = 10_000;

/// A note folder as this client sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteFolder {
    /// As configured.
    pub configured: String,
    /// The directory on this host.
    pub host_path: PathBuf,
}

/// Resolves the configured folders; those that are not directories on
/// this host are left out (with a warning).
pub fn resolve_folders(resolver: &Resolver, folders: &[String]) -> Vec<NoteFolder> {
    let mut out: Vec<NoteFolder> = Vec::new();
    for f in folders {
        let host = match resolver.resolve(f) {
            Ok(ResolvedPath {
                host_path: Some(h), ..
            }) => h,
            Ok(_) => {
                tracing::warn!(folder = %f, "note folder: not reachable from this client");
                continue;
            }
            Err(e) => {
                tracing::warn!(folder = %f, error = %e, "note folder: skipped");
                continue;
            }
        };
        if !host.is_dir() {
            tracing::warn!(folder = %f, "note folder: not a directory (skipped)");
            continue;
        }
        if !out.iter().any(|x| x.host_path == host) {
            out.push(NoteFolder {
                configured: f.clone(),
                host_path: host,
            });
        }
    }
    out
}

pub use crate::fs::note_walk::{is_hidden, is_note_path, walk};

/// The note files under `folders` (at most [`MAX_NOTE_FILES`]), resolved,
/// and every directory the walk entered (for a watcher).
pub fn note_files(
    resolver: &Resolver,
    folders: &[NoteFolder],
) -> (Vec<ResolvedPath>, Vec<PathBuf>) {
    let mut files: Vec<PathBuf> = Vec::new();
    let mut dirs: Vec<PathBuf> = Vec::new();
    for f in folders {
        let (d, n) = walk(&f.host_path);
        dirs.extend(d);
        files.extend(n);
    }
    files.sort();
    files.dedup();
    if files.len() > MAX_NOTE_FILES {
        tracing::warn!(
            found = files.len(),
            kept = MAX_NOTE_FILES,
            "note folders: too many notes; the rest are not indexed at session start"
        );
        files.truncate(MAX_NOTE_FILES);
    }
    let resolved = files
        .iter()
        .filter_map(|p| resolver.resolve_host_path(p))
        .collect();
    (resolved, dirs)
}

/// What indexing the note folders did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FolderIndexReport {
    pub folders: usize,
    pub files: usize,
    /// Files that got a new version (created or changed since last time).
    pub written: usize,
}

/// Indexes every note under `folders` (batched: [`Indexer::index_many`])
/// and, with a watcher, tracks the notes and watches the folders.
pub async fn index_folders(
    indexer: &std::sync::Arc<crate::fs::indexer::Indexer>,
    watcher: Option<&crate::fs::watcher::Watcher>,
    folders: &[String],
) -> crate::Result<FolderIndexReport> {
    let resolver = indexer.resolver.clone();
    let configured = folders.to_vec();
    let (found, files, dirs) = tokio::task::spawn_blocking(move || {
        let found = resolve_folders(&resolver, &configured);
        let (files, dirs) = note_files(&resolver, &found);
        (found, files, dirs)
    })
    .await
    .map_err(|e| crate::Error::Internal(format!("note folder walk failed: {e}")))?;
    let results = indexer.index_many(&files).await?;
    if let Some(w) = watcher {
        for f in &found {
            let mine: Vec<PathBuf> = dirs
                .iter()
                .filter(|d| d.starts_with(&f.host_path))
                .cloned()
                .collect();
            if let Err(e) = w.track_folder(&f.host_path, &mine) {
                tracing::warn!(folder = %f.configured, error = %e, "note folder: not watched");
            }
        }
        for r in &files {
            if let Err(e) = w.track(r) {
                tracing::warn!(path = %r.source.path, error = %e, "note: not watched");
            }
        }
    }
    Ok(FolderIndexReport {
        folders: found.len(),
        files: results.len(),
        written: results
            .iter()
            .filter(|r| r.action != crate::fs::indexer::IndexAction::Unchanged)
            .count(),
    })
}
