//! Which files are never read into the store: the secret list and paths
//! outside the workspace (issue 14, defect 2).
//!
//! A withheld file is indexed metadata-only: its document says why
//! (`content_omitted` and `withheld`: `"secret"` or `"outside_workspace"`),
//! carries its size and modification time, and has no content and no
//! `file_hash` (the bytes are never opened). The model sees one line saying
//! it was withheld and why.
//!
//! # The secret list
//!
//! Glob patterns on the file's **name** (the last path component): `*` any
//! run of characters, `?` one character; a pattern starting with `!` takes
//! a name back out; the last pattern that matches decides (as in
//! `.gitignore`). [`DEFAULT_SECRET_PATTERNS`] is the default; an explicit
//! list replaces it.
//!
//! SSH keys are listed by their key-type names (`id_rsa*`, `id_ed25519*` …)
//! rather than `id_*`, which would also withhold source files such as
//! `id_test.go` or `id_map.rs`.
//!
//! # Outside the workspace
//!
//! A path on the default filesystem that is neither under the workspace root
//! (lexically or after resolving its symlinks) nor under a configured mount
//! is withheld: `/etc/shadow`, `~/.aws/credentials`. Mounted paths are part
//! of the workspace by configuration.

use crate::fs::resolver::{ResolvedPath, Resolver};
use crate::model::ContentOmitted;

/// The default secret list (see the module docs).
pub const DEFAULT_SECRET_PATTERNS: &[&str] = &[
    ".env",
    ".env.*",
    "!.env.example",
    "!.env.sample",
    "!.env.template",
    ".envrc",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.kdbx",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "!*.pub",
    ".npmrc",
    ".pypirc",
    ".netrc",
    ".pgpass",
    ".git-credentials",
    ".htpasswd",
    "credentials",
    "credentials.json",
    "credentials.yml",
    "credentials.yaml",
    "credentials.toml",
    "credentials.xml",
];

/// What is withheld, and the user's opt-ins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretPolicy {
    /// Glob patterns on file names ([`DEFAULT_SECRET_PATTERNS`] by default).
    pub patterns: Vec<String>,
    /// Opt-in: read files matching the list as any other file.
    pub read_secrets: bool,
    /// Opt-in: read files outside the workspace and the mounts.
    pub read_outside_workspace: bool,
}

impl Default for SecretPolicy {
    fn default() -> Self {
        Self {
            patterns: DEFAULT_SECRET_PATTERNS
                .iter()
                .map(|s| s.to_string())
                .collect(),
            read_secrets: false,
            read_outside_workspace: false,
        }
    }
}

impl SecretPolicy {
    /// Whether a file named `name` is on the secret list.
    pub fn is_secret_name(&self, name: &str) -> bool {
        let mut secret = false;
        for p in &self.patterns {
            match p.strip_prefix('!') {
                Some(neg) if glob(neg.as_bytes(), name.as_bytes()) => secret = false,
                None if glob(p.as_bytes(), name.as_bytes()) => secret = true,
                _ => {}
            }
        }
        secret
    }

    /// Why `resolved` must not be read, if it must not.
    pub fn withheld(&self, resolver: &Resolver, resolved: &ResolvedPath) -> Option<ContentOmitted> {
        let name = resolved.source.path.rsplit('/').next().unwrap_or_default();
        if !self.read_secrets && self.is_secret_name(name) {
            return Some(ContentOmitted::Secret);
        }
        if !self.read_outside_workspace && !resolver.is_in_workspace(&resolved.source) {
            return Some(ContentOmitted::OutsideWorkspace);
        }
        None
    }
}

/// `*` and `?` glob over bytes (no character classes).
fn glob(p: &[u8], s: &[u8]) -> bool {
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if pi < p.len() && (p[pi] == b'?' || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, si));
            pi += 1;
        } else if let Some((sp, ss)) = star {
            pi = sp + 1;
            si = ss + 1;
            star = Some((sp, ss + 1));
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == b'*' {
        pi += 1;
    }
    pi == p.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_list() {
        let p = SecretPolicy::default();
        for name in [
            ".env",
            ".env.local",
            ".env.production",
            ".envrc",
            "server.pem",
            "tls.key",
            "cert.p12",
            "cert.pfx",
            "vault.kdbx",
            "id_rsa",
            "id_ed25519",
            "id_ecdsa_sk",
            ".npmrc",
            ".netrc",
            ".pgpass",
            "credentials",
            "credentials.json",
        ] {
            assert!(p.is_secret_name(name), "{name}");
        }
        for name in [
            "main.rs",
            "id_test.go",
            "id_map.rs",
            "id_rsa.pub",
            ".env.example",
            "environment.ts",
            "keys.ts",
            "credentials.go",
            "credentials_test.py",
            "README.md",
        ] {
            assert!(!p.is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn globs() {
        assert!(glob(b"*.pem", b"a.pem"));
        assert!(glob(b"*.pem", b".pem"));
        assert!(!glob(b"*.pem", b"a.pem.txt"));
        assert!(glob(b"a*b*c", b"aXXbYYc"));
        assert!(!glob(b"a*b*c", b"aXXbYY"));
        assert!(glob(b"?x", b"ax"));
        assert!(glob(b"*", b""));
    }
}
