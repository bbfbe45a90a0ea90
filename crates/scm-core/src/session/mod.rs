//! Session engine: sets, auto-collapse policy, persistence, resume.
//!
//! One [`Session`] per agent session; many may share one `Arc<dyn Store>`.
//! Agent operations mutate in-memory state synchronously and queue store
//! writes; [`Session::flush`] submits everything queued in **one**
//! transaction. `transform_context` and every async agent operation end with
//! a flush, so the session document is written at most once per call.
//!
//! For a binding that keeps the session behind a mutex, every async method
//! has a split form that never needs the lock across an await:
//! [`Session::ingest_and_assemble`] / [`Session::take_pending`] →
//! [`PendingWrite::submit`] (needs only the store) → [`Session::apply_receipt`]
//! (or [`Session::restore_pending`] on failure); agent reads go through
//! [`Session::indexer`] and then `apply_*`.
//!
//! Sets (SSOT §3.1) hold content objects (`file`, `toolcall`) only:
//! `session_index` (append-only), `metadata_pool`, `active_set`,
//! `pinned_set`, all insertion-ordered.
//!
//! (Over ~800 lines for now: `Session`'s fields and its core lifecycle; its parts move into their own types one by one, issue 15 item 2.)

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::mpsc::Receiver;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::context::chat::{ChatJson, Turn};
use crate::context::ingest::Cursor;
use crate::context::spec_layout::{self, ActiveBlock, AssemblyInput};
use crate::context::static_refs::{ModelCallRecord, ShownRef};
use crate::error::{Error, Result};
use crate::fs::indexer::Indexer;
use crate::fs::resolver::{ResolvedPath, Resolver};
use crate::fs::watcher::{WatchEvent, Watcher};
use crate::model::{
    assigned_document, chat_object_id, session_object_id, system_prompt_object_id, type_of,
    FilesystemSource, ObjectType,
};
use crate::store::{AsOf, Document, Store, TxReceipt, Version, ID_KEY};

pub use crate::context::cache_layout::CacheStats;
pub use crate::context::epochs::CachePolicy;
pub use crate::context::output::OutputDelta;
pub use crate::context::words::{SetOp, SetOutcome};
pub use crate::context::{Layout, RenderOptions};
pub use policy::{CollapsePolicy, UseWindow};
pub use sets::OrderedSet;

mod cache;
mod checkpoint;
mod copies;
pub mod discovery;
pub mod documents;
mod drive;
mod fork;
pub mod handle;
mod ingest;
pub mod inspect;
pub mod links;
mod ops;
mod outage;
mod output;
pub mod paged;
mod persist;
pub mod policy;
mod reconstruct;
mod resume;
pub mod rewind;
pub mod sets;

pub use checkpoint::CheckpointRequest;
pub use ops::{agent_target, DiscoveryPlan, FileOp};
pub use persist::PendingWrite;
pub use reconstruct::ReconstructPlan;

/// How a session is opened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionOptions {
    /// The harness's session id (pi: a UUIDv7). Keys `session:<id>`,
    /// `chat:<id>`, `system_prompt:<id>` and namespaces toolcall ids.
    pub session_id: String,
    /// Set (or replace) the system prompt; None keeps a resumed one.
    pub system_prompt: Option<String>,
    pub policy: CollapsePolicy,
    pub layout: Layout,
    /// Thresholds of [`Layout::Cache`].
    pub cache: CachePolicy,
    pub render: RenderOptions,
    /// Track indexed files with a watcher (needs a tokio runtime).
    pub watch: bool,
    /// On resume, read discovery stubs whose source exists (implementation
    /// plan §5 "Session resume", step 3). Vanished stubs always get a
    /// deletion version.
    pub resume_upgrades_stubs: bool,
    /// Note folders (agent paths: relative to the workspace root, or
    /// absolute): every `.md`/`.markdown` under them is indexed as a note
    /// when the session opens, and watched with `watch`
    /// ([`crate::memory::folders`]).
    pub note_folders: Vec<String>,
}

impl Default for SessionOptions {
    fn default() -> Self {
        Self {
            session_id: String::new(),
            system_prompt: None,
            policy: CollapsePolicy::default(),
            layout: Layout::default(),
            cache: CachePolicy::default(),
            render: RenderOptions::default(),
            watch: false,
            resume_upgrades_stubs: true,
            note_folders: Vec::new(),
        }
    }
}

impl SessionOptions {
    pub fn new(session_id: impl Into<String>) -> Self {
        Self {
            session_id: session_id.into(),
            ..Self::default()
        }
    }
}

/// The answer to an agent operation. Failures the agent can act on (unknown
/// id, unreadable file, infrastructure object) are `ok: false` with a coded
/// reason, never an `Err`.
///
/// `message` is the engine's account (names the object by id); `text` is
/// the tool result the model reads, in the session layout's words
/// (`context/words.rs`): a host passes it through. They differ only for the
/// cache layout's set operations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpResult {
    pub ok: bool,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The error code when `ok` is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// What a successful set operation did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<SetOutcome>,
    #[serde(default)]
    pub text: String,
}

impl OpResult {
    pub fn success(message: impl Into<String>, id: Option<String>) -> Self {
        let message = message.into();
        Self {
            ok: true,
            text: message.clone(),
            message,
            id,
            code: None,
            outcome: None,
        }
    }

    pub fn failure(err: &Error, id: Option<String>) -> Self {
        let message = err.to_string();
        Self {
            ok: false,
            text: message.clone(),
            message,
            id,
            code: Some(err.code().to_string()),
            outcome: None,
        }
    }
}

/// One metadata pool entry as the user (not the model) sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolEntry {
    pub id: String,
    #[serde(rename = "type")]
    pub object_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub char_count: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// File state: present, stub, deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Why a file's content is not held (`binary`, `non_utf8`, `too_large`):
    /// such a file is metadata only, its bytes never reach the context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_omitted: Option<String>,
}

/// The session's sets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionSnapshot {
    pub session_index: Vec<String>,
    pub metadata_pool: Vec<PoolEntry>,
    pub active_set: Vec<String>,
    pub pinned_set: Vec<String>,
}

/// A version the session knows (its latest as far as it knows); `tx` is the transaction at which it is known to
/// be current (None: not known yet — the next flush's transaction).
#[derive(Debug, Clone)]
struct Known {
    doc: Document,
    tx: Option<i64>,
}

impl Known {
    fn str(&self, k: &str) -> Option<&str> {
        self.doc.get(k).and_then(Value::as_str)
    }
    fn object_type(&self) -> Option<ObjectType> {
        type_of(&self.doc)
    }
    fn object_hash(&self) -> &str {
        self.str("object_hash").unwrap_or_default()
    }
    fn is_stub(&self) -> bool {
        self.object_type() == Some(ObjectType::File) && self.str("state") == Some("stub")
    }
    fn source(&self) -> Option<FilesystemSource> {
        self.doc.get("source").and_then(FilesystemSource::from_json)
    }
}

/// Live chat state: turns plus what is derived from them incrementally.
#[derive(Debug, Default)]
struct ChatState {
    turns: Vec<Turn>,
    /// Position of each turn's start in the flattened turns (see
    /// [`paged`]): the turn start, then its messages.
    turn_start: Vec<usize>,
    /// Flattened positions changed in place since the last chat write.
    changed: Vec<usize>,
    /// Rendered chat messages (toolcall_refs), serialised, append-only.
    rendered: ChatJson,
    /// Assistant messages with unresolved tool calls:
    /// (rendered index, turn, message index).
    open: Vec<(usize, usize, usize)>,
    /// Unresolved tool calls by harness id, oldest first:
    /// (turn, message index, call position).
    pending_calls: HashMap<String, VecDeque<(usize, usize, usize)>>,
    /// Tool results seen per harness id (repeats get `:2`, `:3` …).
    call_counts: HashMap<String, u32>,
    /// Harness id → toolcall object ids, oldest first.
    by_call_id: HashMap<String, Vec<String>>,
    toolcall_refs: Vec<String>,
}

impl ChatState {
    fn push_turn(&mut self, turn: Turn) {
        self.turn_start.push(self.flat_len());
        self.turns.push(turn);
    }

    /// Appends a message to the last turn: its position.
    fn push_message(&mut self, entry: crate::context::chat::MessageEntry) -> (usize, usize) {
        let t = self.turns.len() - 1;
        let msgs = &mut self.turns[t].messages;
        msgs.push(entry);
        (t, msgs.len() - 1)
    }

    /// A message to change in place (its page is written again).
    fn message_mut(&mut self, t: usize, m: usize) -> &mut crate::context::chat::MessageEntry {
        self.changed.push(self.turn_start[t] + 1 + m);
        &mut self.turns[t].messages[m]
    }

    /// Length of the flattened turns.
    fn flat_len(&self) -> usize {
        match (self.turn_start.last(), self.turns.last()) {
            (Some(s), Some(t)) => s + 1 + t.messages.len(),
            _ => 0,
        }
    }

    /// After replacing `turns` wholesale.
    fn reindex(&mut self) {
        self.turn_start.clear();
        let mut at = 0;
        for t in &self.turns {
            self.turn_start.push(at);
            at += 1 + t.messages.len();
        }
        self.changed.clear();
    }
}

/// Writes queued for the next flush.
#[derive(Debug, Default)]
struct Pending {
    /// Every object version queued (content objects and the system prompt),
    /// oldest first per object: an outage keeps each version, not only the
    /// last (history is never erased).
    versions: VersionQueue,
    session: bool,
    chat: bool,
}

impl Pending {
    fn is_empty(&self) -> bool {
        self.versions.is_empty() && !self.session && !self.chat
    }
}

/// Object versions waiting to be written, in the order they were queued.
/// Only a version identical to the one queued just before it (same
/// `object_hash`) is merged into it: A, B, A stays three versions.
#[derive(Debug, Default)]
pub(crate) struct VersionQueue {
    /// Ids in the order their first queued version was queued.
    ids: OrderedSet,
    by_id: HashMap<String, Queued>,
}

/// The queued versions of one object, and the version the first of them was
/// derived from (what the session held as latest then; `None`: no version).
/// A file version is written as a compare-and-set on it (issue 14: a version
/// read during an outage must not land over a newer one another agent wrote
/// meanwhile); each later version is derived from the one before it.
#[derive(Debug, Clone)]
pub(crate) struct Queued {
    pub(crate) id: String,
    pub(crate) base: Option<Document>,
    pub(crate) docs: Vec<Document>,
}

impl VersionQueue {
    fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Queues `doc` as the newest version of `id`; `base` is the version it
    /// was derived from (used when nothing of `id` is queued yet).
    fn push(&mut self, id: &str, doc: Document, base: Option<Document>) {
        self.ids.insert(id);
        let queue = self.by_id.entry(id.to_string()).or_insert_with(|| Queued {
            id: id.to_string(),
            base,
            docs: Vec::new(),
        });
        match queue.docs.last_mut() {
            Some(last) if last.get("object_hash") == doc.get("object_hash") => *last = doc,
            _ => queue.docs.push(doc),
        }
    }

    /// Refreshes the descriptive fields of the newest queued version of
    /// `id` when it is the same version as `doc`.
    fn refresh(&mut self, id: &str, doc: &Document) {
        if let Some(last) = self.by_id.get_mut(id).and_then(|q| q.docs.last_mut()) {
            if last.get("object_hash") == doc.get("object_hash") {
                *last = doc.clone();
            }
        }
    }

    /// Puts `older` (a failed write's versions, per id oldest first) before
    /// what was queued since; an id's base is then the older write's.
    fn prepend(&mut self, older: Vec<Queued>) {
        let mut ids = OrderedSet::new();
        let mut by_id: HashMap<String, Queued> = HashMap::new();
        for q in older {
            ids.insert(q.id.as_str());
            let into = by_id.entry(q.id.clone()).or_insert_with(|| Queued {
                docs: Vec::new(),
                ..q.clone()
            });
            for d in q.docs {
                match into.docs.last() {
                    Some(l) if l.get("object_hash") == d.get("object_hash") => {}
                    _ => into.docs.push(d),
                }
            }
        }
        let newer = std::mem::take(self);
        for id in newer.ids.iter() {
            ids.insert(id.as_str());
        }
        for (id, q) in newer.by_id {
            let into = by_id.entry(id).or_insert_with(|| Queued {
                docs: Vec::new(),
                ..q.clone()
            });
            for d in q.docs {
                match into.docs.last_mut() {
                    Some(l) if l.get("object_hash") == d.get("object_hash") => *l = d,
                    _ => into.docs.push(d),
                }
            }
        }
        *self = VersionQueue { ids, by_id };
    }

    /// Takes everything, in queue order.
    fn take(&mut self) -> Vec<Queued> {
        let mut by_id = std::mem::take(&mut self.by_id);
        let ids = std::mem::take(&mut self.ids);
        ids.iter().filter_map(|id| by_id.remove(id)).collect()
    }
}

struct WatchState {
    watcher: Watcher,
    rx: Receiver<WatchEvent>,
    tracked: HashSet<String>,
}

/// One agent session. See the module docs.
pub struct Session {
    store: Arc<dyn Store>,
    indexer: Arc<Indexer>,
    options: SessionOptions,
    session_doc_id: String,
    chat_id: String,
    system_prompt_id: String,
    system_prompt: Option<Known>,
    session_index: OrderedSet,
    metadata_pool: OrderedSet,
    active_set: OrderedSet,
    pinned_set: OrderedSet,
    objects: HashMap<String, Known>,
    /// Rendered pool lines (JSON-escaped), aligned with `metadata_pool`.
    pool_lines: Vec<String>,
    /// Escaped active blocks by id, with the object hash they render.
    active_json: HashMap<String, (String, String)>,
    chat: ChatState,
    cursor: Cursor,
    uses: UseWindow,
    model_calls: Vec<ModelCallRecord>,
    /// What the store holds of the paged chat and session parts.
    paged: persist::StoredPages,
    /// Object hash last written into a model call record, per id.
    recorded: HashMap<String, String>,
    /// Pool objects (and the system prompt) whose shown version changed
    /// since the last record.
    dirty_versions: OrderedSet,
    pending: Pending,
    watch: Option<WatchState>,
    closed: bool,
    /// Aliases (both layouts) and the cache layout's state.
    cache: crate::context::cache_layout::CacheLayout,
    /// Why writes are queued (see [`Session::write_error`]).
    write_error: Option<Error>,
    /// The last output handed over as a delta (see [`output`]).
    output: crate::context::output::PreviousOutput,
    /// The last context handed over whole (not as a delta), for the next
    /// call's edit check (working copies); None when the previous output
    /// (the deltas' base) holds it.
    whole_output: Option<String>,
    /// What the last ingest consumed (see `take_last_consumed`).
    last_consumed: Vec<(usize, String)>,
    /// The active set's pool positions (each model call records them), with
    /// the (active set, pool) versions they were computed for.
    active_positions: ((u64, u64), Vec<usize>),
    /// File-list lines by file index, with the listed size they were
    /// rendered from (see `file_lines` in [`cache`]).
    file_lines: Vec<Option<(u64, String)>>,
    /// Opened by [`Session::open_read_only`]: never writes to the store.
    read_only: bool,
    /// Cache layout: per file, the version the model last saw (see
    /// `notify_changes` in [`cache`]).
    seen: crate::context::notices::SeenFiles,
    /// The context-commit chain's tip and the chat position after it
    /// (see [`checkpoint`]).
    commit_tip: Option<(String, u64)>,
    /// What the version pins of shown notes' links resolved to (link lines).
    pins: crate::memory::links::PinStates,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("session_id", &self.options.session_id)
            .field("session_index", &self.session_index.len())
            .field("active_set", &self.active_set.len())
            .finish_non_exhaustive()
    }
}

impl Session {
    fn empty(store: Arc<dyn Store>, indexer: Arc<Indexer>, options: SessionOptions) -> Self {
        let sid = options.session_id.clone();
        Self {
            store,
            indexer,
            session_doc_id: session_object_id(&sid),
            chat_id: chat_object_id(&sid),
            system_prompt_id: system_prompt_object_id(&sid),
            options,
            system_prompt: None,
            session_index: OrderedSet::new(),
            metadata_pool: OrderedSet::new(),
            active_set: OrderedSet::new(),
            pinned_set: OrderedSet::new(),
            objects: HashMap::new(),
            pool_lines: Vec::new(),
            active_json: HashMap::new(),
            chat: ChatState::default(),
            cursor: Cursor::default(),
            uses: UseWindow::default(),
            model_calls: Vec::new(),
            paged: Default::default(),
            recorded: HashMap::new(),
            dirty_versions: OrderedSet::new(),
            pending: Pending::default(),
            watch: None,
            closed: false,
            cache: Default::default(),
            write_error: None,
            output: Default::default(),
            whole_output: None,
            file_lines: Vec::new(),
            seen: Default::default(),
            active_positions: ((0, 0), Vec::new()),
            last_consumed: Vec::new(),
            commit_tip: None,
            read_only: false,
            pins: Default::default(),
        }
    }

    // ---- accessors ----

    pub fn session_id(&self) -> &str {
        &self.options.session_id
    }

    pub fn options(&self) -> &SessionOptions {
        &self.options
    }

    pub fn store(&self) -> Arc<dyn Store> {
        self.store.clone()
    }

    pub fn indexer(&self) -> Arc<Indexer> {
        self.indexer.clone()
    }

    fn resolver(&self) -> &Resolver {
        &self.indexer.resolver
    }

    pub fn system_prompt(&self) -> Option<&str> {
        self.system_prompt.as_ref().and_then(|c| c.str("content"))
    }

    /// Number of chat turns (see [`policy`] for the definition of a turn).
    pub fn turn_count(&self) -> usize {
        self.chat.turns.len()
    }

    /// Harness messages consumed by the cursor after the last call.
    pub fn cursor(&self) -> usize {
        self.cursor.consumed
    }

    pub fn is_closed(&self) -> bool {
        self.closed
    }

    fn ensure_open(&self) -> Result<()> {
        if self.closed {
            Err(Error::SessionClosed)
        } else {
            Ok(())
        }
    }

    /// [`Session::snapshot`] after applying the watcher events received so
    /// far: a file changed on disk shows its new metadata (`char_count`, …)
    /// without waiting for the next operation. What callers of the API get.
    pub fn snapshot_now(&mut self) -> SessionSnapshot {
        if !self.closed {
            self.drain_watch();
        }
        self.snapshot()
    }

    /// A pool entry for any object the session holds.
    pub(super) fn pool_entry(
        &self,
        id: &str,
        resolver: &crate::fs::resolver::Resolver,
    ) -> PoolEntry {
        let c = self.objects.get(id);
        let s = |k: &str| c.and_then(|c| c.str(k)).map(str::to_string);
        let object_type = s("type").unwrap_or_else(|| "unknown".into());
        let is_file = object_type == "file";
        PoolEntry {
            id: id.to_string(),
            path: c
                .and_then(Known::source)
                .map(|src| resolver.agent_path(&src)),
            file_type: if is_file { s("file_type") } else { None },
            char_count: if is_file {
                c.and_then(|c| c.doc.get("char_count"))
                    .and_then(Value::as_u64)
            } else {
                c.map(|c| crate::model::char_count_of(c.str("content")))
            },
            tool: s("tool"),
            status: s("status"),
            state: if is_file { s("state") } else { None },
            content_omitted: if is_file { s("content_omitted") } else { None },
            object_type,
        }
    }

    /// The sets, with each pool object's metadata.
    pub fn snapshot(&self) -> SessionSnapshot {
        let resolver = self.resolver();
        let metadata_pool = self
            .metadata_pool
            .iter()
            .map(|id| self.pool_entry(id, resolver))
            .collect();
        SessionSnapshot {
            session_index: self.session_index.to_vec(),
            metadata_pool,
            active_set: self.active_set.to_vec(),
            pinned_set: self.pinned_set.to_vec(),
        }
    }

    /// The session's records of what each model call showed (expanded).
    pub fn model_call_count(&self) -> usize {
        self.model_calls.len()
    }

    /// The exact versions call `call_index` showed: the system prompt, every
    /// pool object and therefore every active one.
    pub fn shown(&self, call_index: usize) -> Option<Vec<ShownRef>> {
        let record = self.model_calls.get(call_index)?;
        let mut latest: HashMap<&str, ShownRef> = HashMap::new();
        for r in &self.model_calls[..=call_index] {
            for v in &r.versions {
                latest.insert(
                    &v.id,
                    ShownRef {
                        id: v.id.clone(),
                        tx_id: v.tx_id.or(r.basis_tx),
                        object_hash: v.object_hash.clone(),
                        content_hash: v.content_hash.clone(),
                    },
                );
            }
        }
        let mut out = Vec::new();
        if let Some(sp) = latest.remove(self.system_prompt_id.as_str()) {
            out.push(sp);
        }
        for id in &self.metadata_pool.as_slice()[..record.pool_len] {
            if let Some(r) = latest.remove(id.as_str()) {
                out.push(r);
            }
        }
        Some(out)
    }

    /// The raw model call record.
    pub fn model_call(&self, call_index: usize) -> Option<&ModelCallRecord> {
        self.model_calls.get(call_index)
    }

    // ---- store pass-throughs ----

    // The chat and session documents are stored paged: these read them
    // whole (see [`paged`]).

    pub async fn get_object(&self, id: &str) -> Result<Option<Document>> {
        paged::get(&*self.store, id).await
    }

    pub async fn history(&self, id: &str) -> Result<Vec<Version>> {
        paged::history(&*self.store, id).await
    }

    pub async fn get_object_as_of(&self, id: &str, tx_id: i64) -> Result<Option<Document>> {
        paged::get_as_of(&*self.store, id, AsOf::TxId(tx_id)).await
    }

    // ---- cache and sets ----

    fn display_path_fn(&self) -> impl Fn(&FilesystemSource) -> String + '_ {
        let r = self.resolver();
        move |s: &FilesystemSource| r.display_path(s)
    }

    /// The pool line of `id`, JSON-escaped.
    fn render_pool_line(&self, id: &str) -> String {
        spec_layout::escape(&match self.objects.get(id) {
            Some(c) => spec_layout::pool_line(&c.doc, &self.display_path_fn()),
            None => format!("- id={id} [missing]"),
        })
    }

    /// A file version the indexer planned: queued (a compare-and-set on
    /// the version it was planned against) to land with the session's next
    /// write, or, unchanged, the latest version cached. The one way a file
    /// version the session reads from disk enters it.
    fn take_version(&mut self, plan: crate::fs::indexer::VersionPlan) {
        if plan.action == crate::fs::indexer::IndexAction::Unchanged {
            self.put_object(plan.doc, None, false);
        } else {
            self.put_object_on(plan.doc, None, Some(plan.base));
        }
    }

    /// Caches `doc` as the latest version of its object; `write` queues it
    /// (derived from the version cached now).
    fn put_object(&mut self, doc: Document, tx: Option<i64>, write: bool) {
        let base = if write {
            let id = doc.get(ID_KEY).and_then(Value::as_str);
            Some(
                id.and_then(|id| self.objects.get(id))
                    .map(|c| c.doc.clone()),
            )
        } else {
            None
        };
        self.put_object_on(doc, tx, base)
    }

    /// [`Session::put_object`] with the base of the write named: `queue`
    /// Some(base) queues `doc` as derived from `base` — also when the cache
    /// holds this version already, since the store does not (its latest was
    /// `base`).
    fn put_object_on(&mut self, doc: Document, tx: Option<i64>, queue: Option<Option<Document>>) {
        let Some(id) = doc.get(ID_KEY).and_then(Value::as_str).map(str::to_string) else {
            return;
        };
        let changed = self
            .objects
            .get(&id)
            .is_none_or(|c| c.doc.get("object_hash") != doc.get("object_hash"));
        if !changed {
            // Same version: keep the better-known tx, refresh descriptive fields.
            match queue {
                Some(base)
                    if base.as_ref().map(|b| b.get("object_hash"))
                        != Some(doc.get("object_hash")) =>
                {
                    self.pending.versions.push(&id, doc.clone(), base)
                }
                _ => self.pending.versions.refresh(&id, &doc),
            }
            if let Some(c) = self.objects.get_mut(&id) {
                c.tx = c.tx.or(tx);
                c.doc = doc;
            }
            return;
        }
        if let Some(base) = queue {
            self.pending.versions.push(&id, doc.clone(), base);
        }
        self.objects.insert(id.clone(), Known { doc, tx });
        self.forget_file_line(&id);
        self.seen.new_version(&id);
        if let Some(pos) = self.metadata_pool.position(&id) {
            self.pool_lines[pos] = self.render_pool_line(&id);
            self.dirty_versions.insert(id);
        }
    }

    fn pool_insert(&mut self, id: &str) {
        if !self.metadata_pool.insert(id) {
            return;
        }
        let line = self.render_pool_line(id);
        self.pool_lines.push(line);
        self.dirty_versions.insert(id);
        self.pending.session = true;
    }

    /// Adds a content object to the session index, the pool and (optionally)
    /// the active set.
    fn enter(&mut self, id: &str, pool: bool, active: bool) {
        if self.session_index.insert(id) {
            self.pending.session = true;
        }
        if pool || active {
            self.pool_insert(id);
        }
        if active && self.active_set.insert(id) {
            self.pending.session = true;
        }
        self.cache_file_entered(id);
    }

    fn current_turn(&self) -> usize {
        self.chat.turns.len().saturating_sub(1)
    }

    fn record_use(&mut self, id: &str) {
        let turn = self.current_turn();
        self.uses.record(turn, id, self.options.policy.turns_back);
        self.pending.session = true;
    }

    // ---- watcher ----

    fn track(&mut self, id: &str) {
        let Some(w) = self.watch.as_mut() else {
            return;
        };
        if w.tracked.contains(id) {
            return;
        }
        let Some(c) = self.objects.get(id) else {
            return;
        };
        if c.object_type() != Some(ObjectType::File) || c.is_stub() {
            return;
        }
        let Some(source) = c.source() else {
            return;
        };
        let resolver = &self.indexer.resolver;
        if !resolver.is_watchable(&source) {
            return;
        }
        let resolved = ResolvedPath {
            host_path: resolver.host_path(&source),
            watchable: true,
            source,
        };
        match w.watcher.track(&resolved) {
            Ok(()) => {
                w.tracked.insert(id.to_string());
            }
            Err(e) => tracing::warn!(id, error = %e, "cannot track file"),
        }
    }

    /// Applies the watcher events received so far to the metadata/content
    /// cache (never to the sets) and says how many there were. Every
    /// operation and `transform_context` does this first.
    pub fn poll_watch(&mut self) -> usize {
        self.drain_watch()
    }

    fn drain_watch(&mut self) -> usize {
        let Some(w) = self.watch.as_ref() else {
            return 0;
        };
        let events: Vec<WatchEvent> = w.rx.try_iter().collect();
        let n = events.len();
        for ev in events {
            match ev {
                WatchEvent::Updated { object_id, doc } | WatchEvent::Deleted { object_id, doc } => {
                    if self.objects.contains_key(&object_id) {
                        self.put_object(doc, None, false);
                    }
                }
                WatchEvent::Renamed {
                    from_id,
                    to_id,
                    to_doc,
                } => {
                    if let Some(src) = self.objects.get(&from_id).and_then(Known::source) {
                        let mut gone =
                            crate::model::file_document(&src, crate::model::FilePayload::Deleted);
                        gone.insert(
                            crate::fs::indexer::RENAMED_TO.into(),
                            Value::String(to_id.clone()),
                        );
                        self.put_object(gone, None, false);
                    }
                    if self.objects.contains_key(&to_id) {
                        self.put_object(to_doc, None, false);
                    }
                }
                WatchEvent::Error { message } => {
                    tracing::warn!(session = %self.options.session_id, %message, "watcher")
                }
            }
        }
        n
    }

    // ---- persistence ----

    fn set_system_prompt_doc(&mut self, prompt: &str) {
        if self.system_prompt() == Some(prompt) {
            return;
        }
        let doc = assigned_document(
            &self.system_prompt_id,
            ObjectType::SystemPrompt,
            Some(prompt.to_string()),
            Map::new(),
        );
        let base = self.system_prompt.as_ref().map(|c| c.doc.clone());
        self.pending
            .versions
            .push(&self.system_prompt_id, doc.clone(), base);
        self.system_prompt = Some(Known { doc, tx: None });
        self.dirty_versions.insert(self.system_prompt_id.clone());
    }

    /// Sets or replaces the system prompt (written at the next flush).
    pub fn set_system_prompt(&mut self, prompt: &str) -> Result<()> {
        self.ensure_open()?;
        self.set_system_prompt_doc(prompt);
        Ok(())
    }

    /// Whether writes are queued.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Submits every queued write in one transaction.
    pub async fn flush(&mut self) -> Result<Option<TxReceipt>> {
        drive::submit(self).await
    }

    /// Flushes and stops the watcher. Later operations fail with
    /// `SESSION_CLOSED`; closing twice is fine.
    pub async fn close(&mut self) -> Result<()> {
        if self.closed {
            return Ok(());
        }
        self.drain_watch();
        self.flush().await?;
        if let Some(w) = self.watch.take() {
            w.watcher.close();
        }
        self.closed = true;
        Ok(())
    }

    // ---- assembly ----

    /// Assembles the current state (the cache layout, or [`crate::context::spec_layout`]).
    fn assemble_now(&mut self) -> String {
        if self.options.layout == Layout::Cache {
            return self.assemble_cache();
        }
        // Refresh the escaped active blocks whose version changed.
        for id in self.active_set.iter() {
            let Some(c) = self.objects.get(id) else {
                continue;
            };
            let hash = self.render_key(&c.doc);
            if self.active_json.get(id).is_some_and(|(h, _)| *h == hash) {
                continue;
            }
            let block = spec_layout::escaped_active_block(id, &self.active_text(&c.doc));
            self.active_json.insert(id.clone(), (hash, block));
        }
        if self.active_json.len() > self.active_set.len() * 2 + 16 {
            let active = &self.active_set;
            self.active_json.retain(|id, _| active.contains(id));
        }
        let blocks: Vec<ActiveBlock<'_>> = self
            .active_set
            .iter()
            .filter_map(|id| {
                let c = self.objects.get(id)?;
                Some(ActiveBlock {
                    id,
                    content_hash: c.str("content_hash"),
                    body: std::borrow::Cow::Borrowed(""),
                    escaped: self.active_json.get(id).map(|(_, b)| b.as_str()),
                })
            })
            .map(|mut b| {
                if b.escaped.is_none() {
                    if let Some(c) = self.objects.get(b.id) {
                        b.body = self.active_text(&c.doc);
                    }
                }
                b
            })
            .collect();
        let open: Vec<(usize, Vec<crate::context::chat::ToolCallEntry>)> = self
            .chat
            .open
            .iter()
            .map(|&(r, t, m)| {
                let calls = self.chat.turns[t].messages[m]
                    .tool_calls
                    .iter()
                    .flatten()
                    .filter(|c| c.toolcall_id.is_none())
                    .cloned()
                    .collect();
                (r, calls)
            })
            .collect();
        let missing = crate::context::chat::missing_positions(&self.chat.rendered, &open);
        let input = AssemblyInput {
            system_prompt: self.system_prompt(),
            pool_lines: &self.pool_lines,
            chat: &self.chat.rendered,
            missing: &missing,
            active: &blocks,
        };
        spec_layout::assemble_json(self.options.layout, &self.options.render, &input)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Some(w) = self.watch.take() {
            w.watcher.close();
        }
    }
}
