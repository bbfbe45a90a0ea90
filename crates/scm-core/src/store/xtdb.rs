//! XTDB v1 backend: the [`Store`] trait over XTDB's HTTP/JSON API
//! (`/_xtdb/*`), read-your-writes by awaiting every submitted tx id.
//!
//! | trait            | HTTP                                                          |
//! |------------------|---------------------------------------------------------------|
//! | `submit`         | `POST submit-tx` → `GET await-tx?txId` → `GET tx-committed?txId` |
//! | `get`            | `GET entity?eid` (404 → `None`)                               |
//! | `get_many`       | one `POST query` (EDN body, `:in [[e ...]]`, pull `[*]`)      |
//! | `get_as_of`      | `GET entity?eid&txId` / `&txTime`                             |
//! | `history`        | `GET entity?eid&history=true&sortOrder=asc&withDocs=true&withCorrections=true` |
//! | `latest_tx_id`   | `GET latest-completed-tx` (404 / null → `None`)               |
//! | `ids_of_type`    | one `POST query` (`:where [[e :type ty]]`)                    |
//! | `counts`         | `POST query` for every id, `GET entity?history=true` per id, `GET status` (`size`) |
//!
//! Versions are addressed by tx id only: XTDB's own JSON server truncates
//! timestamps to whole seconds.
//!
//! Every call has a deadline (`request_timeout`; `await_timeout` for the
//! await step) that covers its retries. Transient failures (connection
//! refused/reset, 5xx) are retried with exponential backoff up to `retries`
//! times on idempotent calls; `submit-tx` itself is retried only when the
//! connection was never established, so a tx is never logged twice.
//!
//! **Fail fast while down** (`fail_fast`, on by default): once a call fails
//! with `STORE_UNAVAILABLE` or `STORE_TIMEOUT`, the node is taken as down and
//! every later call fails with `STORE_UNAVAILABLE` after one check of at most
//! 250 ms (an idempotent `GET`; a node that answers it is used at once)
//! instead of waiting out its deadline again (a node that accepts
//! connections and never answers would otherwise cost 10–30 s per call).
//! One background probe
//! (`GET latest-completed-tx`, backing off from 100 ms to 2 s) runs until the
//! node answers; then calls go through again. Sessions keep working from
//! memory meanwhile and flush what they queued with their next call.
//!
//! (One file over ~800 lines on purpose: one store backend, its HTTP/EDN protocol and the search query it sends read best together.)

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, CONTENT_TYPE};
use reqwest::{Method, StatusCode, Url};
use serde_json::{json, Value};

use super::embedded::{format_rfc3339_millis, parse_rfc3339_millis};
use super::{AsOf, Document, Store, StoreCounts, TxOp, TxReceipt, Version, ID_KEY};
use crate::error::{Error, Result};

/// How to reach an XTDB node and how long to wait for it.
#[derive(Debug, Clone)]
pub struct XtdbOptions {
    /// Base URL of the node, e.g. `http://127.0.0.1:3000` (http only).
    pub base_url: String,
    /// Deadline for one store call (every HTTP request plus its retries).
    pub request_timeout: Duration,
    /// Deadline for a submitted tx to become visible (`await-tx`).
    pub await_timeout: Duration,
    /// Extra attempts after a transient failure (0 = never retry).
    pub retries: u32,
    /// After a transient failure, fail later calls at once until a
    /// background probe reaches the node again (see the module docs).
    pub fail_fast: bool,
}

impl XtdbOptions {
    /// Defaults: 10 s per call, 30 s to await a tx, 3 retries.
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            request_timeout: Duration::from_secs(10),
            await_timeout: Duration::from_secs(30),
            retries: 3,
            fail_fast: true,
        }
    }
}

/// The XTDB v1 store: one HTTP client (connection pool) per node.
#[derive(Debug)]
pub struct XtdbStore {
    opts: XtdbOptions,
    base: Url,
    http: reqwest::Client,
    submitted: AtomicU64,
    health: Arc<Health>,
}

/// Whether the node was found down, and the probe looking for it.
#[derive(Debug, Default)]
struct Health {
    down: AtomicBool,
    probing: AtomicBool,
    /// Why it was found down (for the fail-fast error).
    reason: Mutex<String>,
}

/// The probe's first pause and its cap (it doubles in between).
const PROBE_FIRST: Duration = Duration::from_millis(100);
const PROBE_MAX: Duration = Duration::from_secs(2);
/// Deadline of the one check a call makes while the node is down.
const QUICK_CHECK: Duration = Duration::from_millis(250);

/// First retry pause; doubles per retry up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// History requests `counts` keeps in flight (one per object).
const COUNT_CONCURRENCY: usize = 8;

/// How one HTTP attempt failed, which decides whether to retry.
#[derive(Debug)]
enum Fail {
    /// The connection was never established: the request surely did not
    /// reach the server, so even a non-idempotent call may be retried.
    Connect(String),
    /// Reached the server but failed in a way worth retrying (reset,
    /// closed early, 5xx) — only for idempotent calls.
    Transient(String),
    /// The attempt ran out of the call's deadline.
    Timeout,
    /// Anything retrying cannot fix (garbage, unexpected status).
    Fatal(Error),
}

/// An HTTP response whose body has been read.
struct Reply {
    status: StatusCode,
    body: Vec<u8>,
}

impl XtdbStore {
    /// A store talking to `opts.base_url`. Does no I/O: an unreachable node
    /// shows up as `STORE_UNAVAILABLE` on the first call.
    pub fn new(opts: XtdbOptions) -> Result<Self> {
        let trimmed = opts.base_url.trim_end_matches('/');
        let base = Url::parse(&format!("{trimmed}/")).map_err(|e| {
            Error::InvalidArgument(format!("XTDB base URL {:?}: {e}", opts.base_url))
        })?;
        if base.scheme() != "http" {
            return Err(Error::InvalidArgument(format!(
                "XTDB base URL {:?}: only http:// is supported",
                opts.base_url
            )));
        }
        if opts.request_timeout.is_zero() || opts.await_timeout.is_zero() {
            return Err(Error::InvalidArgument(
                "XTDB timeouts must be greater than zero".to_owned(),
            ));
        }
        let mut headers = HeaderMap::new();
        // XTDB answers EDN unless asked for JSON.
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        let http = reqwest::Client::builder()
            .default_headers(headers)
            .connect_timeout(opts.request_timeout)
            .build()
            .map_err(|e| Error::Internal(format!("cannot build HTTP client: {e}")))?;
        Ok(Self {
            opts,
            base,
            http,
            submitted: AtomicU64::new(0),
            health: Arc::default(),
        })
    }

    /// Whether the node is currently taken as down (calls fail fast).
    pub fn is_down(&self) -> bool {
        self.health.down.load(Ordering::SeqCst)
    }

    /// While the node is taken as down, a call first asks it once with a
    /// short deadline ([`QUICK_CHECK`], an idempotent `GET`): a node that
    /// is back is used at once (the call that follows a restart must not
    /// wait for the probe's next round); otherwise the call fails fast.
    async fn answers_now(&self) -> bool {
        let url = self.url("latest-completed-tx", &[]);
        let timeout = self.opts.request_timeout.min(QUICK_CHECK);
        let up = matches!(
            self.http.get(url).timeout(timeout).send().await,
            Ok(r) if !r.status().is_server_error()
        );
        if up {
            self.health.down.store(false, Ordering::SeqCst);
        }
        up
    }

    /// A transient failure: the node is down; start the probe unless one
    /// runs. Without a tokio runtime (no probe possible) nothing changes.
    fn found_down(&self, e: &Error) {
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if let Ok(mut r) = self.health.reason.lock() {
            *r = e.to_string();
        }
        self.health.down.store(true, Ordering::SeqCst);
        if self.health.probing.swap(true, Ordering::SeqCst) {
            return;
        }
        tracing::warn!(error = %e, "xtdb: node found down, failing fast until it answers");
        let health = Arc::downgrade(&self.health);
        let http = self.http.clone();
        let url = self.url("latest-completed-tx", &[]);
        let timeout = self.opts.request_timeout;
        rt.spawn(async move {
            let mut pause = PROBE_FIRST;
            loop {
                // A poll: XTDB has no way to tell a client it is back.
                tokio::time::sleep(pause).await;
                if health.strong_count() == 0 {
                    return; // the store is gone
                }
                let up = matches!(
                    http.get(url.clone()).timeout(timeout).send().await,
                    Ok(r) if !r.status().is_server_error()
                );
                let Some(h) = health.upgrade() else { return };
                if up {
                    // Probing off first: a failure from here on starts a
                    // new probe rather than finding this one still marked.
                    h.probing.store(false, Ordering::SeqCst);
                    h.down.store(false, Ordering::SeqCst);
                    tracing::info!("xtdb: node answers again");
                    return;
                }
                pause = (pause * 2).min(PROBE_MAX);
            }
        });
    }

    /// The options this store was created with.
    pub fn options(&self) -> &XtdbOptions {
        &self.opts
    }

    fn url(&self, endpoint: &str, params: &[(&str, &str)]) -> Url {
        let mut url = self
            .base
            .join(&format!("_xtdb/{endpoint}"))
            .expect("a fixed relative path joins onto a valid base URL");
        if !params.is_empty() {
            url.query_pairs_mut().extend_pairs(params);
        }
        url
    }

    /// One HTTP exchange bounded by `timeout`, body read in full.
    async fn send(
        &self,
        method: Method,
        url: Url,
        body: Option<(&'static str, Vec<u8>)>,
        timeout: Duration,
    ) -> std::result::Result<Reply, Fail> {
        let mut req = self.http.request(method, url).timeout(timeout);
        if let Some((content_type, bytes)) = body {
            req = req.header(CONTENT_TYPE, content_type).body(bytes);
        }
        let resp = req.send().await.map_err(classify)?;
        let status = resp.status();
        let body = resp.bytes().await.map_err(classify)?.to_vec();
        Ok(Reply { status, body })
    }

    /// [`XtdbStore::attempts`], failing at once while the node is down
    /// and marking it down on a transient failure (`fail_fast`).
    async fn call<T, F, Fut>(
        &self,
        what: &str,
        budget: Duration,
        idempotent: bool,
        attempt: F,
    ) -> Result<T>
    where
        F: FnMut(Duration) -> Fut,
        Fut: Future<Output = std::result::Result<T, Fail>>,
    {
        if !self.opts.fail_fast {
            return self.attempts(what, budget, idempotent, attempt).await;
        }
        if self.is_down() && !self.answers_now().await {
            let reason = self
                .health
                .reason
                .lock()
                .map(|r| r.clone())
                .unwrap_or_default();
            return Err(Error::StoreUnavailable(format!(
                "{what}: not sent, the node was found down ({reason}); failing fast until a background probe reaches it"
            )));
        }
        let r = self.attempts(what, budget, idempotent, attempt).await;
        if let Err(e) = &r {
            if e.is_transient() {
                self.found_down(e);
            }
        }
        r
    }

    /// Run `attempt` until it succeeds, fails for good, or the deadline
    /// `budget` passes. Each attempt gets the time that is left.
    async fn attempts<T, F, Fut>(
        &self,
        what: &str,
        budget: Duration,
        idempotent: bool,
        mut attempt: F,
    ) -> Result<T>
    where
        F: FnMut(Duration) -> Fut,
        Fut: Future<Output = std::result::Result<T, Fail>>,
    {
        let deadline = Instant::now() + budget;
        let timeout = || Error::StoreTimeout {
            what: what.to_owned(),
            timeout_ms: u64::try_from(budget.as_millis()).unwrap_or(u64::MAX),
        };
        let mut backoff = FIRST_BACKOFF;
        let mut retried = 0;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(timeout());
            }
            let reason = match attempt(left).await {
                Ok(v) => return Ok(v),
                Err(Fail::Fatal(e)) => return Err(e),
                Err(Fail::Timeout) => return Err(timeout()),
                Err(Fail::Connect(reason)) => reason,
                Err(Fail::Transient(reason)) if idempotent => reason,
                Err(Fail::Transient(reason)) => {
                    return Err(Error::StoreUnavailable(format!("{what}: {reason}")));
                }
            };
            let unavailable = || {
                Error::StoreUnavailable(format!(
                    "{what}: {reason} (after {} attempt{})",
                    retried + 1,
                    if retried == 0 { "" } else { "s" }
                ))
            };
            // A pause that would outlive the deadline cannot help: report the
            // real cause now rather than a timeout later.
            if retried >= self.opts.retries || Instant::now() + backoff >= deadline {
                return Err(unavailable());
            }
            tracing::debug!(what, reason, ?backoff, "xtdb: transient failure, retrying");
            // Backoff between retries, not a wait for consistency.
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
            retried += 1;
        }
    }

    /// Versions of one object (its history, without documents).
    async fn version_count(&self, id: String) -> Result<u64> {
        let what = format!("history {id:?}");
        let params = [
            ("eid", id.as_str()),
            ("history", "true"),
            ("withCorrections", "true"),
        ];
        Ok(match self.get_json(&what, "entity", &params).await? {
            Some(Value::Array(entries)) => entries
                .iter()
                .filter(|e| !e.get("doc").is_some_and(Value::is_null))
                .count() as u64,
            _ => 0,
        })
    }

    /// GET returning JSON, with `404 → None`.
    async fn get_json(
        &self,
        what: &str,
        endpoint: &str,
        params: &[(&str, &str)],
    ) -> Result<Option<Value>> {
        let url = self.url(endpoint, params);
        self.call(what, self.opts.request_timeout, true, |left| {
            let url = url.clone();
            async move {
                let reply = self.send(Method::GET, url, None, left).await?;
                match reply.status {
                    StatusCode::OK => parse_json(what, &reply.body).map(Some),
                    StatusCode::NOT_FOUND => Ok(None),
                    _ => Err(unexpected(what, &reply)),
                }
            }
        })
        .await
    }

    async fn entity(&self, id: &str, extra: &[(&str, &str)]) -> Result<Option<Document>> {
        let what = format!("entity {id:?}");
        let mut params = vec![("eid", id)];
        params.extend_from_slice(extra);
        match self.get_json(&what, "entity", &params).await? {
            None | Some(Value::Null) => Ok(None),
            Some(v) => into_document(&what, v).map(Some).map_err(fatal),
        }
    }

    /// POST an EDN query; the rows as JSON (read-only, so retried).
    pub(crate) async fn query_edn(&self, what: &str, edn: String) -> Result<Vec<Value>> {
        let body = edn.into_bytes();
        let url = self.url("query", &[]);
        let rows = self
            .call(what, self.opts.request_timeout, true, |left| {
                let (url, body) = (url.clone(), body.clone());
                async move {
                    let reply = self
                        .send(Method::POST, url, Some(("application/edn", body)), left)
                        .await?;
                    if reply.status != StatusCode::OK {
                        return Err(unexpected(what, &reply));
                    }
                    parse_json(what, &reply.body)
                }
            })
            .await?;
        match rows {
            Value::Array(rows) => Ok(rows),
            other => Err(Error::StoreProtocol(format!(
                "{what}: not an array: {other}"
            ))),
        }
    }

    /// Transaction time of the latest version of `id` (None if never
    /// written): the newest entry of its history, without documents (this
    /// node serves no `entity-tx` route).
    pub(crate) async fn entity_tx_time(&self, id: &str) -> Result<Option<String>> {
        let what = format!("latest tx of {id:?}");
        let params = [
            ("eid", id),
            ("history", "true"),
            ("sortOrder", "desc"),
            ("withCorrections", "true"),
        ];
        match self.get_json(&what, "entity", &params).await? {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(entries)) => Ok(entries
                .iter()
                .filter_map(|e| Some((e.get("txId")?.as_i64()?, e.get("txTime")?.as_str()?)))
                .max_by_key(|(tx, _)| *tx)
                .map(|(_, t)| t.to_owned())),
            Some(other) => Err(Error::StoreProtocol(format!(
                "{what}: not an array: {other}"
            ))),
        }
    }

    async fn submit_tx(&self, tx_ops: Vec<Value>) -> Result<(i64, String)> {
        let body = serde_json::to_vec(&json!({ "tx-ops": tx_ops }))?;
        let url = self.url("submit-tx", &[]);
        let what = "submit-tx";
        // Not idempotent: only a connect failure is retried (see `call`).
        self.call(what, self.opts.request_timeout, false, |left| {
            let (url, body) = (url.clone(), body.clone());
            async move {
                let reply = self
                    .send(Method::POST, url, Some(("application/json", body)), left)
                    .await?;
                if reply.status != StatusCode::ACCEPTED && reply.status != StatusCode::OK {
                    return Err(unexpected(what, &reply));
                }
                let v = parse_json(what, &reply.body)?;
                let tx_id = v.get("txId").and_then(Value::as_i64);
                let tx_time = v.get("txTime").and_then(Value::as_str);
                match (tx_id, tx_time) {
                    (Some(id), Some(time)) => Ok((id, time.to_owned())),
                    _ => Err(protocol(format!("{what}: no txId/txTime in {v}"))),
                }
            }
        })
        .await
    }

    /// Block until `tx_id` is indexed on this node (XTDB's own await, no
    /// polling of ours). `submit` does this for its own tx; with several
    /// nodes on one log, a reader on another node awaits the writer's tx id
    /// to read its writes.
    pub async fn await_tx(&self, tx_id: i64) -> Result<()> {
        let what = format!("await-tx {tx_id}");
        let what = what.as_str();
        let tx = tx_id.to_string();
        self.call(what, self.opts.await_timeout, true, |left| {
            // The server waits `left`; the HTTP request gets slack to answer.
            let ms = left.as_millis().max(1).to_string();
            let url = self.url("await-tx", &[("txId", &tx), ("timeout", &ms)]);
            let http_timeout = left + self.opts.request_timeout;
            async move {
                let reply = self.send(Method::GET, url, None, http_timeout).await?;
                if reply.status == StatusCode::GATEWAY_TIMEOUT
                    || (reply.status == StatusCode::INTERNAL_SERVER_ERROR
                        && String::from_utf8_lossy(&reply.body).contains("TimeoutException"))
                {
                    return Err(Fail::Timeout);
                }
                if reply.status != StatusCode::OK {
                    return Err(unexpected(what, &reply));
                }
                let v = parse_json(what, &reply.body)?;
                match v.get("txId").and_then(Value::as_i64) {
                    Some(done) if done >= tx_id => Ok(()),
                    _ => Err(protocol(format!("{what}: answered {v}"))),
                }
            }
        })
        .await
    }

    async fn tx_committed(&self, tx_id: i64) -> Result<bool> {
        let what = format!("tx-committed {tx_id}");
        let v = self
            .get_json(&what, "tx-committed", &[("txId", &tx_id.to_string())])
            .await?;
        v.as_ref()
            .and_then(|v| v.get("txCommitted?"))
            .and_then(Value::as_bool)
            .ok_or_else(|| Error::StoreProtocol(format!("{what}: answered {v:?}")))
    }
}

#[async_trait]
impl Store for XtdbStore {
    fn kind(&self) -> &'static str {
        "xtdb"
    }

    async fn submit(&self, ops: Vec<TxOp>) -> Result<TxReceipt> {
        let receipt = self.submit_with(&ops, true).await?;
        // A document written before the term index has no terms, so a
        // `match` against it fails with them: the aborted transaction is
        // tried once more with the expected documents as they were read.
        let old_match = ops.iter().any(|op| {
            matches!(op, TxOp::Match { expected: Some(d), .. }
                if crate::store::search::terms_of(d).is_some())
        });
        if receipt.committed || !old_match {
            return Ok(receipt);
        }
        self.submit_with(&ops, false).await
    }

    async fn get(&self, id: &str) -> Result<Option<Document>> {
        self.entity(id, &[]).await
    }

    async fn get_many(&self, ids: &[String]) -> Result<Vec<Document>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let what = format!("query for {} ids", ids.len());
        let what = what.as_str();
        let rows = self.query_edn(what, get_many_edn(ids)).await?;
        let mut found = std::collections::HashMap::with_capacity(rows.len());
        for row in rows {
            // Each row is `[doc]`.
            let doc = match row {
                Value::Array(mut cols) if cols.len() == 1 => cols.pop().unwrap_or(Value::Null),
                other => return Err(Error::StoreProtocol(format!("{what}: bad row {other}"))),
            };
            let doc = into_document(what, doc).map_err(fatal)?;
            if let Some(Value::String(id)) = doc.get(ID_KEY) {
                found.insert(id.clone(), doc);
            }
        }
        // Request order, each id once.
        Ok(ids.iter().filter_map(|id| found.remove(id)).collect())
    }

    async fn get_as_of(&self, id: &str, as_of: AsOf<'_>) -> Result<Option<Document>> {
        match as_of {
            AsOf::TxId(tx_id) => self.entity(id, &[("txId", &tx_id.to_string())]).await,
            AsOf::TxTime(time) => {
                // Normalised to millisecond UTC: XTDB tx times are milliseconds,
                // and the server need not accept every RFC 3339 spelling.
                let time = format_rfc3339_millis(parse_rfc3339_millis(time)?);
                self.entity(id, &[("txTime", &time)]).await
            }
        }
    }

    async fn history(&self, id: &str) -> Result<Vec<Version>> {
        let what = format!("history {id:?}");
        // withCorrections: two txs in the same millisecond share a valid time,
        // and without it XTDB would show only the later one.
        let params = [
            ("eid", id),
            ("history", "true"),
            ("sortOrder", "asc"),
            ("withDocs", "true"),
            ("withCorrections", "true"),
        ];
        let entries = match self.get_json(&what, "entity", &params).await? {
            None => return Ok(Vec::new()),
            Some(Value::Array(entries)) => entries,
            Some(other) => {
                return Err(Error::StoreProtocol(format!(
                    "{what}: not an array: {other}"
                )))
            }
        };
        let mut versions = entries
            .into_iter()
            .map(|e| {
                let tx_id = e.get("txId").and_then(Value::as_i64);
                let tx_time = e.get("txTime").and_then(Value::as_str).map(str::to_owned);
                let (Some(tx_id), Some(tx_time)) = (tx_id, tx_time) else {
                    return Err(Error::StoreProtocol(format!("{what}: bad entry {e}")));
                };
                let doc = match e.get("doc") {
                    None | Some(Value::Null) => None,
                    Some(d) => Some(into_document(&what, d.clone()).map_err(fatal)?),
                };
                Ok(Version {
                    tx_id,
                    tx_time,
                    doc,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        // Oldest first is the contract: sort by tx, not by valid time.
        versions.sort_by_key(|v| v.tx_id);
        Ok(versions)
    }

    async fn latest_tx_id(&self) -> Result<Option<i64>> {
        let what = "latest-completed-tx";
        match self.get_json(what, "latest-completed-tx", &[]).await? {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(m)) if m.is_empty() => Ok(None),
            Some(v) => v
                .get("txId")
                .and_then(Value::as_i64)
                .map(Some)
                .ok_or_else(|| Error::StoreProtocol(format!("{what}: answered {v}"))),
        }
    }

    async fn ids_of_type(&self, ty: &str) -> Result<Vec<String>> {
        let mut edn = String::from("{:query {:find [e] :where [[e :type t]] :in [t]} :in-args [");
        push_edn_string(&mut edn, ty);
        edn.push_str("]}");
        self.query_ids(&format!("ids of type {ty:?}"), edn).await
    }

    async fn all_ids(&self) -> Result<Vec<String>> {
        self.query_ids(
            "every id",
            "{:query {:find [e] :where [[e :xt/id]]}}".to_string(),
        )
        .await
    }

    async fn backlinks(&self, id: &str) -> Result<Vec<String>> {
        // XTDB indexes each element of a top-level vector as a value of the
        // attribute, so this is an index lookup, not a scan.
        let mut edn =
            String::from("{:query {:find [e] :where [[e :link_ids t]] :in [t]} :in-args [");
        push_edn_string(&mut edn, id);
        edn.push_str("]}");
        self.query_ids(&format!("backlinks of {id:?}"), edn).await
    }

    async fn counts(&self) -> Result<StoreCounts> {
        let ids = self
            .query_ids(
                "every id",
                "{:query {:find [e] :where [[e :xt/id]]}}".to_string(),
            )
            .await?;
        // XTDB v1 has no version count: one light history request per
        // object (no documents), which is why `counts` is slow on big
        // stores; COUNT_CONCURRENCY at a time, so the round trips overlap.
        use futures_util::stream::{self, StreamExt, TryStreamExt};
        let versions: u64 = stream::iter(ids.iter().cloned())
            .map(|id| self.version_count(id))
            .buffer_unordered(COUNT_CONCURRENCY)
            .try_fold(0, |sum, n| async move { Ok(sum + n) })
            .await?;
        let bytes = self
            .get_json("status", "status", &[])
            .await?
            .and_then(|s| s.get("size").and_then(Value::as_u64));
        Ok(StoreCounts {
            objects: ids.len() as u64,
            versions,
            bytes,
        })
    }

    /// A scan on the node (see `memory::search`): one query selects and
    /// pulls the objects holding every term; ranked here; one `entity-tx`
    /// per kept hit for its time (and the `since` filter).
    async fn search(
        &self,
        query: &crate::store::search::SearchQuery,
    ) -> Result<Vec<crate::store::search::SearchHit>> {
        use crate::store::search::{rank, SearchHit};
        let rows = self.query_edn("search", xtdb_query_edn(query)).await?;
        let mut docs = Vec::with_capacity(rows.len());
        for row in rows {
            let doc = match row {
                Value::Array(mut cols) if cols.len() == 1 => cols.pop().unwrap_or(Value::Null),
                other => return Err(Error::StoreProtocol(format!("search: bad row {other}"))),
            };
            docs.push(into_document("search", doc).map_err(fatal)?);
        }
        let mut hits = Vec::new();
        for (row, score, snippet) in rank(query, &docs) {
            if hits.len() == query.limit {
                break;
            }
            let Some(tx_time) = self.entity_tx_time(&row.id).await? else {
                continue;
            };
            if let Some(since) = query.since_ms {
                if parse_rfc3339_millis(&tx_time)? < since {
                    continue;
                }
            }
            hits.push(SearchHit {
                id: row.id,
                object_type: row.object_type,
                path: row.path,
                tool: row.tool,
                session: row.session,
                tx_time: format_rfc3339_millis(parse_rfc3339_millis(&tx_time)?),
                snippet,
                score,
            });
        }
        Ok(hits)
    }

    fn submitted_tx_count(&self) -> u64 {
        self.submitted.load(Ordering::Relaxed)
    }
}

impl XtdbStore {
    /// A `:find [e]` query's ids, sorted.
    async fn query_ids(&self, what: &str, edn: String) -> Result<Vec<String>> {
        let rows = self.query_edn(what, edn).await?;
        let mut ids = rows
            .into_iter()
            .map(|row| match row {
                Value::Array(mut cols) if cols.len() == 1 => match cols.pop() {
                    Some(Value::String(id)) => Ok(id),
                    other => Err(Error::StoreProtocol(format!("{what}: bad id {other:?}"))),
                },
                other => Err(Error::StoreProtocol(format!("{what}: bad row {other}"))),
            })
            .collect::<Result<Vec<String>>>()?;
        ids.sort();
        Ok(ids)
    }
}

impl XtdbStore {
    /// One submit; `terms` adds the term index to the expected documents
    /// of `match` ops too (see `submit`).
    async fn submit_with(&self, ops: &[TxOp], terms: bool) -> Result<TxReceipt> {
        let tx_ops = ops
            .iter()
            .cloned()
            .map(|op| match op {
                TxOp::Put(doc) => {
                    check_id(&doc)?;
                    Ok(json!(["put", with_terms(doc)]))
                }
                // The stored document carries the term index: so must the
                // expected one, or the comparison would always fail.
                TxOp::Match { id, expected } => Ok(json!([
                    "match",
                    id,
                    if terms {
                        expected.map(with_terms)
                    } else {
                        expected
                    }
                ])),
            })
            .collect::<Result<Vec<_>>>()?;
        let (tx_id, tx_time) = self.submit_tx(tx_ops).await?;
        self.submitted.fetch_add(1, Ordering::Relaxed);
        self.await_tx(tx_id).await?;
        let committed = self.tx_committed(tx_id).await?;
        Ok(TxReceipt {
            tx_id,
            tx_time,
            committed,
        })
    }
}

// ------------------------------------------------------------ helpers

/// XTDB accepts any id type; this project's ids are strings.
fn check_id(doc: &Document) -> Result<()> {
    match doc.get(ID_KEY) {
        Some(Value::String(_)) => Ok(()),
        Some(other) => Err(Error::InvalidArgument(format!(
            "document \"{ID_KEY}\" must be a string, got {other}"
        ))),
        None => Err(Error::InvalidArgument(format!(
            "document has no \"{ID_KEY}\" key"
        ))),
    }
}

/// Map a transport error to a retry decision.
fn classify(e: reqwest::Error) -> Fail {
    if e.is_timeout() {
        return Fail::Timeout;
    }
    if e.is_connect() {
        return Fail::Connect(chain(&e));
    }
    // hyper's parse errors mean the peer spoke something that is not HTTP.
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        if let Some(h) = s.downcast_ref::<hyper::Error>() {
            if h.is_parse() {
                return Fail::Fatal(Error::StoreProtocol(format!(
                    "not an HTTP answer: {}",
                    chain(&e)
                )));
            }
        }
        source = s.source();
    }
    // Reset, closed before answering, body cut short: the node may be
    // restarting; worth another try.
    Fail::Transient(chain(&e))
}

/// An error and its causes on one line (reqwest's Display hides the cause).
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        s.push_str(": ");
        s.push_str(&cause.to_string());
        source = cause.source();
    }
    s
}

fn excerpt(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let mut s: String = text.chars().take(300).collect();
    if text.chars().count() > 300 {
        s.push('…');
    }
    s
}

/// A status we did not expect: 5xx may pass, anything else will not.
fn unexpected(what: &str, reply: &Reply) -> Fail {
    let msg = format!("{what}: HTTP {}: {}", reply.status, excerpt(&reply.body));
    if reply.status.is_server_error() {
        Fail::Transient(msg)
    } else {
        Fail::Fatal(Error::StoreProtocol(msg))
    }
}

fn protocol(msg: String) -> Fail {
    Fail::Fatal(Error::StoreProtocol(msg))
}

fn fatal(f: Fail) -> Error {
    match f {
        Fail::Fatal(e) => e,
        Fail::Connect(m) | Fail::Transient(m) => Error::StoreUnavailable(m),
        Fail::Timeout => Error::StoreProtocol("unexpected timeout".to_owned()),
    }
}

fn parse_json(what: &str, body: &[u8]) -> std::result::Result<Value, Fail> {
    serde_json::from_slice(body)
        .map_err(|e| protocol(format!("{what}: not JSON ({e}): {}", excerpt(body))))
}

/// A document as stored on the node: with its search terms (see
/// `memory::search::TERMS_KEY`), derived from the document, so the same
/// document always gets the same field.
fn with_terms(mut doc: Document) -> Document {
    use crate::store::search::{terms_of, TERMS_KEY};
    doc.remove(TERMS_KEY);
    if let Some(terms) = terms_of(&doc) {
        doc.insert(TERMS_KEY.into(), json!(terms));
    }
    doc
}

/// Every document read from the node goes through here: the term index is
/// the store's own, never part of a document.
fn into_document(what: &str, v: Value) -> std::result::Result<Document, Fail> {
    match v {
        Value::Object(mut map) => {
            map.remove(crate::store::search::TERMS_KEY);
            Ok(map)
        }
        other => Err(protocol(format!("{what}: not a document: {other}"))),
    }
}

/// The one-request batch lookup, as EDN (XTDB's query endpoint takes no
/// JSON). The `where` clause drops ids that have no document.
fn get_many_edn(ids: &[String]) -> String {
    let mut edn = String::from(
        "{:query {:find [(pull e [*])] :in [[e ...]] :where [[e :xt/id]]} :in-args [[",
    );
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            edn.push(' ');
        }
        push_edn_string(&mut edn, id);
    }
    edn.push_str("]]}");
    edn
}

/// An EDN string literal: `"` and `\` escaped, control characters as
/// `\uXXXX`, everything else (any unicode) as is.
pub(crate) fn push_edn_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            // Control characters are all in the BMP, so four digits suffice.
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
}

// ------------------------------------------------------------ search

use crate::store::search::{SearchQuery, Term, SEARCHABLE_TYPES, TERMS_KEY};

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

#[cfg(test)]
mod tests {
    use super::*;

    fn edn(s: &str) -> String {
        let mut out = String::new();
        push_edn_string(&mut out, s);
        out
    }

    #[test]
    fn edn_strings_escape_quotes_backslashes_and_controls() {
        assert_eq!(edn("plain"), r#""plain""#);
        assert_eq!(edn(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(edn("l1\nl2\t\r"), r#""l1\nl2\t\r""#);
        assert_eq!(
            edn("\u{0}\u{1f}\u{7f}\u{85}"),
            r#""\u0000\u001f\u007f\u0085""#
        );
        assert_eq!(edn("日本 😀"), "\"日本 😀\"");
    }

    #[test]
    fn get_many_is_one_query_with_every_id() {
        let q = get_many_edn(&["a".to_owned(), "b\"".to_owned()]);
        assert_eq!(
            q,
            r#"{:query {:find [(pull e [*])] :in [[e ...]] :where [[e :xt/id]]} :in-args [["a" "b\""]]}"#
        );
    }

    #[test]
    fn bad_options_are_invalid_arguments() {
        for url in ["not a url", "https://127.0.0.1:1", "ftp://x"] {
            let e = XtdbStore::new(XtdbOptions::new(url)).unwrap_err();
            assert_eq!(e.code(), "INVALID_ARGUMENT", "{url}: {e}");
        }
        let mut o = XtdbOptions::new("http://127.0.0.1:1");
        o.request_timeout = Duration::ZERO;
        assert_eq!(XtdbStore::new(o).unwrap_err().code(), "INVALID_ARGUMENT");
    }

    #[test]
    fn base_url_with_or_without_slash_or_path() {
        let s = XtdbStore::new(XtdbOptions::new("http://h:1")).unwrap();
        assert_eq!(s.url("status", &[]).as_str(), "http://h:1/_xtdb/status");
        let s = XtdbStore::new(XtdbOptions::new("http://h:1/base/")).unwrap();
        assert_eq!(
            s.url("entity", &[("eid", "a b+c&d")]).as_str(),
            "http://h:1/base/_xtdb/entity?eid=a+b%2Bc%26d"
        );
    }
}
