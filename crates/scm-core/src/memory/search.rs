//! Search over the whole store (memory-system-v0 §11.4, §14): full text over
//! the content and metadata of every content object (files — notes are files
//! — and toolcalls) of every session, ranked, returning metadata hits only.
//!
//! **Only the latest version of each object is searchable** (an older
//! version is reached through `versions`/`show_version` once its object is
//! found). Chat, session, system prompt and page documents are not indexed:
//! their text is the transcript, which the toolcalls it references already
//! cover.
//!
//! Backends:
//! - **embedded**: SQLite FTS5 (bundled with rusqlite's `bundled` feature),
//!   maintained inside the same transaction as the versions it indexes
//!   ([`fts`]), ranked by `bm25` with the label (path, tool, arguments)
//!   weighted [`LABEL_WEIGHT`]× the content.
//! - **XTDB**: XTDB's Lucene module is not served by the reachable registry,
//!   so the store keeps a term index in the documents themselves: each
//!   searchable document it writes carries its distinct words
//!   ([`TERMS_KEY`], stripped on every read), which XTDB indexes; one
//!   Datalog query selects the objects holding every term through that
//!   index and pulls only those; they are ranked here with BM25's
//!   term-frequency saturation and length normalisation (no idf: the node
//!   gives no collection statistics) ([`xtdb_query_edn`], [`rank`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::model::FilesystemSource;
use crate::session::paged;
use crate::store::embedded::{format_rfc3339_millis, parse_rfc3339_millis};
use crate::store::xtdb::push_edn_string;
use crate::store::{Document, Store, ID_KEY};

/// Hits returned when the caller gives no limit.
pub const DEFAULT_LIMIT: usize = 10;
/// Most hits one search returns.
pub const MAX_LIMIT: usize = 200;
/// How much a term in the label counts against one in the content.
pub const LABEL_WEIGHT: f64 = 4.0;
/// Object types that are indexed.
pub const SEARCHABLE_TYPES: [&str; 2] = ["file", "toolcall"];

/// What a caller passes besides the query text.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct SearchOptions {
    /// Object types to keep (`file`, `toolcall`); all when absent.
    pub types: Option<Vec<String>>,
    /// Sessions whose objects to keep (their toolcalls, and every object in
    /// their session index); all when absent.
    pub sessions: Option<Vec<String>>,
    /// RFC 3339: keep objects whose latest version was written at or after it.
    pub since: Option<String>,
    pub limit: Option<usize>,
}

/// One query term, lower-cased; `prefix` when typed with a trailing `*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    pub text: String,
    pub prefix: bool,
}

/// A parsed, validated query as the stores receive it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchQuery {
    /// Every term must occur (AND), in the label or the content.
    pub terms: Vec<Term>,
    pub types: Vec<String>,
    /// `(session ids, object ids of their session indexes)`.
    pub sessions: Option<(Vec<String>, Vec<String>)>,
    pub since_ms: Option<i64>,
    pub limit: usize,
}

impl SearchQuery {
    /// Whether `row` passes the type, session and time filters.
    pub fn keeps(&self, row: &SearchRow, tx_ms: Option<i64>) -> bool {
        if !self.types.is_empty() && !self.types.contains(&row.object_type) {
            return false;
        }
        if let Some((sessions, ids)) = &self.sessions {
            let by_session = row.session.as_ref().is_some_and(|s| sessions.contains(s));
            if !by_session && !ids.contains(&row.id) {
                return false;
            }
        }
        match (self.since_ms, tx_ms) {
            (Some(since), Some(t)) => t >= since,
            _ => true,
        }
    }
}

/// One hit: metadata, a snippet, never the content.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchHit {
    pub id: String,
    #[serde(rename = "type")]
    pub object_type: String,
    /// A file's canonical path.
    pub path: Option<String>,
    /// A toolcall's tool.
    pub tool: Option<String>,
    /// The session a toolcall belongs to (files belong to no one session).
    pub session: Option<String>,
    /// Transaction time of the latest version.
    pub tx_time: String,
    /// Matching text with the terms in `[` `]`.
    pub snippet: String,
    /// Higher is better; comparable only within one result list.
    pub score: f64,
}

/// What is indexed for one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchRow {
    pub id: String,
    pub object_type: String,
    pub path: Option<String>,
    pub tool: Option<String>,
    pub session: Option<String>,
    /// Path, or tool plus its arguments: metadata the agent names things by.
    pub label: String,
    /// The content (empty for a stub or a deleted file).
    pub body: String,
}

/// The index row of a document, or None for a type that is not indexed.
pub fn row_of(doc: &Document) -> Option<SearchRow> {
    let object_type = doc.get("type")?.as_str()?;
    if !SEARCHABLE_TYPES.contains(&object_type) {
        return None;
    }
    let s = |k: &str| doc.get(k).and_then(Value::as_str).map(str::to_owned);
    let id = s(ID_KEY)?;
    let path = doc
        .get("source")
        .and_then(FilesystemSource::from_json)
        .map(|src| src.path);
    let tool = s("tool");
    let session = s("chat_ref").and_then(|c| c.strip_prefix("chat:").map(str::to_owned));
    let label = match (&path, &tool) {
        (Some(p), _) => p.clone(),
        (None, Some(t)) => {
            let args = s("args_display").unwrap_or_else(|| {
                doc.get("args")
                    .filter(|a| !a.is_null())
                    .map(Value::to_string)
                    .unwrap_or_default()
            });
            format!("{t} {args}")
        }
        (None, None) => String::new(),
    };
    Some(SearchRow {
        id,
        object_type: object_type.to_owned(),
        path,
        tool,
        session,
        label,
        body: s("content").unwrap_or_default(),
    })
}

/// Split what the caller typed into terms: runs of letters and digits,
/// lower-cased; a `*` right after a term makes it a prefix.
pub fn parse_terms(query: &str) -> Vec<Term> {
    let mut terms = Vec::new();
    let mut cur = String::new();
    for c in query.chars() {
        if c.is_alphanumeric() {
            cur.extend(c.to_lowercase());
            continue;
        }
        if !cur.is_empty() {
            terms.push(Term {
                text: std::mem::take(&mut cur),
                prefix: c == '*',
            });
        }
    }
    if !cur.is_empty() {
        terms.push(Term {
            text: cur,
            prefix: false,
        });
    }
    terms
}

/// Parse and validate a query and its options; `sessions` are resolved to
/// their session indexes here, once, for every backend.
pub async fn prepare(store: &dyn Store, query: &str, opts: &SearchOptions) -> Result<SearchQuery> {
    let terms = parse_terms(query);
    if terms.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "search: the query {query:?} has no words to search for"
        )));
    }
    let types = opts.types.clone().unwrap_or_default();
    for t in &types {
        if !SEARCHABLE_TYPES.contains(&t.as_str()) {
            return Err(Error::InvalidArgument(format!(
                "search: type {t:?} is not searchable (expected one of {SEARCHABLE_TYPES:?})"
            )));
        }
    }
    let since_ms = opts
        .since
        .as_deref()
        .map(parse_rfc3339_millis)
        .transpose()?;
    let limit = opts.limit.unwrap_or(DEFAULT_LIMIT);
    if limit == 0 || limit > MAX_LIMIT {
        return Err(Error::InvalidArgument(format!(
            "search: limit must be 1..={MAX_LIMIT}, got {limit}"
        )));
    }
    let sessions = match &opts.sessions {
        None => None,
        Some(list) => {
            let mut ids = Vec::new();
            for sid in list {
                if let Some(doc) = paged::get(store, &crate::model::session_object_id(sid)).await? {
                    if let Some(Value::Array(index)) = doc.get("session_index") {
                        ids.extend(index.iter().filter_map(Value::as_str).map(str::to_owned));
                    }
                }
            }
            Some((list.clone(), ids))
        }
    };
    Ok(SearchQuery {
        terms,
        types,
        sessions,
        since_ms,
        limit,
    })
}

/// Search the whole store.
pub async fn search(
    store: &dyn Store,
    query: &str,
    opts: &SearchOptions,
) -> Result<Vec<SearchHit>> {
    let q = prepare(store, query, opts).await?;
    store.search(&q).await
}

/// The hits as the agent sees them: one line each.
pub fn render_hits(
    query: &str,
    hits: &[SearchHit],
    display: impl Fn(&SearchHit) -> String,
) -> String {
    if hits.is_empty() {
        return format!("no objects match {query:?}");
    }
    let mut out = format!("{} objects match {query:?} (best first):\n", hits.len());
    for h in hits {
        out.push_str(&format!(
            "- id={} {} {}{} {}: {}\n",
            h.id,
            h.object_type,
            display(h),
            h.session
                .as_deref()
                .map(|s| format!(" session={s}"))
                .unwrap_or_default(),
            h.tx_time,
            h.snippet.replace('\n', " ")
        ));
    }
    out
}

// ------------------------------------------------------------ embedded

/// The FTS5 index of the embedded store. Tables:
///
/// ```sql
/// search_docs(rowid INTEGER PRIMARY KEY, id TEXT UNIQUE, type, path, tool,
///             session, tx_id, tx_time)
/// search_fts USING fts5(label, body)      -- rowid = search_docs.rowid
/// search_state(k TEXT PRIMARY KEY, v)     -- 'indexed_tx': last tx indexed
/// ```
///
/// [`fts::index`] runs inside the store's write transaction, so the index
/// and the versions commit together. [`fts::ensure`] creates the tables in a
/// file written before they existed (or by a build without them) and indexes
/// every object whose latest version is newer than `indexed_tx`.
pub mod fts {
    use rusqlite::{params, Connection, OptionalExtension};

    use super::*;

    pub const SQL: &str = "
CREATE TABLE IF NOT EXISTS search_docs (
    rowid   INTEGER PRIMARY KEY,
    id      TEXT NOT NULL UNIQUE,
    type    TEXT NOT NULL,
    path    TEXT,
    tool    TEXT,
    session TEXT,
    tx_id   INTEGER NOT NULL,
    tx_time TEXT NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS search_fts USING fts5(label, body, tokenize = 'unicode61');
CREATE TABLE IF NOT EXISTS search_state (k TEXT PRIMARY KEY, v INTEGER NOT NULL);
";

    /// Index the latest version of each put (in order: the last put of an id
    /// wins) and record `tx_id` as indexed. `puts` are documents as JSON.
    pub fn index(
        conn: &Connection,
        tx_id: i64,
        tx_time: &str,
        rows: &[(String, Option<SearchRow>)],
    ) -> rusqlite::Result<()> {
        for (id, row) in rows {
            let old: Option<i64> = conn
                .prepare_cached("SELECT rowid FROM search_docs WHERE id = ?1")?
                .query_row([id], |r| r.get(0))
                .optional()?;
            if let Some(rowid) = old {
                conn.prepare_cached("DELETE FROM search_fts WHERE rowid = ?1")?
                    .execute([rowid])?;
                conn.prepare_cached("DELETE FROM search_docs WHERE rowid = ?1")?
                    .execute([rowid])?;
            }
            let Some(row) = row else { continue };
            conn.prepare_cached(
                "INSERT INTO search_docs (id, type, path, tool, session, tx_id, tx_time)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute(params![
                row.id,
                row.object_type,
                row.path,
                row.tool,
                row.session,
                tx_id,
                tx_time
            ])?;
            let rowid = conn.last_insert_rowid();
            conn.prepare_cached("INSERT INTO search_fts (rowid, label, body) VALUES (?1, ?2, ?3)")?
                .execute(params![rowid, row.label, row.body])?;
        }
        conn.prepare_cached(
            "INSERT INTO search_state (k, v) VALUES ('indexed_tx', ?1)
             ON CONFLICT (k) DO UPDATE SET v = max(v, excluded.v)",
        )?
        .execute([tx_id])?;
        Ok(())
    }

    /// Create the tables if needed and index what was written since the
    /// last indexed transaction. Returns how many objects were (re)indexed.
    pub fn ensure(conn: &Connection) -> rusqlite::Result<usize> {
        conn.execute_batch(SQL)?;
        let indexed: i64 = conn
            .query_row(
                "SELECT v FROM search_state WHERE k = 'indexed_tx'",
                [],
                |r| r.get(0),
            )
            .optional()?
            .unwrap_or(0);
        let latest: i64 = conn.query_row(
            "SELECT coalesce(max(tx_id), 0) FROM tx WHERE committed = 1",
            [],
            |r| r.get(0),
        )?;
        if latest <= indexed {
            return Ok(0);
        }
        let mut stmt = conn.prepare(
            "SELECT v.id, v.tx_id, t.tx_time, v.doc FROM versions v JOIN tx t USING (tx_id)
             WHERE v.tx_id > ?1
               AND v.tx_id = (SELECT max(tx_id) FROM versions WHERE id = v.id)",
        )?;
        let todo: Vec<(String, i64, String, String)> = stmt
            .query_map([indexed], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })?
            .collect::<rusqlite::Result<_>>()?;
        for (id, tx_id, tx_time, doc) in &todo {
            let row = serde_json::from_str::<Document>(doc)
                .ok()
                .and_then(|d| row_of(&d));
            index(conn, *tx_id, tx_time, &[(id.clone(), row)])?;
        }
        conn.execute(
            "INSERT INTO search_state (k, v) VALUES ('indexed_tx', ?1)
             ON CONFLICT (k) DO UPDATE SET v = max(v, excluded.v)",
            [latest],
        )?;
        Ok(todo.len())
    }

    /// The FTS5 query for `terms`: each a quoted string (quotes doubled),
    /// `*` for a prefix, all required.
    pub fn match_expr(terms: &[Term]) -> String {
        terms
            .iter()
            .map(|t| {
                let q = format!("\"{}\"", t.text.replace('"', "\"\""));
                if t.prefix {
                    format!("{q}*")
                } else {
                    q
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    pub fn search(conn: &Connection, q: &SearchQuery) -> rusqlite::Result<Vec<SearchHit>> {
        let mut sql = format!(
            "SELECT d.id, d.type, d.path, d.tool, d.session, d.tx_time,
                    snippet(search_fts, -1, '[', ']', '…', 12), bm25(search_fts, {LABEL_WEIGHT}, 1.0) AS score
             FROM search_fts JOIN search_docs d ON d.rowid = search_fts.rowid
             WHERE search_fts MATCH ?1"
        );
        let mut args: Vec<rusqlite::types::Value> = vec![match_expr(&q.terms).into()];
        if !q.types.is_empty() {
            args.push(serde_json::to_string(&q.types).unwrap_or_default().into());
            sql.push_str(&format!(
                " AND d.type IN (SELECT value FROM json_each(?{}))",
                args.len()
            ));
        }
        if let Some((sessions, ids)) = &q.sessions {
            args.push(serde_json::to_string(sessions).unwrap_or_default().into());
            args.push(serde_json::to_string(ids).unwrap_or_default().into());
            sql.push_str(&format!(
                " AND (d.session IN (SELECT value FROM json_each(?{})) OR d.id IN (SELECT value FROM json_each(?{})))",
                args.len() - 1,
                args.len()
            ));
        }
        if let Some(ms) = q.since_ms {
            args.push(format_rfc3339_millis(ms).into());
            sql.push_str(&format!(" AND d.tx_time >= ?{}", args.len()));
        }
        args.push((q.limit as i64).into());
        sql.push_str(&format!(" ORDER BY score LIMIT ?{}", args.len()));
        let mut stmt = conn.prepare_cached(&sql)?;
        let hits = stmt
            .query_map(rusqlite::params_from_iter(args), |r| {
                let score: f64 = r.get(7)?;
                Ok(SearchHit {
                    id: r.get(0)?,
                    object_type: r.get(1)?,
                    path: r.get(2)?,
                    tool: r.get(3)?,
                    session: r.get(4)?,
                    tx_time: r.get(5)?,
                    snippet: r.get(6)?,
                    // bm25() is lower-is-better; hits report higher-is-better.
                    score: -score,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(hits)
    }
}

// ------------------------------------------------------------ XTDB

/// The field an XTDB store adds to each searchable document it writes: the
/// distinct words of its label and content, lower-cased (as [`parse_terms`]
/// splits a query). XTDB indexes every element of a top-level vector, so
/// `[e :scm_terms "word"]` is an index lookup. The store strips the field on
/// every read: documents round-trip unchanged (hashes, export, `match`).
pub const TERMS_KEY: &str = "scm_terms";

/// The words of `doc` to index, sorted and distinct; None for a type that
/// is not searchable.
pub fn terms_of(doc: &Document) -> Option<Vec<String>> {
    let row = row_of(doc)?;
    let mut words: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    for text in [&row.label, &row.body] {
        for w in text.split(|c: char| !c.is_alphanumeric()) {
            if !w.is_empty() {
                words.insert(w.to_lowercase());
            }
        }
    }
    Some(words.into_iter().collect())
}

/// The Datalog query that selects (on the node) the objects holding every
/// term, through the term index ([`TERMS_KEY`]): an exact term is one index
/// lookup, a prefix term a range over the index's sorted values. Pulls the
/// fields ranking needs.
pub fn xtdb_query_edn(q: &SearchQuery) -> String {
    let types: Vec<&str> = if q.types.is_empty() {
        SEARCHABLE_TYPES.to_vec()
    } else {
        q.types.iter().map(String::as_str).collect()
    };
    let mut edn = String::from(
        "{:query {:find [(pull e [:xt/id :type :content :source :tool :args_display :args :chat_ref])] :where [",
    );
    // Exact terms first: they bind `e` from the index.
    let mut terms: Vec<&Term> = q.terms.iter().collect();
    terms.sort_by_key(|t| t.prefix);
    for (i, term) in terms.iter().enumerate() {
        let mut lit = String::new();
        push_edn_string(&mut lit, &term.text);
        if term.prefix {
            let mut hi = String::new();
            push_edn_string(&mut hi, &format!("{}\u{10FFFF}", term.text));
            edn.push_str(&format!(
                "[e :{TERMS_KEY} p{i}] [(>= p{i} {lit})] [(< p{i} {hi})] "
            ));
        } else {
            edn.push_str(&format!("[e :{TERMS_KEY} {lit}] "));
        }
    }
    edn.push_str("[e :type t] [(contains? #{");
    for (i, t) in types.iter().enumerate() {
        if i > 0 {
            edn.push(' ');
        }
        push_edn_string(&mut edn, t);
    }
    edn.push_str("} t)]]}}");
    edn
}

/// The former query: a scan of every content string on the node (kept for
/// the benchmark's before/after and for documents written before the term
/// index, which it does not find).
pub fn xtdb_scan_query_edn(q: &SearchQuery) -> String {
    let types: Vec<&str> = if q.types.is_empty() {
        SEARCHABLE_TYPES.to_vec()
    } else {
        q.types.iter().map(String::as_str).collect()
    };
    let mut edn = String::from(
        "{:query {:find [(pull e [:xt/id :type :content :source :tool :args_display :args :chat_ref])] :where [[e :type t] [(contains? #{",
    );
    for (i, t) in types.iter().enumerate() {
        if i > 0 {
            edn.push(' ');
        }
        push_edn_string(&mut edn, t);
    }
    edn.push_str("} t)]");
    for term in &q.terms {
        // A term matches as a substring (a prefix search is a substring
        // search here; exact word boundaries are checked when ranking).
        let mut lit = String::new();
        push_edn_string(&mut lit, &term.text);
        edn.push_str(" (or-join [e]");
        for attr in [":content", ":tool", ":args_display"] {
            edn.push_str(&format!(
                " (and [e {attr} v] [(string? v)] [(clojure.string/lower-case v) lv] [(clojure.string/includes? lv {lit})])"
            ));
        }
        edn.push_str(&format!(
            " (and [e :source s] [(get s :path) v] [(string? v)] [(clojure.string/lower-case v) lv] [(clojure.string/includes? lv {lit})])"
        ));
        edn.push(')');
    }
    edn.push_str("]}}");
    edn
}

/// Rank the documents an XTDB scan returned (BM25 tf saturation and length
/// normalisation, label weighted; terms must occur as words or word
/// prefixes) and apply the filters but `since` (which needs tx times).
/// Returns the kept rows, best first, with their score and snippet.
pub fn rank(q: &SearchQuery, docs: &[Document]) -> Vec<(SearchRow, f64, String)> {
    let rows: Vec<SearchRow> = docs
        .iter()
        .filter_map(row_of)
        .filter(|r| q.keeps(r, None))
        .collect();
    if rows.is_empty() {
        return Vec::new();
    }
    let words = |s: &str| -> Vec<String> {
        s.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    let tokenised: Vec<(Vec<String>, Vec<String>)> = rows
        .iter()
        .map(|r| (words(&r.label), words(&r.body)))
        .collect();
    let avg = |f: fn(&(Vec<String>, Vec<String>)) -> usize| {
        (tokenised.iter().map(f).sum::<usize>() as f64 / tokenised.len() as f64).max(1.0)
    };
    let (avg_label, avg_body) = (avg(|t| t.0.len()), avg(|t| t.1.len()));
    let (k1, b) = (1.2, 0.75);
    let bm25 = |tf: usize, len: usize, avg: f64| {
        let tf = tf as f64;
        tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * len as f64 / avg))
    };
    let mut out = Vec::new();
    for (row, (label, body)) in rows.into_iter().zip(&tokenised) {
        let count = |ws: &[String], t: &Term| {
            ws.iter()
                .filter(|w| {
                    if t.prefix {
                        w.starts_with(&t.text)
                    } else {
                        **w == t.text
                    }
                })
                .count()
        };
        let mut score = 0.0;
        let mut all = true;
        for t in &q.terms {
            let (tl, tb) = (count(label, t), count(body, t));
            if tl + tb == 0 {
                all = false;
                break;
            }
            score +=
                LABEL_WEIGHT * bm25(tl, label.len(), avg_label) + bm25(tb, body.len(), avg_body);
        }
        if all {
            let snippet = snippet_of(&row, &q.terms);
            out.push((row, score, snippet));
        }
    }
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.id.cmp(&b.0.id)));
    out
}

/// Up to 12 words around the first term occurrence, terms in `[` `]`.
fn snippet_of(row: &SearchRow, terms: &[Term]) -> String {
    let text = if row.body.is_empty() {
        &row.label
    } else {
        &row.body
    };
    let words: Vec<&str> = text.split_whitespace().collect();
    let hit = |w: &str| {
        let lw: String = w
            .chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect();
        terms.iter().any(|t| {
            if t.prefix {
                lw.starts_with(&t.text)
            } else {
                lw == t.text
            }
        })
    };
    let first = words.iter().position(|w| hit(w));
    let Some(first) = first else {
        // The terms matched the label only.
        return row.label.clone();
    };
    let start = first.saturating_sub(4);
    let end = (start + 12).min(words.len());
    let mut s = String::new();
    if start > 0 {
        s.push('…');
    }
    for (i, w) in words[start..end].iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        if hit(w) {
            s.push_str(&format!("[{w}]"));
        } else {
            s.push_str(w);
        }
    }
    if end < words.len() {
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_are_words_lowercased_with_prefixes() {
        let t = parse_terms("Parse* the \"JSON\"  config-file, ümlaut");
        let got: Vec<(&str, bool)> = t.iter().map(|t| (t.text.as_str(), t.prefix)).collect();
        assert_eq!(
            got,
            [
                ("parse", true),
                ("the", false),
                ("json", false),
                ("config", false),
                ("file", false),
                ("ümlaut", false)
            ]
        );
        assert!(parse_terms(" -- ** ").is_empty());
    }

    #[test]
    fn fts_match_expressions_quote_every_term() {
        let t = parse_terms("a\"b* c");
        assert_eq!(fts::match_expr(&t), "\"a\" \"b\"* \"c\"");
    }
}
