//! Memory across sessions on the session handle: older versions on request
//! (`versions`, `showVersion`, `diff`). Conversions only; the rules live in
//! `scm_core::memory`.

use napi_derive::napi;
use scm_core::memory::expand::{self, Select};
use scm_core::memory::links;
use scm_core::memory::{self, versions::object_id_for, SearchOptions, VersionRef};
use serde::Serialize;
use serde_json::json;

use crate::errors::{parse_json, to_js, to_json, IntoJsResult};
use crate::session::JsOpResult;
use crate::session::JsSession;

/// A core result as JSON, plus the text the agent sees.
// Reached only through the napi-generated callbacks, which dead-code analysis
// does not follow for an `impl` block outside the struct's module.
#[allow(dead_code)]
fn with_text(inner: &impl Serialize, text: String) -> napi::Result<String> {
    let mut v = serde_json::to_value(inner)
        .map_err(|e| to_js(scm_core::Error::Internal(format!("json: {e}"))))?;
    v["text"] = json!(text);
    to_json(&v)
}

/// Full-text search over the whole store as JSON `{hits, text}` (the
/// session's `search` and the store's, for the command-line tool).
pub(crate) async fn search_json(
    store: &dyn scm_core::store::Store,
    query: &str,
    options_json: Option<&str>,
) -> napi::Result<String> {
    let opts: SearchOptions = match options_json {
        None | Some("null") => SearchOptions::default(),
        Some(j) => parse_json(j, "search options")?,
    };
    let hits = memory::search(store, query, &opts).await.js()?;
    let text = memory::search::render_hits(query, &hits, |h| match (&h.path, &h.tool) {
        (Some(p), _) => format!("path={p}"),
        (None, Some(t)) => format!("tool={t}"),
        _ => String::new(),
    });
    to_json(&json!({"hits": hits, "text": text}))
}

#[napi]
impl JsSession {
    /// Every version of the object `target` names, oldest first, as JSON
    /// `{id, versions: [{version, txId, txTime, contentHash, metadataHash,
    /// objectHash, size, state}], text}`.
    #[napi]
    pub async fn versions(&self, target: String) -> napi::Result<String> {
        let store = self.handle.settled_store().await;
        let id = self.handle.with(|s| Ok(object_id_for(s, &target))).js()?;
        let list = memory::versions(store, &id).await.js()?;
        let text = memory::versions::render_versions(&id, &list);
        to_json(&json!({"id": id, "versions": list, "text": text}))
    }

    /// One version (`3`, `v3`, `tx:<id>`, `latest`, an RFC 3339 time) as
    /// JSON `{id, version, …, of, doc, text}`. Shown to the caller only: the
    /// session's sets are untouched.
    #[napi]
    pub async fn show_version(&self, target: String, version: String) -> napi::Result<String> {
        let at = VersionRef::parse(&version).js()?;
        let store = self.handle.settled_store().await;
        let id = self.handle.with(|s| Ok(object_id_for(s, &target))).js()?;
        let shown = memory::show_version(store, &id, &at).await.js()?;
        let mut v =
            serde_json::to_value(&shown).map_err(|e| crate::errors::invalid_arg(e.to_string()))?;
        v["text"] = json!(shown.render());
        to_json(&v)
    }

    /// Unified diff between two versions as JSON `{id, from, to, diff, text}`.
    #[napi]
    pub async fn diff(&self, target: String, from: String, to: String) -> napi::Result<String> {
        let (from, to) = (VersionRef::parse(&from).js()?, VersionRef::parse(&to).js()?);
        let store = self.handle.settled_store().await;
        let id = self.handle.with(|s| Ok(object_id_for(s, &target))).js()?;
        let d = memory::diff_versions(store, &id, &from, &to).await.js()?;
        let mut v =
            serde_json::to_value(&d).map_err(|e| crate::errors::invalid_arg(e.to_string()))?;
        v["text"] = json!(d.render());
        to_json(&v)
    }

    /// Full-text search over every session's objects: JSON `{hits: [{id,
    /// type, path, tool, session, txTime, snippet, score}], text}`.
    /// `optionsJson`: `{types?, sessions?, since?, limit?}`.
    #[napi]
    pub async fn search(
        &self,
        query: String,
        options_json: Option<String>,
    ) -> napi::Result<String> {
        search_json(
            self.handle.settled_store().await,
            &query,
            options_json.as_deref(),
        )
        .await
    }

    /// Activates what an object links to: all links, or those `selectJson`
    /// (`{types?, path?, positions?}`) keeps; a link pinned to a version
    /// shows that version instead. JSON `{id, items: [{id, path, outcome,
    /// message, pin?, version?}], text}`.
    #[napi]
    pub async fn expand(
        &self,
        target: String,
        select_json: Option<String>,
    ) -> napi::Result<String> {
        let select: Select = match select_json.as_deref() {
            None | Some("null") => Select::default(),
            Some(j) => parse_json(j, "expand select")?,
        };
        let (id, items) = self.handle.expand(&target, &select).await.js()?;
        let text = expand::render_expand(&id, &items);
        to_json(&json!({"id": id, "items": items, "text": text}))
    }

    /// Who links to the object: JSON `{id, backlinks: [{id, type, path,
    /// at: [{field, line}]}], text}`.
    #[napi]
    pub async fn backlinks(&self, target: String) -> napi::Result<String> {
        let store = self.handle.settled_store().await;
        let id = self.handle.with(|s| Ok(object_id_for(s, &target))).js()?;
        let list = links::backlinks(store, &id).await.js()?;
        let text = links::render_backlinks(&id, &list);
        to_json(&json!({"id": id, "backlinks": list, "text": text}))
    }

    /// activate / deactivate / pin / unpin, also for an object of the store
    /// this session has not seen (it joins the session index and pool
    /// first). The session write is queued (see `flush`).
    #[napi]
    pub async fn set_op_any(&self, op: String, target: String) -> napi::Result<JsOpResult> {
        let set_op = crate::session::set_op_named(&op)?;
        self.handle
            .set_op_any(set_op, &target)
            .await
            .js()
            .map(Into::into)
    }
}
