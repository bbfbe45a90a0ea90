//! Walking a note folder on disk: which directories and note files are
//! under it (hidden entries skipped, symlinked directories not followed).
//! Used when a session indexes its note folders (`memory::folders`) and by
//! the watcher for a directory that appears under one.

use std::path::{Path, PathBuf};

use crate::model::note::is_note_type;

/// Whether a directory entry's name is hidden (skipped by the walk).
pub fn is_hidden(name: &std::ffi::OsStr) -> bool {
    name.to_str().is_some_and(|n| n.starts_with('.'))
}

/// Whether `path` names a note file by its extension.
pub fn is_note_path(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(is_note_type)
}

/// Every directory under `root` the walk enters (itself included), and the
/// note files in them, sorted (blocking `std::fs`).
pub fn walk(root: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut dirs = Vec::new();
    let mut files = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            tracing::warn!(dir = %dir.display(), "note folder: cannot list");
            continue;
        };
        dirs.push(dir);
        for e in entries.flatten() {
            if is_hidden(&e.file_name()) {
                continue;
            }
            let Ok(ft) = e.file_type() else { continue };
            let p = e.path();
            if ft.is_dir() {
                todo.push(p);
            } else if is_note_path(&p) && (ft.is_file() || p.is_file()) {
                files.push(p);
            }
        }
    }
    dirs.sort();
    files.sort();
    (dirs, files)
}
