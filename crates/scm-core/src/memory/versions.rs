//! Older versions on explicit request (memory-system-v0 §7.3): list an
//! object's versions, show one, diff two. Nothing here touches a session's
//! sets: what these return goes to the caller (a tool result the agent asked
//! for), never into the active context, so two versions of one object are
//! never in context unasked.
//!
//! A version is addressed by a [`VersionRef`]: its number in the list
//! (1 = oldest, as [`versions`] numbers them), a transaction id (`tx:N`, the
//! store's exact address), a transaction time (RFC 3339: the version visible
//! then, §7.1's primary lookup) or `latest`.

use serde::Serialize;
use serde_json::Value;

use super::diff::unified_diff;
use crate::error::{Error, Result};
use crate::model::char_count_of;
use crate::model::stable_json::stable_stringify;
use crate::session::{paged, Session};
use crate::store::embedded::parse_rfc3339_millis;
use crate::store::{Document, Store, Version};

/// One entry of [`versions`]: where the version sits and what it holds,
/// without its content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionInfo {
    /// 1 = oldest.
    pub version: usize,
    pub tx_id: i64,
    pub tx_time: String,
    pub content_hash: Option<String>,
    pub metadata_hash: Option<String>,
    pub object_hash: Option<String>,
    /// Content length in characters (UTF-16 units, as `char_count`); 0 for
    /// no content.
    pub size: u64,
    /// `state` of a file version (`present`, `stub`, `deleted`), if any.
    pub state: Option<String>,
}

pub use crate::model::version_ref::{VersionRef, MIN_HASH_PREFIX};

/// One version with its document.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ShownVersion {
    pub id: String,
    #[serde(flatten)]
    pub info: VersionInfo,
    /// The whole document of that version (chat/session heads materialised).
    pub doc: Document,
    /// How many versions the object has.
    pub of: usize,
}

impl ShownVersion {
    /// The text an agent sees: one header line, then the version's content
    /// (or its document, for an object without text content).
    pub fn render(&self) -> String {
        let i = &self.info;
        format!(
            "{} version {} of {} (tx {}, {}, content_hash {}):\n{}",
            self.id,
            i.version,
            self.of,
            i.tx_id,
            i.tx_time,
            i.content_hash.as_deref().unwrap_or("null"),
            text_of(&self.doc)
        )
    }
}

/// A diff between two versions of one object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionDiff {
    pub id: String,
    pub from: VersionInfo,
    pub to: VersionInfo,
    /// Unified diff of the versions' text (empty when equal).
    pub diff: String,
}

impl VersionDiff {
    pub fn render(&self) -> String {
        if self.diff.is_empty() {
            format!(
                "{}: versions {} and {} have the same text (object_hash {} vs {})",
                self.id,
                self.from.version,
                self.to.version,
                self.from.object_hash.as_deref().unwrap_or("null"),
                self.to.object_hash.as_deref().unwrap_or("null"),
            )
        } else {
            self.diff.clone()
        }
    }
}

/// The text of a version: its `content` when it is a string, otherwise the
/// document without envelope hashes as sorted, pretty JSON (so metadata-only
/// objects still diff line by line).
pub fn text_of(doc: &Document) -> String {
    if let Some(Value::String(s)) = doc.get("content") {
        return s.clone();
    }
    let mut d = doc.clone();
    for k in [
        "identity_hash",
        "content_hash",
        "metadata_hash",
        "object_hash",
    ] {
        d.remove(k);
    }
    let sorted: Value =
        serde_json::from_str(&stable_stringify(&Value::Object(d))).unwrap_or(Value::Null);
    let mut s = serde_json::to_string_pretty(&sorted).unwrap_or_default();
    s.push('\n');
    s
}

fn info(n: usize, v: &Version) -> VersionInfo {
    let doc = v.doc.as_ref();
    let s = |k: &str| {
        doc.and_then(|d| d.get(k))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    VersionInfo {
        version: n,
        tx_id: v.tx_id,
        tx_time: v.tx_time.clone(),
        content_hash: s("content_hash"),
        metadata_hash: s("metadata_hash"),
        object_hash: s("object_hash"),
        size: char_count_of(doc.and_then(|d| d.get("content")).and_then(Value::as_str)),
        state: s("state"),
    }
}

async fn history_of(store: &dyn Store, id: &str) -> Result<Vec<Version>> {
    let h = paged::history(store, id).await?;
    if h.is_empty() {
        return Err(Error::UnknownObject(format!(
            "{id}: no such object in the store"
        )));
    }
    Ok(h)
}

/// Every version of `id`, oldest first (`UNKNOWN_OBJECT` if it has none).
pub async fn versions(store: &dyn Store, id: &str) -> Result<Vec<VersionInfo>> {
    let h = history_of(store, id).await?;
    Ok(h.iter().enumerate().map(|(i, v)| info(i + 1, v)).collect())
}

/// Index into `history` of the version `at` names.
fn pick(id: &str, history: &[Version], at: &VersionRef) -> Result<usize> {
    let n = history.len();
    let missing =
        |what: String| Error::UnknownObject(format!("{id}: {what} (it has {n} versions)"));
    match at {
        VersionRef::Latest => Ok(n - 1),
        VersionRef::Number(k) if *k <= n => Ok(k - 1),
        VersionRef::Number(k) => Err(missing(format!("no version {k}"))),
        VersionRef::TxId(tx) => history
            .iter()
            .rposition(|v| v.tx_id <= *tx)
            .ok_or_else(|| missing(format!("no version at or before tx {tx}"))),
        VersionRef::TxTime(t) => {
            let at = parse_rfc3339_millis(t)?;
            let mut found = None;
            for (i, v) in history.iter().enumerate() {
                if parse_rfc3339_millis(&v.tx_time)? <= at {
                    found = Some(i);
                }
            }
            found.ok_or_else(|| missing(format!("no version at or before {t}")))
        }
        VersionRef::Hash(prefix) => history
            .iter()
            .rposition(|v| {
                v.doc.as_ref().is_some_and(|d| {
                    ["content_hash", "object_hash"].iter().any(|k| {
                        d.get(*k)
                            .and_then(Value::as_str)
                            .is_some_and(|h| h.starts_with(prefix.as_str()))
                    })
                })
            })
            .ok_or_else(|| missing(format!("no version with a hash starting {prefix}"))),
    }
}

fn shown(id: &str, history: &[Version], i: usize) -> Result<ShownVersion> {
    let doc = history[i].doc.clone().ok_or_else(|| {
        Error::UnknownObject(format!("{id}: version {} was erased from the store", i + 1))
    })?;
    Ok(ShownVersion {
        id: id.to_owned(),
        info: info(i + 1, &history[i]),
        doc,
        of: history.len(),
    })
}

/// One version of `id`.
pub async fn show_version(store: &dyn Store, id: &str, at: &VersionRef) -> Result<ShownVersion> {
    let h = history_of(store, id).await?;
    let i = pick(id, &h, at)?;
    shown(id, &h, i)
}

/// Unified diff of version `from` → version `to` of `id`.
pub async fn diff(
    store: &dyn Store,
    id: &str,
    from: &VersionRef,
    to: &VersionRef,
) -> Result<VersionDiff> {
    let h = history_of(store, id).await?;
    let (a, b) = (
        shown(id, &h, pick(id, &h, from)?)?,
        shown(id, &h, pick(id, &h, to)?)?,
    );
    let label = |s: &ShownVersion| format!("{}@v{} (tx {})", s.id, s.info.version, s.info.tx_id);
    let text = unified_diff(&text_of(&a.doc), &text_of(&b.doc), &label(&a), &label(&b));
    Ok(VersionDiff {
        id: id.to_owned(),
        from: a.info,
        to: b.info,
        diff: text,
    })
}

/// The object id a caller's `target` names, for reads of the whole store:
/// whatever the session resolves (id, unique prefix, harness call id, a path
/// of this session), else the id of the file at that path even when this
/// session never saw it, else the target itself (any id in the store).
pub fn object_id_for(session: &Session, target: &str) -> String {
    let t = target.trim();
    let t = t.strip_prefix("id=").unwrap_or(t);
    match session.resolve_target(t) {
        Ok(id) => id,
        Err(r) => r.id.unwrap_or_else(|| t.to_owned()),
    }
}

/// The list as the agent sees it: one line per version, newest last.
pub fn render_versions(id: &str, list: &[VersionInfo]) -> String {
    let mut out = format!("{id}: {} versions (oldest first)\n", list.len());
    for v in list {
        out.push_str(&format!(
            "v{} tx {} {} size {} content_hash {}{}\n",
            v.version,
            v.tx_id,
            v.tx_time,
            v.size,
            v.content_hash
                .as_deref()
                .map_or("null", |h| &h[..h.len().min(12)]),
            v.state
                .as_deref()
                .map(|s| format!(" [{s}]"))
                .unwrap_or_default(),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_refs_parse() {
        assert_eq!(VersionRef::parse("3").unwrap(), VersionRef::Number(3));
        assert_eq!(VersionRef::parse(" v12 ").unwrap(), VersionRef::Number(12));
        assert_eq!(VersionRef::parse("tx:812").unwrap(), VersionRef::TxId(812));
        assert_eq!(VersionRef::parse("LATEST").unwrap(), VersionRef::Latest);
        assert_eq!(
            VersionRef::parse("2026-11-24T10:00:00Z").unwrap(),
            VersionRef::TxTime("2026-11-24T10:00:00Z".into())
        );
        for bad in ["", "0", "v0", "tx:", "tx:x", "yesterday", "-1"] {
            let e = VersionRef::parse(bad).unwrap_err();
            assert_eq!(e.code(), "INVALID_ARGUMENT", "{bad:?}");
        }
    }

    #[test]
    fn link_pins_parse() {
        assert_eq!(VersionRef::parse_pin("v3"), Some(VersionRef::Number(3)));
        assert_eq!(VersionRef::parse_pin("tx:9"), Some(VersionRef::TxId(9)));
        assert_eq!(
            VersionRef::parse_pin("2026-11-25T10:00:00Z"),
            Some(VersionRef::TxTime("2026-11-25T10:00:00Z".into()))
        );
        assert_eq!(
            VersionRef::parse_pin("ABCDEF12"),
            Some(VersionRef::Hash("abcdef12".into()))
        );
        // Not pins: part of the name.
        for name in [
            "2", "1234567", "abc", "home", "v", "latest", "vx", "Tuesday",
        ] {
            assert_eq!(VersionRef::parse_pin(name), None, "{name:?}");
        }
    }
}
