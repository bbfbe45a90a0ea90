//! `Indexer`: files → versioned file objects through a store.

use std::sync::Arc;

use napi_derive::napi;
use scm_core::fs::indexer::{IndexResult, Indexer, IndexerOptions};

use crate::errors::{to_json, IntoJsResult};
use crate::resolver::JsResolver;
use crate::store::{JsStore, JsTxReceipt};

#[napi(object)]
pub struct NapiIndexerOptions {
    /// Files larger than this are indexed metadata-only (`content_omitted: 'too_large'`).
    pub max_content_bytes: Option<i64>,
}

#[napi(object)]
pub struct JsIndexResult {
    pub object_id: String,
    #[napi(ts_type = "'created' | 'updated' | 'unchanged'")]
    pub action: String,
    /// The latest document as JSON text (the facade parses it into `doc`).
    pub doc_json: String,
    /// Null when nothing was written.
    pub receipt: Option<JsTxReceipt>,
}

impl TryFrom<IndexResult> for JsIndexResult {
    type Error = napi::Error;
    fn try_from(r: IndexResult) -> napi::Result<Self> {
        Ok(JsIndexResult {
            doc_json: to_json(&r.doc)?,
            object_id: r.object_id,
            action: r.action.as_str().into(),
            receipt: r.receipt.map(Into::into),
        })
    }
}

#[napi(js_name = "NativeIndexer")]
pub struct JsIndexer {
    inner: Arc<Indexer>,
}

#[napi]
impl JsIndexer {
    #[napi(constructor, catch_unwind)]
    pub fn new(
        store: &JsStore,
        resolver: &JsResolver,
        options: Option<NapiIndexerOptions>,
    ) -> napi::Result<Self> {
        let mut opts = IndexerOptions::default();
        if let Some(max) = options.and_then(|o| o.max_content_bytes) {
            opts.max_content_bytes = u64::try_from(max)
                .map_err(|_| crate::errors::invalid_arg("maxContentBytes must be ≥ 0"))?;
        }
        Ok(JsIndexer {
            inner: Arc::new(Indexer::new(
                store.inner.clone(),
                resolver.inner.clone(),
                opts,
            )),
        })
    }

    /// Read and index the file at `agentPath` (created / updated / unchanged).
    #[napi]
    pub async fn index_file(&self, agent_path: String) -> napi::Result<JsIndexResult> {
        self.inner.index_file(&agent_path).await.js()?.try_into()
    }

    /// Discovery: stubs for paths never seen; existing objects are never overwritten.
    #[napi]
    pub async fn discover_files(
        &self,
        agent_paths: Vec<String>,
    ) -> napi::Result<Vec<JsIndexResult>> {
        self.inner
            .discover_files(&agent_paths)
            .await
            .js()?
            .into_iter()
            .map(TryInto::try_into)
            .collect()
    }

    /// Confirmed deletion: a new version with null content and hashes.
    #[napi]
    pub async fn index_file_deletion(&self, agent_path: String) -> napi::Result<JsIndexResult> {
        let resolved = self.inner.resolver.resolve(&agent_path).js()?;
        self.inner
            .index_file_deletion(&resolved)
            .await
            .js()?
            .try_into()
    }
}
