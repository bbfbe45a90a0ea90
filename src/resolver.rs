//! `Resolver`: agent path ↔ source binding (filesystem id + canonical path).

use std::path::PathBuf;
use std::sync::Arc;

use napi_derive::napi;
use scm_core::fs::resolver::{MountMapping, ResolvedPath, Resolver};
use scm_core::model::FilesystemSource;

use crate::errors::IntoJsResult;

/// A mount mapping: agent paths under `agentPrefix` live on `filesystemId` at
/// `canonicalPrefix`; `hostPrefix` is where this process can read them (absent:
/// unreachable from here, so never read or watched).
#[napi(object)]
pub struct NapiMountMapping {
    pub agent_prefix: String,
    pub canonical_prefix: String,
    pub filesystem_id: String,
    pub host_prefix: Option<String>,
}

impl From<NapiMountMapping> for MountMapping {
    fn from(m: NapiMountMapping) -> Self {
        MountMapping {
            agent_prefix: m.agent_prefix,
            canonical_prefix: m.canonical_prefix,
            filesystem_id: m.filesystem_id,
            host_prefix: m.host_prefix,
        }
    }
}

#[napi(object)]
pub struct NapiResolverOptions {
    /// Relative agent paths resolve against this (default: `process.cwd()`, set by the facade).
    pub workspace_root: String,
    /// Default: `defaultFilesystemId()` (this machine).
    pub default_filesystem_id: Option<String>,
    pub mounts: Option<Vec<NapiMountMapping>>,
    /// Whether the agent runs on this host, so default-filesystem paths are
    /// readable and watchable here (default: true).
    pub default_is_local: Option<bool>,
}

/// `{ type: 'filesystem', filesystemId, path }`.
#[napi(object)]
pub struct JsFilesystemSource {
    #[napi(js_name = "type", ts_type = "'filesystem'")]
    pub kind: Option<String>,
    pub filesystem_id: String,
    pub path: String,
}

impl From<FilesystemSource> for JsFilesystemSource {
    fn from(s: FilesystemSource) -> Self {
        JsFilesystemSource {
            kind: Some("filesystem".into()),
            filesystem_id: s.filesystem_id,
            path: s.path,
        }
    }
}

impl From<JsFilesystemSource> for FilesystemSource {
    fn from(s: JsFilesystemSource) -> Self {
        FilesystemSource {
            filesystem_id: s.filesystem_id,
            path: s.path,
        }
    }
}

#[napi(object)]
pub struct JsResolvedPath {
    pub source: JsFilesystemSource,
    /// The file object's id (= its identity hash).
    pub object_id: String,
    /// Where this process reads the file; null when it cannot reach it.
    pub host_path: Option<String>,
    /// Whether a watcher may track it.
    pub watchable: bool,
}

impl From<ResolvedPath> for JsResolvedPath {
    fn from(r: ResolvedPath) -> Self {
        JsResolvedPath {
            object_id: r.source.file_object_id(),
            source: r.source.into(),
            host_path: r.host_path.map(|p| p.to_string_lossy().into_owned()),
            watchable: r.watchable,
        }
    }
}

#[napi(js_name = "NativeResolver")]
pub struct JsResolver {
    pub(crate) inner: Arc<Resolver>,
}

#[napi]
impl JsResolver {
    #[napi(constructor, catch_unwind)]
    pub fn new(options: NapiResolverOptions) -> Self {
        let fs_id = options
            .default_filesystem_id
            .unwrap_or_else(scm_core::fs::resolver::default_filesystem_id);
        let mounts = options
            .mounts
            .unwrap_or_default()
            .into_iter()
            .map(MountMapping::from)
            .collect();
        JsResolver {
            inner: Arc::new(Resolver::new(
                fs_id,
                PathBuf::from(options.workspace_root),
                mounts,
                options.default_is_local.unwrap_or(true),
            )),
        }
    }

    #[napi(getter)]
    pub fn default_filesystem_id(&self) -> String {
        self.inner.default_filesystem_id.clone()
    }

    #[napi(getter)]
    pub fn workspace_root(&self) -> String {
        self.inner.workspace_root.to_string_lossy().into_owned()
    }

    /// Agent path (absolute, or relative to the workspace root) → source.
    #[napi(catch_unwind)]
    pub fn resolve(&self, agent_path: String) -> napi::Result<JsResolvedPath> {
        self.inner.resolve(&agent_path).js().map(Into::into)
    }

    /// Source → the path the agent sees.
    #[napi(catch_unwind)]
    pub fn agent_path(&self, source: JsFilesystemSource) -> String {
        self.inner.agent_path(&source.into())
    }

    /// Source → short path for rendering (relative to the workspace root when inside it).
    #[napi(catch_unwind)]
    pub fn display_path(&self, source: JsFilesystemSource) -> String {
        self.inner.display_path(&source.into())
    }
}
