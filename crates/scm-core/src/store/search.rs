//! The store's search index (memory-system-v0 §11.4, §14): the query as the
//! stores receive it, the searchable row of a document, and per backend the
//! index — embedded: SQLite FTS5 ([`fts`]); XTDB: a term field in the
//! documents ([`TERMS_KEY`], the query text is in `store::xtdb`) ranked here
//! ([`rank`]). Parsing a caller's query and options is `memory::search`.

use serde::Serialize;
use serde_json::Value;

use crate::model::time::format_rfc3339_millis;
use crate::model::FilesystemSource;
use crate::model::{Document, ID_KEY};

/// How much a term in the label counts against one in the content.
pub const LABEL_WEIGHT: f64 = 4.0;
/// Object types that are indexed.
pub const SEARCHABLE_TYPES: [&str; 2] = ["file", "toolcall"];

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
