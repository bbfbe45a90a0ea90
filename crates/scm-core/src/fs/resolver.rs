//! Filesystem resolver: agent-visible path → source binding (filesystem id +
//! canonical path), the reverse, and whether this client can read/watch it.
//! (SSOT §5.2–5.4, implementation-plan §3.)
//!
//! # Rules
//!
//! 1. A relative agent path joins the workspace root.
//! 2. `.` and `..` are applied **lexically** (as `cd -L` does); `..` never
//!    climbs above `/`. Repeated and trailing slashes collapse.
//! 3. Mount prefixes match on path-component boundaries (`/work` matches
//!    `/work` and `/work/x`, never `/workspace`); the longest agent prefix wins.
//!    A match maps to the mount's filesystem id and canonical prefix; anything
//!    else is on the default filesystem with the normalised path as canonical.
//! 4. Symlinks: when this client can read the path (a host path is known) and
//!    its *parent directory* exists, the parent is canonicalised with
//!    `realpath`, so `/w/link-dir/a.ts` and `/w/real-dir/a.ts` become one
//!    object. The file's *own* name is kept even if it is a symlink: editors'
//!    atomic saves replace the link with a regular file, and the object must
//!    stay the one the agent named. If the parent does not exist, or resolves
//!    outside the mount the path came through, the lexical path is used.
//!
//! 5. **The path pi actually reads** ([`Resolver::resolve_read`], for the
//!    file tools): pi's tools first replace Unicode spaces (U+00A0,
//!    U+2000–U+200A, U+202F, U+205F, U+3000) with a plain space; when that
//!    path does not exist, pi's `read` tries, in order, the macOS screenshot
//!    form (` AM.`/` PM.` with U+202F before AM/PM), NFD, curly quotes
//!    (`'` → U+2019) and NFD + curly quotes, and reads the first that
//!    exists (pi 0.73 and 1.5, `core/tools/path-utils.js`). The same
//!    fallbacks here index the read under the file pi read.
//!
//! Paths are POSIX paths carried as UTF-8 strings (they end up in JSON).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::model::hashing::sha256_hex;
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
    /// `workspace_root` with symlinks resolved (when it exists), so
    /// `display_path` recognises canonicalised paths inside it.
    workspace_root_real: Option<String>,
}

/// SHA-256 of `/etc/machine-id`, hostname as fallback.
///
/// Also tries `/var/lib/dbus/machine-id` (older distributions). The hostname
/// comes from `/proc/sys/kernel/hostname`, `/etc/hostname` or `$HOSTNAME`;
/// if none is available the id is SHA-256 of `"localhost"`.
pub fn default_filesystem_id() -> String {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let basis = read("/etc/machine-id")
        .or_else(|| read("/var/lib/dbus/machine-id"))
        .or_else(|| read("/proc/sys/kernel/hostname"))
        .or_else(|| read("/etc/hostname"))
        .or_else(|| {
            std::env::var("HOSTNAME")
                .ok()
                .filter(|s| !s.trim().is_empty())
        })
        .unwrap_or_else(|| "localhost".to_string());
    sha256_hex(basis.as_bytes())
}

/// Lexically normalise an absolute POSIX path: collapse `//`, drop `.`, apply
/// `..` (never above `/`), no trailing slash (except the root itself).
pub fn normalize_absolute(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    if parts.is_empty() {
        "/".to_string()
    } else {
        let mut out = String::with_capacity(path.len());
        for p in parts {
            out.push('/');
            out.push_str(p);
        }
        out
    }
}

/// If `path` is `prefix` or lies under it (on a component boundary), the rest
/// (`""` or `"/a/b"`).
fn strip_component_prefix<'a>(path: &'a str, prefix: &str) -> Option<&'a str> {
    if prefix == "/" {
        return Some(if path == "/" { "" } else { path });
    }
    let rest = path.strip_prefix(prefix)?;
    (rest.is_empty() || rest.starts_with('/')).then_some(rest)
}

/// `prefix` + `rest` where rest is `""` or starts with `/`.
fn join_prefix(prefix: &str, rest: &str) -> String {
    if rest.is_empty() {
        prefix.to_string()
    } else if prefix == "/" {
        rest.to_string()
    } else {
        format!("{prefix}{rest}")
    }
}

/// `realpath` of the parent directory + the file's own name; None if the
/// parent cannot be resolved (missing, unreadable) or is not UTF-8.
fn realpath_parent(path: &str) -> Option<String> {
    let p = Path::new(path);
    let (parent, name) = (p.parent()?, p.file_name()?);
    let real = std::fs::canonicalize(parent).ok()?;
    let real = real.to_str()?;
    Some(join_prefix(real, &format!("/{}", name.to_str()?)))
}

fn realpath(path: &str) -> Option<String> {
    std::fs::canonicalize(path).ok()?.to_str().map(String::from)
}

impl Resolver {
    pub fn new(
        default_filesystem_id: String,
        workspace_root: PathBuf,
        mut mounts: Vec<MountMapping>,
        default_is_local: bool,
    ) -> Self {
        for m in &mut mounts {
            m.agent_prefix = normalize_absolute(&m.agent_prefix);
            m.canonical_prefix = normalize_absolute(&m.canonical_prefix);
            m.host_prefix = m.host_prefix.as_deref().map(normalize_absolute);
        }
        // Longest agent prefix first; ties broken by text so the order is total.
        mounts.sort_by(|a, b| {
            b.agent_prefix
                .len()
                .cmp(&a.agent_prefix.len())
                .then_with(|| a.agent_prefix.cmp(&b.agent_prefix))
        });
        let workspace_root = if workspace_root.is_absolute() {
            workspace_root
        } else {
            // A relative root is relative to this process's working directory.
            std::env::current_dir()
                .unwrap_or_else(|_| PathBuf::from("/"))
                .join(workspace_root)
        };
        let root = normalize_absolute(&workspace_root.to_string_lossy());
        let workspace_root_real = realpath(&root).filter(|r| *r != root);
        Self {
            default_filesystem_id,
            workspace_root: PathBuf::from(root),
            mounts,
            default_is_local,
            workspace_root_real,
        }
    }

    fn root_str(&self) -> &str {
        self.workspace_root.to_str().unwrap_or("/")
    }

    /// The normalised absolute agent path (rules 1–2).
    pub fn absolute_agent_path(&self, agent_path: &str) -> Result<String> {
        if agent_path.is_empty() {
            return Err(Error::InvalidArgument("empty path".into()));
        }
        if agent_path.contains('\0') {
            return Err(Error::InvalidArgument(format!(
                "path contains a NUL byte: {agent_path:?}"
            )));
        }
        Ok(if agent_path.starts_with('/') {
            normalize_absolute(agent_path)
        } else {
            normalize_absolute(&format!("{}/{agent_path}", self.root_str()))
        })
    }

    /// Agent path (absolute or relative to the workspace root) → source.
    /// Errors only on an empty path or one containing NUL (`INVALID_ARGUMENT`).
    pub fn resolve(&self, agent_path: &str) -> Result<ResolvedPath> {
        let agent = self.absolute_agent_path(agent_path)?;
        for m in &self.mounts {
            let Some(rest) = strip_component_prefix(&agent, &m.agent_prefix) else {
                continue;
            };
            let mut rest = rest.to_string();
            if let Some(host_prefix) = &m.host_prefix {
                // Rule 4 through the mount: only accept a realpath that stays
                // inside the mount's (real) host prefix.
                let host = join_prefix(host_prefix, &rest);
                let real_prefix = realpath(host_prefix).unwrap_or_else(|| host_prefix.clone());
                if let Some(real) = realpath_parent(&host) {
                    if let Some(r) = strip_component_prefix(&real, &real_prefix) {
                        rest = r.to_string();
                    }
                }
            }
            let host_path = m
                .host_prefix
                .as_deref()
                .map(|h| PathBuf::from(join_prefix(h, &rest)));
            return Ok(ResolvedPath {
                source: FilesystemSource {
                    filesystem_id: m.filesystem_id.clone(),
                    path: join_prefix(&m.canonical_prefix, &rest),
                },
                watchable: host_path.is_some(),
                host_path,
            });
        }
        let canonical = if self.default_is_local {
            realpath_parent(&agent).unwrap_or(agent)
        } else {
            agent
        };
        Ok(ResolvedPath {
            host_path: self.default_is_local.then(|| PathBuf::from(&canonical)),
            watchable: self.default_is_local,
            source: FilesystemSource {
                filesystem_id: self.default_filesystem_id.clone(),
                path: canonical,
            },
        })
    }

    /// [`Resolver::resolve`] of the path pi's file tools use for
    /// `agent_path` (rule 5): Unicode spaces made plain, then, when that
    /// does not exist here, the first of pi's read fallbacks that does.
    pub fn resolve_read(&self, agent_path: &str) -> Result<ResolvedPath> {
        let plain = plain_spaces(agent_path);
        let literal = self.resolve(&plain)?;
        let exists = |r: &ResolvedPath| r.host_path.as_deref().is_some_and(|h| h.exists());
        if literal.host_path.is_none() || exists(&literal) {
            return Ok(literal);
        }
        let abs = self.absolute_agent_path(&plain)?;
        let nfd = nfd(&abs);
        for variant in [am_pm(&abs), nfd.clone(), curly(&abs), curly(&nfd)] {
            if variant == abs {
                continue;
            }
            let r = self.resolve(&variant)?;
            if exists(&r) {
                return Ok(r);
            }
        }
        Ok(literal)
    }

    /// The mount `source` lives under (by filesystem id and canonical
    /// prefix, longest canonical prefix first) and the rest of its path.
    fn mount_of<'a>(&'a self, source: &'a FilesystemSource) -> Option<(&'a MountMapping, &'a str)> {
        self.mounts
            .iter()
            .filter(|m| m.filesystem_id == source.filesystem_id)
            .filter_map(|m| {
                Some((
                    m,
                    strip_component_prefix(&source.path, &m.canonical_prefix)?,
                ))
            })
            .max_by_key(|(m, _)| m.canonical_prefix.len())
    }

    /// Source → the path the agent sees (canonical path if no mapping applies).
    pub fn agent_path(&self, source: &FilesystemSource) -> String {
        match self.mount_of(source) {
            Some((m, rest)) => join_prefix(&m.agent_prefix, rest),
            None => source.path.clone(),
        }
    }

    /// Short path for rendering: relative to the workspace root when inside
    /// it (`.` for the root itself), else the absolute agent path.
    pub fn display_path(&self, source: &FilesystemSource) -> String {
        let agent = self.agent_path(source);
        let roots = std::iter::once(self.root_str()).chain(self.workspace_root_real.as_deref());
        for root in roots {
            if let Some(rest) = strip_component_prefix(&agent, root) {
                return match rest.strip_prefix('/') {
                    Some(r) => r.to_string(),
                    None if rest.is_empty() => ".".to_string(),
                    None => rest.to_string(),
                };
            }
        }
        agent
    }

    /// Where this client can read `source`, if anywhere.
    pub fn host_path(&self, source: &FilesystemSource) -> Option<PathBuf> {
        if let Some((m, rest)) = self.mount_of(source) {
            return m
                .host_prefix
                .as_deref()
                .map(|h| PathBuf::from(join_prefix(h, rest)));
        }
        (source.filesystem_id == self.default_filesystem_id && self.default_is_local)
            .then(|| PathBuf::from(&source.path))
    }

    /// A path as this client sees it (e.g. the new name in a rename event) →
    /// the agent path it corresponds to, resolved. None when no reachable
    /// filesystem covers it.
    pub fn resolve_host_path(&self, host_path: &Path) -> Option<ResolvedPath> {
        let host = normalize_absolute(host_path.to_str()?);
        let via_mount = self
            .mounts
            .iter()
            .filter_map(|m| {
                let rest = strip_component_prefix(&host, m.host_prefix.as_deref()?)?;
                Some((m, rest))
            })
            .max_by_key(|(m, _)| m.host_prefix.as_deref().map_or(0, str::len));
        let agent = match via_mount {
            Some((m, rest)) => join_prefix(&m.agent_prefix, rest),
            None if self.default_is_local => host,
            None => return None,
        };
        self.resolve(&agent).ok().filter(|r| r.host_path.is_some())
    }

    /// Whether `source` is in the workspace: under a configured mount, or on
    /// the default filesystem under the workspace root (as given, or with
    /// its symlinks resolved).
    pub fn is_in_workspace(&self, source: &FilesystemSource) -> bool {
        if self.mount_of(source).is_some() {
            return true;
        }
        source.filesystem_id == self.default_filesystem_id
            && std::iter::once(self.root_str())
                .chain(self.workspace_root_real.as_deref())
                .any(|root| strip_component_prefix(&source.path, root).is_some())
    }

    /// Whether a watcher may track `source` from this client.
    pub fn is_watchable(&self, source: &FilesystemSource) -> bool {
        self.host_path(source).is_some()
    }
}

/// pi's `normalizeUnicodeSpaces`: these spaces become U+0020.
fn plain_spaces(p: &str) -> String {
    p.chars()
        .map(|c| match c {
            '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
            c => c,
        })
        .collect()
}

/// pi's `tryMacOSScreenshotPath`: ` AM.` / ` PM.` (any case) get U+202F
/// instead of the space.
fn am_pm(p: &str) -> String {
    let mut out = String::with_capacity(p.len());
    let mut rest = p;
    while let Some(i) = rest.find(' ') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let b = after.as_bytes();
        let hit = b.len() >= 3
            && matches!(b[0], b'a' | b'A' | b'p' | b'P')
            && matches!(b[1], b'm' | b'M')
            && b[2] == b'.';
        out.push(if hit { '\u{202F}' } else { ' ' });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// pi's `tryNFDVariant`: `String.prototype.normalize("NFD")`.
fn nfd(p: &str) -> String {
    icu_normalizer::DecomposingNormalizerBorrowed::new_nfd()
        .normalize(p)
        .into_owned()
}

/// pi's `tryCurlyQuoteVariant`: `'` → U+2019.
fn curly(p: &str) -> String {
    p.replace('\'', "\u{2019}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pi_variants() {
        assert_eq!(
            am_pm("/s/Shot 10.00.01 AM.png"),
            "/s/Shot 10.00.01\u{202F}AM.png"
        );
        assert_eq!(am_pm("/s/x pm.png"), "/s/x\u{202F}pm.png");
        assert_eq!(am_pm("/s/a b AMX"), "/s/a b AMX");
        assert_eq!(nfd("/é"), "/e\u{301}");
        assert_eq!(curly("/d'x"), "/d\u{2019}x");
        assert_eq!(plain_spaces("a\u{00A0}b\u{3000}c"), "a b c");
    }

    #[test]
    fn normalises_lexically_and_never_escapes_root() {
        assert_eq!(normalize_absolute("/a/./b//c/"), "/a/b/c");
        assert_eq!(normalize_absolute("/a/../../.."), "/");
        assert_eq!(normalize_absolute("/../x/../y"), "/y");
        assert_eq!(normalize_absolute("/"), "/");
    }

    #[test]
    fn component_prefix() {
        assert_eq!(strip_component_prefix("/work/a", "/work"), Some("/a"));
        assert_eq!(strip_component_prefix("/work", "/work"), Some(""));
        assert_eq!(strip_component_prefix("/workspace/a", "/work"), None);
        assert_eq!(strip_component_prefix("/x", "/"), Some("/x"));
    }
}
