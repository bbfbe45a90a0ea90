//! Portability at rest (memory-system-v0 §11.6; issue 12 item 6): the
//! store, or some sessions of it, as one JSON Lines file, and back into a
//! store of either kind.
//!
//! Format (`scm-export` version 1), one JSON object per line:
//! 1. a header `{"format":"scm-export","version":1,"from":<store kind>,
//!    "scope":"store"|{"sessions":[…]},"objects":n,"versions":n,
//!    "transactions":n}`;
//! 2. every stored version, ordered by its transaction (oldest first, then
//!    by id): `{"tx":<source tx id>,"tx_time":<source tx time>,"doc":{…}}`.
//!    `doc` is the document exactly as stored — its `xt/id`, its hashes,
//!    paged heads and their page documents as they are — so nothing has to
//!    be recomputed to trust it.
//!
//! Import replays the versions **one transaction per source transaction**,
//! in order, so every object's history has the same versions in the same
//! order and what was written together is still written together. The
//! target assigns its own tx ids and times (neither store accepts a given
//! transaction time); the source's are kept in the file. A version the
//! target already holds for that object (in order) is skipped, so
//! importing the same file twice writes nothing the second time.
//!
//! A session's scope: its `session:`, `chat:` and `system_prompt:` objects
//! and their pages, its toolcalls (`toolcall:<sid>:…`) and every object of
//! its session index (files, adopted objects).

use std::collections::{BTreeSet, HashMap};
use std::io::{BufRead, Write};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::model::{chat_object_id, session_object_id, system_prompt_object_id};
use crate::session::paged;
use crate::store::{Document, Store, TxOp, ID_KEY};

pub const FORMAT: &str = "scm-export";
pub const VERSION: u64 = 1;

/// What an export or import did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PortableStats {
    pub objects: u64,
    pub versions: u64,
    pub transactions: u64,
    /// Versions an import skipped (already the target's latest).
    #[serde(default)]
    pub skipped: u64,
    pub bytes: u64,
}

#[derive(Serialize, Deserialize)]
struct Line {
    tx: i64,
    tx_time: String,
    doc: Document,
}

/// The ids a set of sessions consists of (see the module comment).
pub async fn session_ids(store: &dyn Store, sessions: &[String]) -> Result<Vec<String>> {
    let mut ids: BTreeSet<String> = BTreeSet::new();
    let toolcalls = store.ids_of_type("toolcall").await?;
    let pages = store.ids_of_type(paged::PAGE_TYPE).await?;
    for sid in sessions {
        let head = session_object_id(sid);
        let Some(session) = paged::get(store, &head).await? else {
            return Err(Error::UnknownObject(head));
        };
        let chat = chat_object_id(sid);
        for own in [&head, &chat, &system_prompt_object_id(sid)] {
            ids.insert(own.clone());
            let prefix = format!("page:{own}:");
            ids.extend(pages.iter().filter(|p| p.starts_with(&prefix)).cloned());
        }
        let prefix = format!("toolcall:{sid}:");
        ids.extend(toolcalls.iter().filter(|t| t.starts_with(&prefix)).cloned());
        ids.extend(crate::session::documents::SessionDoc::parse(&session)?.session_index);
    }
    Ok(ids.into_iter().collect())
}

/// Write the whole store (`sessions` None) or those sessions to `out`.
pub async fn export(
    store: &dyn Store,
    sessions: Option<&[String]>,
    out: &mut (dyn Write + Send),
) -> Result<PortableStats> {
    let ids = match sessions {
        None => store.all_ids().await?,
        Some(s) => session_ids(store, s).await?,
    };
    let mut lines: Vec<(i64, String, String)> = Vec::new();
    let mut present = 0u64;
    for id in &ids {
        let history = store.history(id).await?;
        if !history.is_empty() {
            present += 1;
        }
        for v in history {
            let Some(doc) = v.doc else { continue };
            let line = serde_json::to_string(&Line {
                tx: v.tx_id,
                tx_time: v.tx_time,
                doc,
            })?;
            lines.push((v.tx_id, id.clone(), line));
        }
    }
    lines.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    let mut txs: Vec<i64> = lines.iter().map(|l| l.0).collect();
    txs.dedup();
    let header = serde_json::json!({
        "format": FORMAT,
        "version": VERSION,
        "from": store.kind(),
        "scope": match sessions {
            None => Value::String("store".into()),
            Some(s) => serde_json::json!({"sessions": s}),
        },
        "objects": present,
        "versions": lines.len(),
        "transactions": txs.len(),
    });
    let io = |e: std::io::Error| Error::Internal(format!("export: write failed: {e}"));
    let mut bytes = 0u64;
    let h = header.to_string();
    writeln!(out, "{h}").map_err(io)?;
    bytes += h.len() as u64 + 1;
    for (_, _, l) in &lines {
        writeln!(out, "{l}").map_err(io)?;
        bytes += l.len() as u64 + 1;
    }
    out.flush().map_err(io)?;
    Ok(PortableStats {
        objects: present,
        versions: lines.len() as u64,
        transactions: txs.len() as u64,
        skipped: 0,
        bytes,
    })
}

/// Read an export from `input` into `store` (see the module comment).
pub async fn import(store: &dyn Store, input: &mut (dyn BufRead + Send)) -> Result<PortableStats> {
    let bad = |n: usize, what: String| Error::InvalidArgument(format!("import: line {n}: {what}"));
    let mut stats = PortableStats::default();
    let mut text = String::new();
    let mut n = 0usize;
    let mut read_line = |text: &mut String| -> Result<bool> {
        text.clear();
        let got = input
            .read_line(text)
            .map_err(|e| Error::Internal(format!("import: read failed: {e}")))?;
        Ok(got > 0)
    };
    if !read_line(&mut text)? {
        return Err(bad(1, "empty file (no scm-export header)".into()));
    }
    stats.bytes += text.len() as u64;
    n += 1;
    let header: Value = serde_json::from_str(text.trim_end())
        .map_err(|e| bad(1, format!("not a JSON header: {e}")))?;
    if header.get("format").and_then(Value::as_str) != Some(FORMAT) {
        return Err(bad(1, format!("not an {FORMAT} file")));
    }
    if header.get("version").and_then(Value::as_u64) != Some(VERSION) {
        return Err(bad(1, format!("unsupported version {}", header["version"])));
    }
    let mut objects: BTreeSet<String> = BTreeSet::new();
    let mut group: Vec<Document> = Vec::new();
    let mut group_tx: Option<i64> = None;
    let mut last_tx = i64::MIN;
    // Per id: the target's versions not yet matched by this import.
    let mut target: HashMap<String, std::collections::VecDeque<Document>> = HashMap::new();
    loop {
        let more = read_line(&mut text)?;
        let line = if more {
            n += 1;
            stats.bytes += text.len() as u64;
            if text.trim().is_empty() {
                continue;
            }
            let l: Line = serde_json::from_str(text.trim_end())
                .map_err(|e| bad(n, format!("not a version line: {e}")))?;
            if !matches!(l.doc.get(ID_KEY), Some(Value::String(_))) {
                return Err(bad(n, "the document has no string \"xt/id\"".into()));
            }
            if l.tx < last_tx {
                return Err(bad(
                    n,
                    format!("tx {} after tx {last_tx}: not in tx order", l.tx),
                ));
            }
            last_tx = l.tx;
            Some(l)
        } else {
            None
        };
        let next_tx = line.as_ref().map(|l| l.tx);
        if group_tx.is_some() && group_tx != next_tx && !group.is_empty() {
            let ops: Vec<TxOp> = std::mem::take(&mut group)
                .into_iter()
                .map(TxOp::Put)
                .collect();
            stats.transactions += 1;
            let r = store.submit(ops).await?;
            if !r.committed {
                return Err(Error::Internal(
                    "import: a transaction did not commit".into(),
                ));
            }
        }
        let Some(l) = line else { break };
        group_tx = Some(l.tx);
        let id = l.doc[ID_KEY].as_str().unwrap_or_default().to_owned();
        objects.insert(id.clone());
        if !target.contains_key(&id) {
            let have = store.history(&id).await?;
            target.insert(id.clone(), have.into_iter().filter_map(|v| v.doc).collect());
        }
        let left = target.get_mut(&id).expect("inserted above");
        if let Some(pos) = left.iter().position(|d| d == &l.doc) {
            // Already there (an earlier import): skip it and what precedes it.
            left.drain(..=pos);
            stats.skipped += 1;
            continue;
        }
        left.clear(); // from here on this object's versions are appended
        stats.versions += 1;
        group.push(l.doc);
    }
    stats.objects = objects.len() as u64;
    Ok(stats)
}

/// [`export`] to a file at `path` (created or replaced).
pub async fn export_file(
    store: &dyn Store,
    sessions: Option<&[String]>,
    path: &std::path::Path,
) -> Result<PortableStats> {
    let f = std::fs::File::create(path).map_err(|e| {
        Error::InvalidArgument(format!("export: cannot create {}: {e}", path.display()))
    })?;
    let mut w = std::io::BufWriter::new(f);
    export(store, sessions, &mut w).await
}

/// [`import`] from the file at `path`.
pub async fn import_file(store: &dyn Store, path: &std::path::Path) -> Result<PortableStats> {
    let f = std::fs::File::open(path).map_err(|e| {
        Error::InvalidArgument(format!("import: cannot open {}: {e}", path.display()))
    })?;
    import(store, &mut std::io::BufReader::new(f)).await
}
