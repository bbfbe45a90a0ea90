//! Memory across sessions on the session handle: older versions on request
//! (`versions`, `showVersion`, `diff`). Conversions only; the rules live in
//! `scm_core::memory`.

use napi_derive::napi;
use scm_core::memory::{self, versions::object_id_for, VersionRef};
use serde::Serialize;
use serde_json::json;

use crate::errors::{to_js, to_json, IntoJsResult};
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
}
