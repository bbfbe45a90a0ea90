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

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::session::documents::SessionDoc;
use crate::session::paged;
use crate::store::time::parse_rfc3339_millis;
use crate::store::Store;

pub use crate::store::search::{
    fts, parse_terms, rank, row_of, terms_of, SearchHit, SearchQuery, SearchRow, Term,
    LABEL_WEIGHT, SEARCHABLE_TYPES, TERMS_KEY,
};
pub use crate::store::xtdb::{xtdb_query_edn, xtdb_scan_query_edn};

/// Hits returned when the caller gives no limit.
pub const DEFAULT_LIMIT: usize = 10;
/// Most hits one search returns.
pub const MAX_LIMIT: usize = 200;
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
                    ids.extend(SessionDoc::parse(&doc)?.session_index);
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
