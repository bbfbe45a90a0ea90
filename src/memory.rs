//! Memory across sessions on the session handle: older versions on request
//! (`versions`, `showVersion`, `diff`). Conversions only; the rules live in
//! `scm_core::memory`.

use napi_derive::napi;
use scm_core::memory::links::{self, ExpandStep, Select};
use scm_core::memory::{self, adopt, versions::object_id_for, SearchOptions, VersionRef};
use scm_core::session::links::{item, not_found};
use scm_core::session::{FileOp, OpResult, Session, SetOp};
use serde::Serialize;
use serde_json::json;

use crate::errors::{invalid_arg, parse_json, to_js, to_json, IntoJsResult};
use crate::session::JsOpResult;
use crate::session::{JsSession, Shared};

impl Shared {
    /// A note's link targets join the pool as metadata (core
    /// `Session::bring_link_targets`, split so the lock is not held across
    /// the store/indexer awaits). Best effort: a failure is logged.
    pub(crate) async fn bring_link_targets(&self, id: &str) {
        let Ok((indexer, (paths, ids, pins))) =
            self.with(|s| Ok((s.indexer(), s.link_targets_to_bring(id))))
        else {
            return;
        };
        let mut docs = Vec::new();
        if !paths.is_empty() {
            if let Ok(found) = indexer.discover_files(&paths).await {
                docs.extend(found.into_iter().map(|r| r.doc));
            }
        }
        for t in ids {
            if let Ok(Some(doc)) = adopt::fetch(&*self.store, &t).await {
                docs.push(doc);
            }
        }
        let resolved = links::resolve_pins(&*self.store, &pins)
            .await
            .unwrap_or_default();
        let _ = self.with(|s| {
            s.apply_link_targets(docs);
            s.apply_pins(resolved);
            Ok(())
        });
    }
}

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
        self.shared.settle().await;
        let id = self.shared.with(|s| Ok(object_id_for(s, &target))).js()?;
        let list = memory::versions(&*self.shared.store, &id).await.js()?;
        let text = memory::versions::render_versions(&id, &list);
        to_json(&json!({"id": id, "versions": list, "text": text}))
    }

    /// One version (`3`, `v3`, `tx:<id>`, `latest`, an RFC 3339 time) as
    /// JSON `{id, version, …, of, doc, text}`. Shown to the caller only: the
    /// session's sets are untouched.
    #[napi]
    pub async fn show_version(&self, target: String, version: String) -> napi::Result<String> {
        self.shared.settle().await;
        let at = VersionRef::parse(&version).js()?;
        let id = self.shared.with(|s| Ok(object_id_for(s, &target))).js()?;
        let shown = memory::show_version(&*self.shared.store, &id, &at)
            .await
            .js()?;
        let mut v =
            serde_json::to_value(&shown).map_err(|e| crate::errors::invalid_arg(e.to_string()))?;
        v["text"] = json!(shown.render());
        to_json(&v)
    }

    /// Unified diff between two versions as JSON `{id, from, to, diff, text}`.
    #[napi]
    pub async fn diff(&self, target: String, from: String, to: String) -> napi::Result<String> {
        self.shared.settle().await;
        let (from, to) = (VersionRef::parse(&from).js()?, VersionRef::parse(&to).js()?);
        let id = self.shared.with(|s| Ok(object_id_for(s, &target))).js()?;
        let d = memory::diff_versions(&*self.shared.store, &id, &from, &to)
            .await
            .js()?;
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
        self.shared.settle().await;
        search_json(&*self.shared.store, &query, options_json.as_deref()).await
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
        self.shared.settle().await;
        let id = self.shared.with(|s| Ok(object_id_for(s, &target))).js()?;
        let doc = links::source_doc(&*self.shared.store, &id).await.js()?;
        let steps = links::plan_expand(&*self.shared.store, &doc, &select)
            .await
            .js()?;
        let mut items = Vec::with_capacity(steps.len());
        for step in steps {
            items.push(match step {
                ExpandStep::Activate { id, doc } => {
                    self.shared.with(|s| Ok(s.expand_stored(&id, doc))).js()?
                }
                ExpandStep::Read { id, path } => {
                    let r = self.shared.file_op(FileOp::Read, path.clone()).await.js()?;
                    item(&id, Some(path), &r)
                }
                ExpandStep::NotFound { id, path } => not_found(&id, path),
                ExpandStep::ShowVersion { id, path, pin } => {
                    links::show_pinned(&*self.shared.store, &id, path, &pin)
                        .await
                        .js()?
                }
            });
        }
        self.shared.flush_tolerant().await.js()?;
        let text = links::render_expand(&id, &items);
        to_json(&json!({"id": id, "items": items, "text": text}))
    }

    /// Who links to the object: JSON `{id, backlinks: [{id, type, path,
    /// at: [{field, line}]}], text}`.
    #[napi]
    pub async fn backlinks(&self, target: String) -> napi::Result<String> {
        self.shared.settle().await;
        let id = self.shared.with(|s| Ok(object_id_for(s, &target))).js()?;
        let list = links::backlinks(&*self.shared.store, &id).await.js()?;
        let text = links::render_backlinks(&id, &list);
        to_json(&json!({"id": id, "backlinks": list, "text": text}))
    }

    /// activate / deactivate / pin / unpin, also for an object of the store
    /// this session has not seen (it joins the session index and pool
    /// first). The session write is queued (see `flush`).
    #[napi]
    pub async fn set_op_any(&self, op: String, target: String) -> napi::Result<JsOpResult> {
        let Some(set_op) = SetOp::parse(&op) else {
            return Err(invalid_arg(format!("unknown set operation {op:?}")));
        };
        // The result's text names the object as the agent typed it.
        let run = |s: &mut Session, t: &str| -> OpResult { s.set_op_named(set_op, t, &target) };
        let first = self.shared.with(|s| Ok(run(s, &target))).js()?;
        let Some(id) = adopt::store_candidate(&target, &first) else {
            if op == "activate" {
                if let (true, Some(id)) = (first.ok, first.id.as_deref()) {
                    self.shared.bring_link_targets(id).await;
                }
            }
            return Ok(first.into());
        };
        self.shared.settle().await;
        let Some(doc) = adopt::fetch(&*self.shared.store, &id).await.js()? else {
            return Ok(first.into());
        };
        let r = self
            .shared
            .with(|s| match s.adopt(doc) {
                Ok(id) => Ok(run(s, &id)),
                Err(e) => Ok(OpResult::failure(&e, Some(id.clone()))),
            })
            .js()?;
        if op == "activate" && r.ok {
            self.shared.bring_link_targets(&id).await;
        }
        Ok(r.into())
    }
}
