//! Session engine: sets, auto-collapse policy, persistence, resume.
//!
//! One [`Session`] per agent session; many may share one `Arc<dyn Store>`.
//! Agent operations mutate in-memory state synchronously and queue store
//! writes; [`Session::flush`] submits everything queued in **one**
//! transaction. `transform_context` and every async agent operation end with
//! a flush, so the session document is written at most once per call.
//!
//! A host that shares the session between concurrent calls holds a
//! [`handle::SessionHandle`]: the same async operations (`drive.rs`, written
//! once for both), its lock held only for synchronous steps, a write gate,
//! write-behind.
//!
//! `Session` is made of named parts (`parts.rs`): its documents' ids, the
//! spec's four sets (SSOT §3.1: content objects only — `session_index`
//! append-only, `metadata_pool`, `active_set`, `pinned_set`, all
//! insertion-ordered), the objects it knows, the chat, the model calls'
//! records, the writes, the spec layout's view, the cache layout, what the
//! host was handed, the watcher.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::context::ingest::Cursor;
use crate::context::spec_layout::{self, ActiveBlock, AssemblyInput};
use crate::context::static_refs::{ModelCallRecord, ShownRef};
use crate::error::{Error, Result};
use crate::fs::indexer::Indexer;
use crate::fs::resolver::{ResolvedPath, Resolver};
use crate::fs::watcher::WatchEvent;
use crate::model::{assigned_document, FilesystemSource, ObjectType};
use crate::store::{AsOf, Document, Store, Version, ID_KEY};

pub use crate::context::cache_layout::CacheStats;
pub use crate::context::epochs::CachePolicy;
pub use crate::context::output::OutputDelta;
pub use crate::context::words::{SetOp, SetOutcome};
pub use crate::context::{Layout, RenderOptions};
pub use policy::{CollapsePolicy, UseWindow};
pub use sets::OrderedSet;

mod cache_feed;
mod checkpoint;
pub mod discovery;
pub mod documents;
mod drive;
mod fork;
pub mod handle;
mod handover;
pub mod inspect;
pub mod links;
mod named_files;
mod ops;
mod outage;
pub mod paged;
mod parts;
mod recall;
mod transcript;
use parts::{ChatState, Known, Queued, WatchState};
mod persist;
pub mod policy;
mod reconstruct;
mod ref_as_text;
mod resume;
pub mod rewind;
pub mod sets;
#[cfg(test)]
mod watch_tests;

pub use checkpoint::CheckpointRequest;
pub use ops::{agent_target, DiscoveryPlan, FileOp};
pub use persist::PendingWrite;
pub use reconstruct::ReconstructPlan;
pub use ref_as_text::RefAsText;

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
    /// When the watcher polls directories (network filesystems by default;
    /// `crate::fs::watch_backend`). This process's, not the session's:
    /// never stored.
    #[serde(skip)]
    pub watch_poll: crate::fs::watcher::PollOptions,
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
            watch_poll: Default::default(),
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

/// One agent session. See the module docs.
pub struct Session {
    store: Arc<dyn Store>,
    indexer: Arc<Indexer>,
    options: SessionOptions,
    ids: parts::DocIds,
    system_prompt: Option<Known>,
    sets: parts::Sets,
    /// Every object the session has met, at the version it knows.
    objects: HashMap<String, Known>,
    spec_view: parts::SpecView,
    chat: ChatState,
    cursor: Cursor,
    uses: UseWindow,
    records: parts::Records,
    writes: parts::Writes,
    watch: Option<WatchState>,
    closed: bool,
    /// Opened by [`Session::open_read_only`]: never writes to the store.
    read_only: bool,
    /// Another instance wrote the session since this one read it
    /// (`SESSION_SUPERSEDED`): this one writes nothing more, and every
    /// operation but `close` fails with that error.
    superseded: bool,
    /// Aliases (both layouts) and the cache layout: its state, the version
    /// of each file the model last saw, its `FILES +k` lines.
    cache: crate::context::cache_layout::CacheLayout,
    handover: parts::Handover,
    /// The context-commit chain's tip and the chat position after it
    /// (see [`checkpoint`]).
    commit_tip: Option<(String, u64)>,
    /// What the version pins of shown notes' links resolved to (link lines).
    pins: crate::memory::links::PinStates,
    /// Files transcripts name that no tool of the session indexed.
    named: named_files::NamedFiles,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("session_id", &self.options.session_id)
            .field("session_index", &self.sets.index.len())
            .field("active_set", &self.sets.active.len())
            .finish_non_exhaustive()
    }
}

impl Session {
    fn empty(store: Arc<dyn Store>, indexer: Arc<Indexer>, options: SessionOptions) -> Self {
        Self {
            store,
            indexer,
            ids: parts::DocIds::of(&options.session_id),
            options,
            system_prompt: None,
            sets: Default::default(),
            objects: HashMap::new(),
            spec_view: Default::default(),
            chat: ChatState::default(),
            cursor: Cursor::default(),
            uses: UseWindow::default(),
            records: Default::default(),
            writes: Default::default(),
            watch: None,
            closed: false,
            read_only: false,
            superseded: false,
            cache: Default::default(),
            handover: Default::default(),
            commit_tip: None,
            pins: Default::default(),
            named: Default::default(),
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

    /// The watcher's directories and how many of them are polled (a
    /// network filesystem, see `fs/watch_backend.rs`); `None` when the
    /// session does not watch.
    pub fn watched_dirs(&self) -> Option<(usize, usize)> {
        let w = &self.watch.as_ref()?.watcher;
        Some((w.watched_dir_count(), w.polled_dirs().len()))
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
        } else if self.superseded {
            Err(Error::SessionSuperseded(self.options.session_id.clone()))
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
            .sets
            .pool
            .iter()
            .map(|id| self.pool_entry(id, resolver))
            .collect();
        SessionSnapshot {
            session_index: self.sets.index.to_vec(),
            metadata_pool,
            active_set: self.sets.active.to_vec(),
            pinned_set: self.sets.pinned.to_vec(),
        }
    }

    /// The session's records of what each model call showed (expanded).
    pub fn model_call_count(&self) -> usize {
        self.records.model_calls.len()
    }

    /// The exact versions call `call_index` showed: the system prompt, every
    /// pool object and therefore every active one.
    pub fn shown(&self, call_index: usize) -> Option<Vec<ShownRef>> {
        let record = self.records.model_calls.get(call_index)?;
        let mut latest: HashMap<&str, ShownRef> = HashMap::new();
        for r in &self.records.model_calls[..=call_index] {
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
        if let Some(sp) = latest.remove(self.ids.system_prompt.as_str()) {
            out.push(sp);
        }
        for id in &self.sets.pool.as_slice()[..record.pool_len] {
            if let Some(r) = latest.remove(id.as_str()) {
                out.push(r);
            }
        }
        Some(out)
    }

    /// The raw model call record.
    pub fn model_call(&self, call_index: usize) -> Option<&ModelCallRecord> {
        self.records.model_calls.get(call_index)
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
        if let (Some(w), Some(t)) = (self.watch.as_mut(), plan.read_at) {
            w.read_at.insert(plan.object_id.clone(), t);
        }
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
                    self.writes.pending.versions.push(&id, doc.clone(), base)
                }
                _ => self.writes.pending.versions.refresh(&id, &doc),
            }
            if let Some(c) = self.objects.get_mut(&id) {
                c.tx = c.tx.or(tx);
                c.doc = doc;
            }
            return;
        }
        if let Some(base) = queue {
            self.writes.pending.versions.push(&id, doc.clone(), base);
        }
        self.objects.insert(id.clone(), Known { doc, tx });
        self.forget_file_line(&id);
        self.cache.seen.new_version(&id);
        if let Some(pos) = self.sets.pool.position(&id) {
            self.spec_view.pool_lines[pos] = self.render_pool_line(&id);
            self.records.dirty_versions.insert(id);
        }
    }

    fn pool_insert(&mut self, id: &str) {
        if !self.sets.pool.insert(id) {
            return;
        }
        let line = self.render_pool_line(id);
        self.spec_view.pool_lines.push(line);
        self.records.dirty_versions.insert(id);
        self.writes.pending.session = true;
    }

    /// Adds a content object to the session index, the pool and (optionally)
    /// the active set.
    fn enter(&mut self, id: &str, pool: bool, active: bool) {
        if self.sets.index.insert(id) {
            self.writes.pending.session = true;
        }
        if pool || active {
            self.pool_insert(id);
        }
        if active && self.sets.active.insert(id) {
            self.writes.pending.session = true;
        }
        self.cache_file_entered(id);
    }

    fn current_turn(&self) -> usize {
        self.chat.turns.len().saturating_sub(1)
    }

    fn record_use(&mut self, id: &str) {
        let turn = self.current_turn();
        self.uses.record(turn, id, self.options.policy.turns_back);
        self.writes.pending.session = true;
    }

    // ---- watcher ----

    fn track(&mut self, id: &str) {
        if self.watch.as_ref().is_none_or(|w| w.tracked.contains(id)) {
            return;
        }
        let Some(resolved) = self.watchable_path(id) else {
            return;
        };
        let Some(w) = self.watch.as_mut() else {
            return;
        };
        match w.watcher.track(&resolved) {
            Ok(()) => {
                w.tracked.insert(id.to_string());
            }
            Err(e) => tracing::warn!(id, error = %e, "cannot track file"),
        }
    }

    /// The agent's `write` of `id` (perhaps making the file): the watcher
    /// looks at it once more after its debounce window (see
    /// [`crate::fs::Watcher::look_again`]).
    fn look_again(&self, id: &str) {
        if let (Some(w), Some(resolved)) = (self.watch.as_ref(), self.watchable_path(id)) {
            w.watcher.look_again(&resolved);
        }
    }

    /// Where the watcher follows file object `id` (None: not a read file,
    /// or not on a watchable path).
    fn watchable_path(&self, id: &str) -> Option<ResolvedPath> {
        let c = self.objects.get(id)?;
        if c.object_type() != Some(ObjectType::File) || c.is_stub() {
            return None;
        }
        let source = c.source()?;
        let resolver = &self.indexer.resolver;
        resolver.is_watchable(&source).then(|| ResolvedPath {
            host_path: resolver.host_path(&source),
            watchable: true,
            source,
        })
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
                WatchEvent::Updated {
                    object_id,
                    doc,
                    read_at,
                }
                | WatchEvent::Deleted {
                    object_id,
                    doc,
                    read_at,
                } => {
                    // Read before the session's own read of the file: older
                    // than what it holds (see `WatchEvent`).
                    let stale = self
                        .watch
                        .as_ref()
                        .and_then(|w| w.read_at.get(&object_id))
                        .is_some_and(|&own| read_at < own);
                    if !stale && self.objects.contains_key(&object_id) {
                        self.put_object(doc, None, false);
                    }
                }
                WatchEvent::Renamed {
                    from_id,
                    to_id,
                    to_doc,
                } => {
                    if let Some(src) = self.objects.get(&from_id).and_then(Known::source) {
                        // Where it went, for the notice (the session may
                        // not know the new path's object).
                        if let Some(to) = to_doc.get("source").and_then(FilesystemSource::from_json)
                        {
                            let to = self.resolver().display_path(&to);
                            self.cache.seen.moved(&from_id, to);
                        }
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
            &self.ids.system_prompt,
            ObjectType::SystemPrompt,
            Some(prompt.to_string()),
            Map::new(),
        );
        let base = self.system_prompt.as_ref().map(|c| c.doc.clone());
        self.writes
            .pending
            .versions
            .push(&self.ids.system_prompt, doc.clone(), base);
        self.system_prompt = Some(Known { doc, tx: None });
        self.records
            .dirty_versions
            .insert(self.ids.system_prompt.clone());
    }

    /// Sets or replaces the system prompt (written at the next flush).
    pub fn set_system_prompt(&mut self, prompt: &str) -> Result<()> {
        self.ensure_open()?;
        self.set_system_prompt_doc(prompt);
        Ok(())
    }

    /// Whether writes are queued.
    pub fn has_pending(&self) -> bool {
        !self.writes.pending.is_empty()
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
        for id in self.sets.active.iter() {
            let Some(c) = self.objects.get(id) else {
                continue;
            };
            let hash = self.render_key(&c.doc);
            if self
                .spec_view
                .active_json
                .get(id)
                .is_some_and(|(h, _)| *h == hash)
            {
                continue;
            }
            let block = spec_layout::escaped_active_block(id, &self.active_text(&c.doc));
            self.spec_view.active_json.insert(id.clone(), (hash, block));
        }
        if self.spec_view.active_json.len() > self.sets.active.len() * 2 + 16 {
            let active = &self.sets.active;
            self.spec_view
                .active_json
                .retain(|id, _| active.contains(id));
        }
        let blocks: Vec<ActiveBlock<'_>> = self
            .sets
            .active
            .iter()
            .filter_map(|id| {
                let c = self.objects.get(id)?;
                Some(ActiveBlock {
                    id,
                    content_hash: c.str("content_hash"),
                    body: std::borrow::Cow::Borrowed(""),
                    escaped: self.spec_view.active_json.get(id).map(|(_, b)| b.as_str()),
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
            pool_lines: &self.spec_view.pool_lines,
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
