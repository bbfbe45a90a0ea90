//! `NativeSession`: one agent session for the JS facade — the core's
//! `SessionHandle` (locking, write gate, write-behind, file operations),
//! with JS conversions only.

use std::sync::Arc;

use napi::bindgen_prelude::PromiseRaw;
use napi::Env;
use napi_derive::napi;
use scm_core::model::{chat_object_id, session_object_id, system_prompt_object_id};
use scm_core::session::handle::SessionHandle;
use scm_core::session::{FileOp, OpResult, OutputDelta, RefAsText, Session, SetOp};
use serde_json::Value;

use crate::errors::{invalid_arg, parse_json, parse_messages, to_json, IntoJsResult};
use crate::options::{build, NapiSessionOptions};
use crate::resolver::JsResolvedPath;
use crate::store::{JsStore, JsTxReceipt};

/// `{ ok, message, text, id?, code?, outcome? }`: failures the agent can act
/// on are data; `text` is the model's tool result in the layout's words.
#[napi(object)]
pub struct JsOpResult {
    pub ok: bool,
    pub message: String,
    pub text: String,
    pub id: Option<String>,
    pub code: Option<String>,
    /// A set operation's outcome (`activated`, `was_not_active`, …).
    pub outcome: Option<String>,
}

impl From<OpResult> for JsOpResult {
    fn from(r: OpResult) -> Self {
        JsOpResult {
            ok: r.ok,
            message: r.message,
            text: r.text,
            id: r.id,
            code: r.code,
            outcome: r.outcome.map(|o| o.as_str().to_owned()),
        }
    }
}

/// A context as a delta against an earlier output of the same session:
/// the first `keep` messages of output `seq - 1` (the `have` passed in;
/// `keep` is 0 when the caller holds another one), then `append`.
#[napi(object)]
pub struct JsContextDelta {
    /// This output's number.
    pub seq: u32,
    pub keep: u32,
    /// The messages after the kept ones that are not reused, as a JSON array.
    pub append: String,
    /// Per message after the kept ones: the index of the identical message
    /// of the previous output, or -1 for the next one of `append`; null:
    /// all are in `append`.
    pub reuse: Option<Vec<i64>>,
    /// The messages this call consumed: their indexes in the array handed
    /// over and their fingerprints (`consumedFps[k]` for `consumedAt[k]`),
    /// so the caller can send stand-ins for them in a replaced array
    /// (`transformContextWithStandIns`).
    pub consumed_at: Vec<u32>,
    pub consumed_fps: Vec<String>,
}

impl JsContextDelta {
    /// The delta plus what the session's last ingest consumed.
    fn of(d: OutputDelta, s: &mut Session) -> Self {
        let (consumed_at, consumed_fps) = s
            .take_last_consumed()
            .into_iter()
            .map(|(i, fp)| (i as u32, fp))
            .unzip();
        JsContextDelta {
            seq: d.seq,
            keep: d.keep as u32,
            append: d.append,
            reuse: d.reuse,
            consumed_at,
            consumed_fps,
        }
    }
}

/// A ref this session showed, found in what a tool call would write
/// (`checkToolCall`): the host refuses the call with `message`.
#[napi(object)]
pub struct JsRefAsText {
    /// Always `REF_AS_TEXT`.
    pub code: String,
    /// The argument holding it: `content`, `newText` or `oldText`.
    pub field: String,
    /// The ref as written (`[t12 · 40 lines]`).
    pub token: String,
    /// What `activate` takes to show its text again (`t12`).
    pub target: String,
    pub message: String,
}

impl From<RefAsText> for JsRefAsText {
    fn from(r: RefAsText) -> Self {
        JsRefAsText {
            code: RefAsText::CODE.to_owned(),
            field: r.field.to_owned(),
            token: r.token,
            target: r.target,
            message: r.message,
        }
    }
}

#[napi(object)]
pub struct JsStoreError {
    pub code: String,
    pub message: String,
}

#[napi(object)]
pub struct JsSessionStats {
    pub turn_count: u32,
    /// Harness messages consumed so far.
    pub cursor: u32,
    pub model_call_count: u32,
    pub has_pending: bool,
    /// Directories the watcher watches (null: not watching).
    pub watched_dirs: Option<u32>,
    /// Of those, the ones polled (network filesystems, or `watchPoll: 'always'`).
    pub polled_dirs: u32,
}

#[napi(js_name = "NativeSession")]
pub struct JsSession {
    pub(crate) handle: Arc<SessionHandle>,
}

/// Open (create or resume) a session on `store`.
#[napi(ts_return_type = "Promise<NativeSession>")]
pub fn open_session<'env>(
    env: &'env Env,
    store: &JsStore,
    options: NapiSessionOptions,
) -> napi::Result<PromiseRaw<'env, JsSession>> {
    let store = store.inner.clone();
    let (opts, indexer) = build(store.clone(), options)?;
    env.spawn_future(async move {
        let handle = SessionHandle::open(store, indexer, opts).await.js()?;
        Ok(JsSession { handle })
    })
}

/// The same, blocking the calling thread: only for the drop-in class's
/// synchronous methods called before anything opened the session.
#[napi(catch_unwind)]
pub fn open_session_sync(store: &JsStore, options: NapiSessionOptions) -> napi::Result<JsSession> {
    let store = store.inner.clone();
    let (opts, indexer) = build(store.clone(), options)?;
    let handle = napi::bindgen_prelude::block_on(SessionHandle::open(store, indexer, opts)).js()?;
    Ok(JsSession { handle })
}

#[napi]
impl JsSession {
    #[napi(getter)]
    pub fn session_id(&self) -> String {
        self.handle.session_id().to_string()
    }

    /// Whether `transformContextTailNow` may be called now: the write goes
    /// behind and no write error is outstanding (otherwise the async form
    /// awaits the write, so `writeError` is current when it returns).
    #[napi(getter)]
    pub fn can_transform_now(&self) -> bool {
        self.handle.can_transform_now()
    }

    /// true: the tail calls take lifted strings (`texts`). A facade newer than
    /// its addon would otherwise pass them to an addon that ignores the extra
    /// argument, and the strings would arrive empty.
    #[napi(getter)]
    pub fn takes_lifted_strings(&self) -> bool {
        true
    }

    /// `session:<id>`
    #[napi(getter)]
    pub fn session_object_id(&self) -> String {
        session_object_id(self.handle.session_id())
    }

    /// `chat:<id>`
    #[napi(getter)]
    pub fn chat_object_id(&self) -> String {
        chat_object_id(self.handle.session_id())
    }

    /// `system_prompt:<id>`
    #[napi(getter)]
    pub fn system_prompt_object_id(&self) -> String {
        system_prompt_object_id(self.handle.session_id())
    }

    #[napi(getter)]
    pub fn closed(&self) -> bool {
        self.handle.closed()
    }

    /// Ingest the harness transcript (JSON array) and return the context the
    /// model sees, as a delta against the output `have` (see
    /// [`JsContextDelta`]). Resolves after the session's writes landed, or,
    /// when the store is unreachable, with the writes queued (`writeError`);
    /// with `durableTransform: false`, once assembled (the write goes behind).
    #[napi]
    pub async fn transform_context(
        &self,
        messages_json: String,
        have: Option<u32>,
    ) -> napi::Result<JsContextDelta> {
        let messages: Vec<Value> = parse_json(&messages_json, "transformContext messages")?;
        let out = self
            .handle
            .transform(|s| {
                let d = s.ingest_and_assemble_delta(&messages, have)?;
                Ok(Some(JsContextDelta::of(d, s)))
            })
            .await
            .js()?;
        Ok(out.expect("a whole transcript is always assembled"))
    }

    /// `transformContext` for a replaced array (a compaction, a branch) in
    /// which messages consumed before stand in as `{"scm:fp": <fingerprint>}`
    /// (the `consumedFps` earlier calls returned), so they are neither sent
    /// nor hashed again; long strings lifted as in `transformContextTail`.
    /// null, and nothing changed, if a stand-in would count as new: send the
    /// messages themselves.
    #[napi]
    pub async fn transform_context_with_stand_ins(
        &self,
        messages_json: String,
        have: Option<u32>,
        texts: Option<Vec<String>>,
    ) -> napi::Result<Option<JsContextDelta>> {
        let messages = parse_messages(&messages_json, texts, "transformContext messages")?;
        self.handle
            .transform(|s| {
                let d = s.ingest_and_assemble_with_stand_ins_delta(&messages, have)?;
                Ok(d.map(|d| JsContextDelta::of(d, s)))
            })
            .await
            .js()
    }

    /// The same from a window of the transcript: `tailJson` holds
    /// `messages[offset..total]`, either from the last consumed message on
    /// (`offset` = `consumed` − 1, checked by fingerprint) or only the new
    /// messages (`offset` = `consumed`: the caller vouches that the array
    /// continues what was consumed). `texts`: long strings lifted out of the
    /// JSON (`{"scm:lifted": k}` stands for `texts[k]`). `firstJson`: with
    /// `offset` = `consumed` − 1, the array's first message, or only its role,
    /// timestamp and toolCallId (checked too: a compaction of the first
    /// message alone keeps the length and the last message). null when the
    /// window does not continue what was consumed (another array, or a
    /// concurrent call moved the cursor): send the whole array.
    #[napi]
    pub async fn transform_context_tail(
        &self,
        total: u32,
        offset: u32,
        tail_json: String,
        have: Option<u32>,
        texts: Option<Vec<String>>,
        first_json: Option<String>,
    ) -> napi::Result<Option<JsContextDelta>> {
        let tail = parse_messages(&tail_json, texts, "transformContext messages")?;
        let first = parse_first(first_json, "transformContext messages")?;
        self.handle
            .transform(|s| assemble_tail(s, total, offset, &tail, first.as_ref(), have))
            .await
            .js()
    }

    /// `transformContextTail` on the calling thread, when `canTransformNow`
    /// (the core's `SessionHandle::transform_now`: the async form's two
    /// thread hops cost more than the call at the tail). The session lock is
    /// only ever held for synchronous core calls, so this never waits on I/O.
    #[napi(catch_unwind)]
    pub fn transform_context_tail_now(
        &self,
        total: u32,
        offset: u32,
        tail_json: String,
        have: Option<u32>,
        texts: Option<Vec<String>>,
        first_json: Option<String>,
    ) -> napi::Result<Option<JsContextDelta>> {
        let tail = parse_messages(&tail_json, texts, "transformContext messages")?;
        let first = parse_first(first_json, "transformContext messages")?;
        self.handle
            .transform_now(|s| assemble_tail(s, total, offset, &tail, first.as_ref(), have))
            .js()
    }

    /// Ingest harness messages (JSON array) without a model call: no context
    /// is assembled or recorded. Resolves with how many were new, after their
    /// write landed (a transient store failure leaves it queued, `writeError`).
    #[napi]
    pub async fn observe_messages(&self, messages_json: String) -> napi::Result<u32> {
        let messages: Vec<Value> = parse_json(&messages_json, "observeMessages messages")?;
        let n = self
            .handle
            .observe(|s| s.observe_messages(&messages).map(Some))
            .await
            .js()?;
        Ok(n.map_or(0, |n| n as u32))
    }

    /// The same from a window of the transcript, as `transformContextTail`:
    /// null when the window does not continue what was consumed.
    #[napi]
    pub async fn observe_messages_tail(
        &self,
        total: u32,
        offset: u32,
        tail_json: String,
        texts: Option<Vec<String>>,
        first_json: Option<String>,
    ) -> napi::Result<Option<u32>> {
        let tail = parse_messages(&tail_json, texts, "observeMessages messages")?;
        let first = parse_first(first_json, "observeMessages messages")?;
        let out = self
            .handle
            .observe(|s| {
                s.observe_messages_tail(total as usize, offset as usize, &tail, first.as_ref())
            })
            .await
            .js()?;
        Ok(out.map(|n| n as u32))
    }

    /// The last failed store write (`{ code, message }`): its documents are
    /// queued for the next flush. null once a write landed.
    #[napi(getter)]
    pub fn write_error(&self) -> Option<JsStoreError> {
        self.handle
            .with(|s| {
                Ok(s.write_error().map(|e| JsStoreError {
                    code: e.code().to_string(),
                    message: e.to_string(),
                }))
            })
            .ok()
            .flatten()
    }

    /// Harness messages consumed so far (the cursor).
    #[napi(getter)]
    pub fn consumed(&self) -> u32 {
        self.handle.with(|s| Ok(s.cursor() as u32)).unwrap_or(0)
    }

    /// Cache layout counters as JSON `{epochs, notices, folds, host_folds, collapsed_results, collapsed_args, dedupes, copies, live_units, items}`.
    #[napi(catch_unwind)]
    pub fn cache_stats_json(&self) -> napi::Result<String> {
        let stats = self.handle.with(|s| Ok(s.cache_stats())).js()?;
        to_json(&stats)
    }

    /// The agent reads a file: index it and make it active.
    #[napi]
    pub async fn read(&self, path: String) -> napi::Result<JsOpResult> {
        self.handle
            .file_op(FileOp::Read, &path)
            .await
            .js()
            .map(Into::into)
    }

    /// The agent read part of a file (a line range, an image): indexed and
    /// listed, not active.
    #[napi]
    pub async fn observe_partial_read(&self, path: String) -> napi::Result<JsOpResult> {
        self.handle
            .file_op(FileOp::PartialRead, &path)
            .await
            .js()
            .map(Into::into)
    }

    /// The harness wrote a file for the agent: new version, active.
    #[napi]
    pub async fn observe_write(&self, path: String) -> napi::Result<JsOpResult> {
        self.handle
            .file_op(FileOp::Write, &path)
            .await
            .js()
            .map(Into::into)
    }

    /// The harness edited a file for the agent: new version, active.
    #[napi]
    pub async fn observe_edit(&self, path: String) -> napi::Result<JsOpResult> {
        self.handle
            .file_op(FileOp::Edit, &path)
            .await
            .js()
            .map(Into::into)
    }

    /// ls / find / grep output → discovery stubs (index + pool only).
    /// `baseDir`: the directory the tool listed or searched (default: workspace root).
    #[napi]
    pub async fn observe_discovery(
        &self,
        tool: String,
        output: String,
        base_dir: Option<String>,
    ) -> napi::Result<JsOpResult> {
        let base = base_dir.unwrap_or_default();
        self.handle
            .observe_discovery(&tool, &output, &base)
            .await
            .js()
            .map(Into::into)
    }

    /// Files under the workspace named in a bash command or its output → discovery stubs;
    /// a file the command only prints (`cat F`, `sed -n 'A,Bp' F`) is indexed and tracked, into the pool.
    #[napi]
    pub async fn observe_bash(
        &self,
        command: String,
        output: Option<String>,
    ) -> napi::Result<JsOpResult> {
        self.handle
            .observe_bash(&command, &output.unwrap_or_default())
            .await
            .js()
            .map(Into::into)
    }

    /// activate / deactivate / pin / unpin (`op`) of an object of this
    /// session. Synchronous: the session write is queued (see `flush`); a
    /// stub is read from disk now.
    #[napi(catch_unwind)]
    pub fn set_op(&self, op: String, target: String) -> napi::Result<JsOpResult> {
        let op = set_op_named(&op)?;
        self.handle
            .with(|s| Ok(s.set_op(op, &target)))
            .js()
            .map(Into::into)
    }

    /// Whether a tool call (`tool`, its arguments as JSON) would write a ref
    /// this session showed into a file: the ref, or null when the call may
    /// run. Synchronous; reads the file the call names only when a ref is
    /// found.
    #[napi(catch_unwind)]
    pub fn check_tool_call(
        &self,
        tool: String,
        args_json: String,
    ) -> napi::Result<Option<JsRefAsText>> {
        let args: Value = parse_json(&args_json, "checkToolCall arguments")?;
        self.handle
            .with(|s| Ok(s.ref_as_text(&tool, &args)))
            .js()
            .map(|r| r.map(Into::into))
    }

    /// Sets the system prompt the model gets (the harness's own, when it
    /// sends it itself): a new version of `system_prompt:<id>` when it
    /// changed, written with the next flush and recorded with the next
    /// model call. Synchronous.
    #[napi(catch_unwind)]
    pub fn set_system_prompt(&self, prompt: String) -> napi::Result<()> {
        self.handle.with(|s| s.set_system_prompt(&prompt)).js()
    }

    /// Write everything queued in one transaction (null: nothing was queued).
    /// Background writes of transformContext have finished when it resolves.
    #[napi]
    pub async fn flush(&self) -> napi::Result<Option<JsTxReceipt>> {
        Ok(self.handle.flush().await.js()?.map(Into::into))
    }

    /// The sets as JSON `{session_index, metadata_pool: [{id, type, path?, …}], active_set, pinned_set}`.
    #[napi(catch_unwind)]
    pub fn snapshot_json(&self) -> napi::Result<String> {
        let snap = self.handle.with(|s| Ok(s.snapshot_now())).js()?;
        to_json(&snap)
    }

    #[napi(catch_unwind)]
    pub fn stats(&self) -> napi::Result<JsSessionStats> {
        self.handle
            .with(|s| {
                let watched = s.watched_dirs();
                Ok(JsSessionStats {
                    turn_count: s.turn_count() as u32,
                    cursor: s.cursor() as u32,
                    model_call_count: s.model_call_count() as u32,
                    has_pending: s.has_pending(),
                    watched_dirs: watched.map(|(d, _)| d as u32),
                    polled_dirs: watched.map_or(0, |(_, p)| p as u32),
                })
            })
            .js()
    }

    /// Agent path → source, through this session's resolver.
    #[napi(catch_unwind)]
    pub fn resolve(&self, agent_path: String) -> napi::Result<JsResolvedPath> {
        let indexer = self.handle.with(|s| Ok(s.indexer())).js()?;
        indexer.resolver.resolve(&agent_path).js().map(Into::into)
    }

    /// Latest version of any object (JSON text or null).
    #[napi]
    pub async fn get_object(&self, id: String) -> napi::Result<Option<String>> {
        // Chat and session documents are stored paged: read them whole.
        match self.handle.get_object(&id).await.js()? {
            Some(d) => to_json(&d).map(Some),
            None => Ok(None),
        }
    }

    /// Every version of an object, oldest first (JSON `[{txId, txTime, doc}]`).
    #[napi]
    pub async fn history(&self, id: String) -> napi::Result<String> {
        let versions = self.handle.history(&id).await.js()?;
        let out: Vec<Value> = versions
            .into_iter()
            .map(|v| serde_json::json!({"txId": v.tx_id, "txTime": v.tx_time, "doc": v.doc}))
            .collect();
        to_json(&out)
    }

    /// The version of an object visible at transaction `txId` (JSON or null).
    #[napi]
    pub async fn get_object_as_of(&self, id: String, tx_id: i64) -> napi::Result<Option<String>> {
        let doc = self.handle.get_object_as_of(&id, tx_id).await.js()?;
        doc.as_ref().map(to_json).transpose()
    }

    /// Rebuild exactly what model call `n` (0-based) was shown, from the store.
    #[napi]
    pub async fn reconstruct_call(&self, n: u32) -> napi::Result<String> {
        to_json(&self.handle.reconstruct_call(n as usize).await.js()?)
    }

    /// "spec" or "cache" (a read-only session: the layout it was recorded with).
    #[napi(getter, catch_unwind)]
    pub fn layout(&self) -> napi::Result<String> {
        self.handle
            .with(|s| Ok(s.layout().as_str().to_string()))
            .js()
    }

    /// Every object of the session with the id the model sees, as JSON
    /// `[{alias?, id, type, path?, char_count?, tool?, …, active, pinned}]`.
    #[napi(catch_unwind)]
    pub fn object_lines_json(&self) -> napi::Result<String> {
        to_json(&self.handle.with(|s| Ok(s.object_lines())).js()?)
    }

    /// A full object id from an alias (`t12`, `f3`), a full id or a unique prefix.
    #[napi(catch_unwind)]
    pub fn resolve_id(&self, target: String) -> napi::Result<String> {
        self.handle.with(|s| s.resolve_id(&target)).js()
    }

    /// The context commit model call `n` followed (the session's tip as of
    /// the call's basis transaction), or null before the first commit.
    #[napi]
    pub async fn call_commit(&self, n: u32) -> napi::Result<Option<String>> {
        self.handle.call_commit(n as usize).await.js()
    }

    /// Summaries of model calls `from..to` as JSON `[{call, messages, tokens,
    /// cached_tokens, transcript_messages, epochs, folds, shown, commit}]`,
    /// each with `context` (what the model was sent) when asked.
    #[napi]
    pub async fn call_summaries(
        &self,
        from: u32,
        to: u32,
        context: Option<bool>,
    ) -> napi::Result<String> {
        let summaries = self
            .handle
            .call_summaries(from as usize, to as usize, context.unwrap_or(false))
            .await
            .js()?;
        to_json(&summaries)
    }

    /// Flush, stop the watcher, release the session. Idempotent; later calls
    /// fail with SESSION_CLOSED.
    #[napi]
    pub async fn close(&self) -> napi::Result<()> {
        self.handle.close().await.js()
    }
}

/// The core's set operation named `op`.
pub(crate) fn set_op_named(op: &str) -> napi::Result<SetOp> {
    SetOp::parse(op).ok_or_else(|| invalid_arg(format!("unknown set operation {op:?}")))
}

/// Ingest + assemble from a window of the transcript (`tail` =
/// `messages[offset..total]`); None when it does not continue what was
/// consumed.
fn assemble_tail(
    s: &mut Session,
    total: u32,
    offset: u32,
    tail: &[Value],
    first: Option<&Value>,
    have: Option<u32>,
) -> scm_core::Result<Option<JsContextDelta>> {
    let (total, offset) = (total as usize, offset as usize);
    let d = s.ingest_and_assemble_tail_delta(total, offset, tail, first, have)?;
    Ok(d.map(|d| JsContextDelta::of(d, s)))
}

/// The first message (or its head) a tail call sends beside its window.
fn parse_first(json: Option<String>, what: &str) -> napi::Result<Option<Value>> {
    json.map(|j| parse_json(&j, what)).transpose()
}

/// `cm.checkpoint(…)` as the facade sends it.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CheckpointJson {
    trigger: Option<String>,
    summary: Option<String>,
    template: Option<String>,
    principal: Option<String>,
    created_at: Option<String>,
    compaction: Option<Vec<Value>>,
}

impl CheckpointJson {
    /// The core's request, `default_trigger` when none is named.
    fn into_request(
        self,
        default_trigger: &str,
    ) -> napi::Result<scm_core::session::CheckpointRequest> {
        let trigger =
            scm_core::commits::Trigger::parse(self.trigger.as_deref().unwrap_or(default_trigger))
                .js()?;
        let template = self
            .template
            .unwrap_or_else(|| format!("scm/{}", env!("CARGO_PKG_VERSION")));
        let mut req = scm_core::session::CheckpointRequest::new(trigger, template);
        req.summary = self.summary;
        req.principal = self.principal;
        req.created_at = self.created_at;
        req.compaction = self.compaction;
        Ok(req)
    }
}

#[napi]
impl JsSession {
    /// The host moved to another branch of its session (`messagesJson`: the
    /// branch's messages as the context hook would get them). Commits what
    /// is new (`requestJson` as for `checkpoint`, trigger `turn_boundary` by
    /// default), then moves the session to the commit the branch maps to.
    /// → `{ moved, commit }` (JSON): `moved` false when the branch continues
    /// the session or nothing maps; `commit` null when it moved to the root.
    #[napi]
    pub async fn rewind(
        &self,
        messages_json: String,
        request_json: String,
    ) -> napi::Result<String> {
        let messages: Vec<Value> = parse_json(&messages_json, "rewind messages")?;
        let req =
            parse_json::<CheckpointJson>(&request_json, "rewind")?.into_request("turn_boundary")?;
        let moved = self.handle.rewind(&messages, &req).await.js()?;
        to_json(&serde_json::json!({
            "moved": moved.is_some(),
            "commit": moved.flatten(),
        }))
    }

    /// `{ trigger?, summary?, template?, principal?, createdAt?, compaction? }`
    /// → the last commit made (JSON); when nothing was new (turn boundary,
    /// session end) the current tip, or null when there is none.
    #[napi]
    pub async fn checkpoint(&self, request_json: String) -> napi::Result<Option<String>> {
        let req =
            parse_json::<CheckpointJson>(&request_json, "checkpoint")?.into_request("explicit")?;
        let c = self.handle.checkpoint(&req).await.js()?;
        c.as_ref().map(to_json).transpose()
    }

    /// The tip of this session's commit chain, or null.
    #[napi(getter)]
    pub fn commit_tip(&self) -> Option<String> {
        self.handle
            .with(|s| Ok(s.commit_tip().map(|(id, _)| id.to_string())))
            .ok()
            .flatten()
    }
}
