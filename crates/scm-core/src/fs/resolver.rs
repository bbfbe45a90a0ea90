//! Filesystem resolver: agent-visible path → source binding (filesystem id +
//! canonical path), the reverse, and whether this client can read/watch it.
//! (SSOT §5.2–5.4, implementation-plan §3.)

use std::path::PathBuf;

use crate::error::Result;
use crate::model::FilesystemSource;

/// A mount mapping: paths under `agent_prefix` (as the agent sees them) live on
/// filesystem `filesystem_id` at `canonical_prefix`; `host_prefix` is where this
/// client can read them (None: not reachable from here, so not watched).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountMapping {
    pub agent_prefix: String,
    pub canonical_prefix: String,
    pub filesystem_id: String,
    pub host_prefix: Option<String>,
}

/// A resolved agent path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    pub source: FilesystemSource,
    /// Where this client reads the file; None if it cannot reach it.
    pub host_path: Option<PathBuf>,
    /// Whether a watcher may track it (reachable and local).
    pub watchable: bool,
}

#[derive(Debug, Clone)]
pub struct Resolver {
    pub default_filesystem_id: String,
    /// Relative agent paths resolve against this.
    pub workspace_root: PathBuf,
    /// Sorted longest agent prefix first.
    pub mounts: Vec<MountMapping>,
    /// True when the agent runs on this host (no sandbox): default-filesystem
    /// paths are readable and watchable here.
    pub default_is_local: bool,
}

/// SHA-256 of `/etc/machine-id`, hostname as fallback.
pub fn default_filesystem_id() -> String {
    todo!("fs helper")
}

impl Resolver {
    pub fn new(
        default_filesystem_id: String,
        workspace_root: PathBuf,
        mounts: Vec<MountMapping>,
        default_is_local: bool,
    ) -> Self {
        let _ = (
            default_filesystem_id,
            workspace_root,
            mounts,
            default_is_local,
        );
        todo!("fs helper")
    }

    /// Agent path (absolute or relative to the workspace root) → source.
    pub fn resolve(&self, agent_path: &str) -> Result<ResolvedPath> {
        let _ = agent_path;
        todo!("fs helper")
    }

    /// Source → the path the agent sees (canonical path if no mapping applies).
    pub fn agent_path(&self, source: &FilesystemSource) -> String {
        let _ = source;
        todo!("fs helper")
    }

    /// Short path for rendering: relative to the workspace root when inside it.
    pub fn display_path(&self, source: &FilesystemSource) -> String {
        let _ = source;
        todo!("fs helper")
    }

    /// Where this client can read `source`, if anywhere.
    pub fn host_path(&self, source: &FilesystemSource) -> Option<PathBuf> {
        let _ = source;
        todo!("fs helper")
    }
}
