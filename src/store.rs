//! `openStore` and the store handle. Documents cross as JSON text.

use std::sync::Arc;
use std::time::Duration;

use napi_derive::napi;
use scm_core::session::{inspect, paged};
use scm_core::store::xtdb::{XtdbOptions, XtdbStore};
use scm_core::store::{embedded::EmbeddedStore, AsOf, Document, Store, TxOp, TxReceipt};
use serde::{Deserialize, Serialize};

use crate::errors::{invalid_arg, parse_json, to_json, IntoJsResult};

/// `{ kind: 'embedded', path? }` (no path or `':memory:'`: a private in-memory store) or
/// `{ kind: 'xtdb', url, timeoutMs? }`.
#[napi(object)]
pub struct NapiStoreOptions {
    #[napi(ts_type = "'embedded' | 'xtdb'")]
    pub kind: String,
    pub path: Option<String>,
    pub url: Option<String>,
    pub timeout_ms: Option<u32>,
}

#[napi(object)]
pub struct JsStoreCounts {
    pub objects: i64,
    pub versions: i64,
    pub bytes: Option<i64>,
}

#[napi(object)]
pub struct JsTxReceipt {
    pub tx_id: i64,
    pub tx_time: String,
    pub committed: bool,
}

impl From<TxReceipt> for JsTxReceipt {
    fn from(r: TxReceipt) -> Self {
        JsTxReceipt {
            tx_id: r.tx_id,
            tx_time: r.tx_time,
            committed: r.committed,
        }
    }
}

/// `{ txId }` or `{ txTime }` (RFC 3339).
#[napi(object)]
pub struct NapiAsOf {
    pub tx_id: Option<i64>,
    pub tx_time: Option<String>,
}

/// One transaction operation as the facade sends it.
#[derive(Deserialize)]
#[serde(tag = "op", rename_all = "lowercase", deny_unknown_fields)]
enum OpJson {
    Put {
        doc: Document,
    },
    Match {
        id: String,
        expected: Option<Document>,
    },
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct VersionJson<'a> {
    tx_id: i64,
    tx_time: &'a str,
    doc: &'a Option<Document>,
}

pub(crate) fn open(options: NapiStoreOptions) -> scm_core::Result<Arc<dyn Store>> {
    use scm_core::Error;
    match options.kind.as_str() {
        "embedded" => Ok(Arc::new(match options.path.as_deref() {
            Some(path) if path != ":memory:" => EmbeddedStore::open(path)?,
            _ => EmbeddedStore::open_in_memory()?,
        })),
        "xtdb" => {
            let url = options.url.ok_or_else(|| {
                Error::InvalidArgument("openStore: kind 'xtdb' needs a url".into())
            })?;
            let mut opts = XtdbOptions::new(url);
            if let Some(ms) = options.timeout_ms {
                opts.request_timeout = Duration::from_millis(u64::from(ms));
            }
            Ok(Arc::new(XtdbStore::new(opts)?))
        }
        other => Err(Error::InvalidArgument(format!(
            "openStore: unknown store kind {other:?} (expected 'embedded' or 'xtdb')"
        ))),
    }
}

#[napi(js_name = "NativeStore")]
pub struct JsStore {
    pub(crate) inner: Arc<dyn Store>,
}

/// Open a store. XTDB stores are checked for reachability (STORE_UNAVAILABLE
/// within the timeout otherwise).
#[napi]
pub async fn open_store(options: NapiStoreOptions) -> napi::Result<JsStore> {
    let inner = open(options).js()?;
    if inner.kind() == "xtdb" {
        inner.latest_tx_id().await.js()?;
    }
    Ok(JsStore { inner })
}

/// The same, blocking the calling thread (for the drop-in class's
/// synchronous methods called before anything opened the store).
#[napi(catch_unwind)]
pub fn open_store_sync(options: NapiStoreOptions) -> napi::Result<JsStore> {
    let inner = open(options).js()?;
    if inner.kind() == "xtdb" {
        napi::bindgen_prelude::block_on(inner.latest_tx_id()).js()?;
    }
    Ok(JsStore { inner })
}

#[napi]
impl JsStore {
    /// "embedded" or "xtdb".
    #[napi(getter)]
    pub fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    /// Apply `[{op:'put', doc} | {op:'match', id, expected}]` atomically.
    #[napi]
    pub async fn submit(&self, ops_json: String) -> napi::Result<JsTxReceipt> {
        let ops: Vec<OpJson> = parse_json(&ops_json, "submit ops")?;
        let mut tx = Vec::with_capacity(ops.len());
        for op in ops {
            tx.push(match op {
                OpJson::Put { doc } => {
                    if !doc.get("xt/id").is_some_and(|v| v.is_string()) {
                        return Err(invalid_arg(
                            "submit: a put document needs a string \"xt/id\"",
                        ));
                    }
                    TxOp::Put(doc)
                }
                OpJson::Match { id, expected } => TxOp::Match { id, expected },
            });
        }
        self.inner.submit(tx).await.js().map(Into::into)
    }

    /// Latest version as JSON text, or null.
    #[napi]
    pub async fn get(&self, id: String) -> napi::Result<Option<String>> {
        match paged::get(&*self.inner, &id).await.js()? {
            Some(doc) => to_json(&doc).map(Some),
            None => Ok(None),
        }
    }

    /// Latest versions of many objects as a JSON array (missing ids absent).
    #[napi]
    pub async fn get_many(&self, ids: Vec<String>) -> napi::Result<String> {
        to_json(&paged::get_many(&*self.inner, &ids).await.js()?)
    }

    /// The version visible at `{txId}` or `{txTime}`, as JSON text or null.
    #[napi]
    pub async fn get_as_of(&self, id: String, as_of: NapiAsOf) -> napi::Result<Option<String>> {
        let doc = match (as_of.tx_id, as_of.tx_time.as_deref()) {
            (Some(tx_id), None) => paged::get_as_of(&*self.inner, &id, AsOf::TxId(tx_id)).await,
            (None, Some(t)) => paged::get_as_of(&*self.inner, &id, AsOf::TxTime(t)).await,
            _ => {
                return Err(invalid_arg(
                    "getAsOf: pass exactly one of { txId } or { txTime }",
                ))
            }
        }
        .js()?;
        doc.as_ref().map(to_json).transpose()
    }

    /// Every version, oldest first, as JSON `[{txId, txTime, doc}]`.
    #[napi]
    pub async fn history(&self, id: String) -> napi::Result<String> {
        self.versions_json(paged::history(&*self.inner, &id).await.js()?)
    }

    /// Every version as stored: chat and session heads are not expanded
    /// into whole documents (write-volume measurements, debugging).
    #[napi]
    pub async fn stored_history(&self, id: String) -> napi::Result<String> {
        self.versions_json(self.inner.history(&id).await.js()?)
    }

    fn versions_json(&self, versions: Vec<scm_core::store::Version>) -> napi::Result<String> {
        let out: Vec<VersionJson> = versions
            .iter()
            .map(|v| VersionJson {
                tx_id: v.tx_id,
                tx_time: &v.tx_time,
                doc: &v.doc,
            })
            .collect();
        to_json(&out)
    }

    /// Newest visible transaction id (null for an empty store).
    #[napi]
    pub async fn latest_tx_id(&self) -> napi::Result<Option<i64>> {
        self.inner.latest_tx_id().await.js()
    }

    /// Ids whose latest version has `"type": ty`, sorted.
    #[napi]
    pub async fn ids_of_type(&self, ty: String) -> napi::Result<Vec<String>> {
        self.inner.ids_of_type(&ty).await.js()
    }

    /// Objects, versions and size (bytes, null where the backend does not say).
    #[napi]
    pub async fn counts(&self) -> napi::Result<JsStoreCounts> {
        let c = self.inner.counts().await.js()?;
        Ok(JsStoreCounts {
            objects: c.objects as i64,
            versions: c.versions as i64,
            bytes: c.bytes.map(|b| b as i64),
        })
    }

    /// Every session in the store, oldest first, as JSON
    /// `[{session_id, started, last_activity, calls, objects}]`.
    #[napi]
    pub async fn list_sessions(&self) -> napi::Result<String> {
        to_json(&inspect::list_sessions(&*self.inner).await.js()?)
    }

    /// Full-text search over every session's objects, as a session's
    /// `search` (JSON `{hits, text}`; `optionsJson`: `{types?, sessions?,
    /// since?, limit?}`), without opening a session.
    #[napi]
    pub async fn search(
        &self,
        query: String,
        options_json: Option<String>,
    ) -> napi::Result<String> {
        crate::memory::search_json(&*self.inner, &query, options_json.as_deref()).await
    }

    /// Write the whole store, or the sessions given, to `path` as scm-export
    /// JSON Lines (`scm_core::memory::portable`). JSON `{objects, versions,
    /// transactions, skipped, bytes}`.
    #[napi]
    pub async fn export_to(
        &self,
        path: String,
        sessions: Option<Vec<String>>,
    ) -> napi::Result<String> {
        let stats = scm_core::memory::portable::export_file(
            &*self.inner,
            sessions.as_deref(),
            std::path::Path::new(&path),
        )
        .await
        .js()?;
        to_json(&stats)
    }

    /// Import an scm-export file into this store. JSON as `exportTo`.
    #[napi]
    pub async fn import_from(&self, path: String) -> napi::Result<String> {
        let stats =
            scm_core::memory::portable::import_file(&*self.inner, std::path::Path::new(&path))
                .await
                .js()?;
        to_json(&stats)
    }

    /// Transactions this handle has submitted.
    #[napi(catch_unwind)]
    pub fn submitted_tx_count(&self) -> i64 {
        self.inner.submitted_tx_count() as i64
    }
}
