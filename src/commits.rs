//! Context commits on a store handle (`commitShow(store, …)` and friends). Requests and
//! results cross as JSON text; every rule is in `scm_core::commits`.

use napi::bindgen_prelude::PromiseRaw;
use napi::Env;
use napi_derive::napi;
use scm_core::commits::{self, MaterializeOptions, OutputFormat, Stop, TimelineOf};
use serde::Deserialize;

use crate::errors::{invalid_arg, parse_json, to_json, IntoJsResult};
use crate::store::JsStore;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ResolveJson {
    session_id: Option<String>,
    principal: Option<String>,
    at: String,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct MaterializeJson {
    stop: Option<String>,
    format: Option<String>,
}

/// The commit with its metadata, as JSON.
#[napi(ts_return_type = "Promise<string>")]
pub fn commit_show<'env>(
    env: &'env Env,
    store: &JsStore,
    id: String,
) -> napi::Result<PromiseRaw<'env, String>> {
    let store = store.inner.clone();
    env.spawn_future(async move { to_json(&commits::show(&*store, &id).await.js()?) })
}

/// `id` and its ancestors, newest first (at most `depth`), as JSON.
#[napi(ts_return_type = "Promise<string>")]
pub fn commit_history<'env>(
    env: &'env Env,
    store: &JsStore,
    id: String,
    depth: Option<u32>,
) -> napi::Result<PromiseRaw<'env, String>> {
    let store = store.inner.clone();
    env.spawn_future(async move {
        let h = commits::history(&*store, &id, depth.map(|d| d as usize))
            .await
            .js()?;
        to_json(&h)
    })
}

/// `{ sessionId | principal, at }` → the newest commit at or before `at`,
/// or null.
#[napi(ts_return_type = "Promise<string | null>")]
pub fn commit_resolve<'env>(
    env: &'env Env,
    store: &JsStore,
    request_json: String,
) -> napi::Result<PromiseRaw<'env, Option<String>>> {
    let r: ResolveJson = parse_json(&request_json, "commits.resolve")?;
    let of = match (r.session_id, r.principal) {
        (Some(s), None) => TimelineOf::Session(s),
        (None, Some(p)) => TimelineOf::Principal(p),
        _ => {
            return Err(invalid_arg(
                "commits.resolve: pass exactly one of sessionId or principal",
            ))
        }
    };
    let store = store.inner.clone();
    env.spawn_future(async move { commits::resolve(&*store, &of, &r.at).await.js() })
}

/// Sets (or clears, with null) a commit's summary.
#[napi(ts_return_type = "Promise<void>")]
pub fn commit_update_metadata<'env>(
    env: &'env Env,
    store: &JsStore,
    id: String,
    summary: Option<String>,
) -> napi::Result<PromiseRaw<'env, ()>> {
    let store = store.inner.clone();
    env.spawn_future(async move {
        commits::update_metadata(&*store, &id, summary.as_deref())
            .await
            .js()
    })
}

/// `{ stop?, format? }` → the materialized conversation, as JSON.
#[napi(ts_return_type = "Promise<string>")]
pub fn commit_materialize<'env>(
    env: &'env Env,
    store: &JsStore,
    id: String,
    options_json: Option<String>,
) -> napi::Result<PromiseRaw<'env, String>> {
    let o: MaterializeJson = match options_json {
        Some(j) => parse_json(&j, "commits.materialize options")?,
        None => MaterializeJson::default(),
    };
    let opts = MaterializeOptions {
        stop: Stop::parse(o.stop.as_deref()).js()?,
        format: OutputFormat::parse(o.format.as_deref()).js()?,
    };
    let store = store.inner.clone();
    env.spawn_future(async move { to_json(&commits::materialize(&*store, &id, &opts).await.js()?) })
}

/// The tip of a session's chain (the commit its next commit names as
/// parent; after a `/tree`, the commit the branch moved to), or null.
#[napi(ts_return_type = "Promise<string | null>")]
pub fn commit_session_tip<'env>(
    env: &'env Env,
    store: &JsStore,
    session_id: String,
) -> napi::Result<PromiseRaw<'env, Option<String>>> {
    let store = store.inner.clone();
    env.spawn_future(async move {
        Ok(commits::session_tip(&*store, &session_id)
            .await
            .js()?
            .map(|(id, _)| id))
    })
}
