//! How a caller names one version of an object: its number in the object's
//! history (1 = oldest), a transaction id (`tx:N`), a transaction time
//! (RFC 3339), a hash prefix (a link's pin), or `latest`. The grammar only;
//! `memory::versions` finds the version in a store.

use super::time::parse_rfc3339_millis;
use crate::error::{Error, Result};

/// How a caller names one version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionRef {
    /// 1-based position in [`versions`].
    Number(usize),
    /// The version written by transaction `tx_id` or the newest before it.
    TxId(i64),
    /// The version visible at this RFC 3339 time.
    TxTime(String),
    /// The newest version whose `content_hash` or `object_hash` starts with
    /// these hex digits (at least [`MIN_HASH_PREFIX`]; a link pin).
    Hash(String),
    Latest,
}

/// Shortest hash prefix a pin accepts (as git's short hashes).
pub const MIN_HASH_PREFIX: usize = 7;

/// `s` as a hash prefix: 7–64 hex digits, not all decimal digits (those
/// are version numbers).
fn hash_prefix(s: &str) -> Option<VersionRef> {
    (s.len() >= MIN_HASH_PREFIX
        && s.len() <= 64
        && s.bytes().all(|b| b.is_ascii_hexdigit())
        && !s.bytes().all(|b| b.is_ascii_digit()))
    .then(|| VersionRef::Hash(s.to_ascii_lowercase()))
}

impl VersionRef {
    /// Parse what an agent or caller typed: `3`, `v3`, `tx:812`, `latest`,
    /// or an RFC 3339 time.
    pub fn parse(s: &str) -> Result<Self> {
        let t = s.trim();
        let bad = || {
            Error::InvalidArgument(format!(
                "version {s:?}: expected a version number (3 or v3), tx:<tx id>, latest, an RFC 3339 time, or a hash prefix (7+ hex digits)"
            ))
        };
        if t.eq_ignore_ascii_case("latest") {
            return Ok(VersionRef::Latest);
        }
        if let Some(n) = t.strip_prefix("tx:") {
            return n.trim().parse().map(VersionRef::TxId).map_err(|_| bad());
        }
        let num = t.strip_prefix('v').unwrap_or(t);
        if !num.is_empty() && num.bytes().all(|b| b.is_ascii_digit()) {
            return match num.parse::<usize>() {
                Ok(n) if n >= 1 => Ok(VersionRef::Number(n)),
                _ => Err(bad()),
            };
        }
        if parse_rfc3339_millis(t).is_ok() {
            return Ok(VersionRef::TxTime(t.to_owned()));
        }
        if let Some(h) = hash_prefix(t) {
            return Ok(h);
        }
        Err(bad())
    }

    /// The version pin of a link (`[[b@v3]]`), or None when `s` is not
    /// one — then the `@…` is part of the name: `v3`, `tx:812`, an RFC 3339
    /// time, or a hash prefix (7–64 hex digits). A bare number is not a pin
    /// (`[[release@2]]` names the file `release@2.md`).
    pub fn parse_pin(s: &str) -> Option<Self> {
        if let Some(h) = hash_prefix(s) {
            return Some(h);
        }
        let number = s.strip_prefix('v').is_some_and(|n| !n.is_empty());
        if !(number || s.starts_with("tx:") || s.contains('T')) {
            return None;
        }
        VersionRef::parse(s).ok()
    }
}
