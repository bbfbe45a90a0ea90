//! Timelines: the ordered `(time, commit)` list per session and per
//! principal that `resolve` binary-searches.
//!
//! A timeline is a head `ctx-timeline:<key>` holding its length, the last
//! [`PAGE`] or fewer entries (`tail`) and — for a session — the chain's tip,
//! plus full pages `ctx-timeline:<key>#<k>` of [`PAGE`] entries each, written
//! once when the tail fills. An append therefore reads one document and
//! writes the head (≤ [`PAGE`] entries) and at most one page: constant in
//! the timeline's length. Appends are guarded by `match` on the head, so
//! concurrent writers (many agents of one principal) serialise.
//!
//! Times are kept non-decreasing: an entry's time is the later of the
//! commit's `createdAt` and the previous entry's (clocks of several
//! machines need not agree), so the list stays sorted for the search.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::store::{Document, Store, TxOp, ID_KEY};

/// Entries per page.
pub const PAGE: usize = 64;
pub const HEAD_TYPE: &str = "context_timeline";
pub const PAGE_TYPE: &str = "context_timeline_page";

pub fn session_key(session_id: &str) -> String {
    format!("session:{session_id}")
}

pub fn principal_key(principal: &str) -> String {
    format!("principal:{principal}")
}

pub fn head_id(key: &str) -> String {
    format!("ctx-timeline:{key}")
}

pub fn page_id(key: &str, k: usize) -> String {
    format!("ctx-timeline:{key}#{k}")
}

/// `(milliseconds since the epoch, commit id)`.
pub type Entry = (i64, String);

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Head {
    pub len: u64,
    pub tail: Vec<Entry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tip: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tip_to: Option<u64>,
    /// The document as read (the `match` of the next append).
    #[serde(skip)]
    pub raw: Option<Document>,
}

pub async fn read_head(store: &dyn Store, key: &str) -> Result<Option<Head>> {
    let Some(doc) = store.get(&head_id(key)).await? else {
        return Ok(None);
    };
    let mut h: Head = serde_json::from_value(Value::Object(doc.clone()))
        .map_err(|e| Error::StoreProtocol(format!("malformed timeline {key}: {e}")))?;
    h.raw = Some(doc);
    Ok(Some(h))
}

/// The operations that append `(at_ms, id)` to the timeline whose head was
/// read as `head`; `tip` sets the session's tip (commit, chat position).
pub fn append_ops(
    key: &str,
    head: Option<Head>,
    at_ms: i64,
    id: &str,
    tip: Option<(&str, u64)>,
) -> Vec<TxOp> {
    let expected = head.as_ref().and_then(|h| h.raw.clone());
    let mut h = head.unwrap_or_default();
    let mut ops = vec![TxOp::Match {
        id: head_id(key),
        expected,
    }];
    let last = h.tail.last().map_or(i64::MIN, |e| e.0);
    h.tail.push((at_ms.max(last), id.to_string()));
    h.len += 1;
    if h.tail.len() > PAGE {
        // The tail's first PAGE entries become a page; the newest stays.
        let k = (h.len as usize - h.tail.len()) / PAGE;
        let full: Vec<Entry> = h.tail.drain(..PAGE).collect();
        let mut page = Map::new();
        page.insert(ID_KEY.into(), page_id(key, k).into());
        page.insert("type".into(), PAGE_TYPE.into());
        page.insert("of".into(), head_id(key).into());
        page.insert("page".into(), k.into());
        page.insert(
            "entries".into(),
            serde_json::to_value(full).unwrap_or(Value::Null),
        );
        ops.push(TxOp::Put(page));
    }
    if let Some((tip, to)) = tip {
        h.tip = Some(tip.to_string());
        h.tip_to = Some(to);
    }
    ops.push(TxOp::Put(head_doc(key, &h)));
    ops
}

/// Sets the session's tip without appending (a new branch names its parent
/// before its first commit).
pub fn set_tip_ops(key: &str, head: Option<Head>, tip: &str, to: u64) -> Vec<TxOp> {
    let expected = head.as_ref().and_then(|h| h.raw.clone());
    let mut h = head.unwrap_or_default();
    h.tip = Some(tip.to_string());
    h.tip_to = Some(to);
    replace_head_ops(key, expected, &h)
}

/// Clears the session's tip (a session moved back to before its first
/// commit: its next commit is a new root).
pub fn clear_tip_ops(key: &str, head: Option<Head>) -> Vec<TxOp> {
    let Some(mut h) = head else {
        return Vec::new();
    };
    let expected = h.raw.take();
    h.tip = None;
    h.tip_to = None;
    replace_head_ops(key, expected, &h)
}

/// The head's document as stored.
fn head_doc(key: &str, h: &Head) -> Document {
    let mut doc = match serde_json::to_value(h) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    doc.insert(ID_KEY.into(), head_id(key).into());
    doc.insert("type".into(), HEAD_TYPE.into());
    doc
}

/// Replaces the head read as `expected` (absent: none yet) by `h`.
fn replace_head_ops(key: &str, expected: Option<Document>, h: &Head) -> Vec<TxOp> {
    vec![
        TxOp::Match {
            id: head_id(key),
            expected,
        },
        TxOp::Put(head_doc(key, h)),
    ]
}

/// The tip a session timeline head names.
pub fn tip_of(doc: Document) -> Result<Option<(String, u64)>> {
    let h: Head = serde_json::from_value(Value::Object(doc))
        .map_err(|e| Error::StoreProtocol(format!("malformed timeline head: {e}")))?;
    Ok(h.tip.zip(h.tip_to))
}

async fn read_page(store: &dyn Store, key: &str, k: usize) -> Result<Vec<Entry>> {
    let doc = store
        .get(&page_id(key, k))
        .await?
        .ok_or_else(|| Error::StoreProtocol(format!("timeline {key}: page {k} is missing")))?;
    serde_json::from_value(doc.get("entries").cloned().unwrap_or(Value::Null))
        .map_err(|e| Error::StoreProtocol(format!("timeline {key}: page {k}: {e}")))
}

/// The last entry at or before `at_ms` in a sorted slice.
fn last_at_or_before(entries: &[Entry], at_ms: i64) -> Option<&Entry> {
    let n = entries.partition_point(|e| e.0 <= at_ms);
    n.checked_sub(1).map(|i| &entries[i])
}

/// Binary search: the head's tail first, then the full pages (one read per
/// probe: log2(pages) reads).
pub async fn resolve(store: &dyn Store, key: &str, at_ms: i64) -> Result<Option<String>> {
    let Some(h) = read_head(store, key).await? else {
        return Ok(None);
    };
    if h.tail.first().is_some_and(|e| e.0 <= at_ms) {
        return Ok(last_at_or_before(&h.tail, at_ms).map(|e| e.1.clone()));
    }
    let pages = (h.len as usize - h.tail.len()) / PAGE;
    // The last page whose first entry is at or before `at_ms`: `lo` only
    // moves past a probe that starts early enough, so the last such probe is
    // page `lo - 1`, the answer.
    let (mut lo, mut hi) = (0usize, pages);
    let mut found: Option<Vec<Entry>> = None;
    while lo < hi {
        let mid = (lo + hi) / 2;
        let entries = read_page(store, key, mid).await?;
        if entries.first().is_some_and(|e| e.0 <= at_ms) {
            lo = mid + 1;
            found = Some(entries);
        } else {
            hi = mid;
        }
    }
    let Some(entries) = found else {
        return Ok(None);
    };
    Ok(last_at_or_before(&entries, at_ms).map(|e| e.1.clone()))
}

/// Every entry of a timeline, oldest first (the full pages, then the
/// head's tail): one read per 64 entries.
pub async fn entries(store: &dyn Store, key: &str) -> Result<Vec<Entry>> {
    let Some(h) = read_head(store, key).await? else {
        return Ok(Vec::new());
    };
    let pages = (h.len as usize - h.tail.len()) / PAGE;
    let ids: Vec<String> = (0..pages).map(|k| page_id(key, k)).collect();
    let mut by_page: Vec<Option<Vec<Entry>>> = vec![None; pages];
    for doc in store.get_many(&ids).await? {
        let k = doc.get("page").and_then(Value::as_u64).unwrap_or(u64::MAX) as usize;
        if k < pages {
            by_page[k] = serde_json::from_value(doc.get("entries").cloned().unwrap_or(Value::Null))
                .map_err(|e| Error::StoreProtocol(format!("timeline {key}: page {k}: {e}")))?;
        }
    }
    let mut out = Vec::with_capacity(h.len as usize);
    for (k, p) in by_page.into_iter().enumerate() {
        out.extend(
            p.ok_or_else(|| Error::StoreProtocol(format!("timeline {key}: page {k} is missing")))?,
        );
    }
    out.extend(h.tail);
    Ok(out)
}
