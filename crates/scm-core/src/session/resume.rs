//! Opening a session: create, or resume (implementation-plan §5 "Session
//! resume"): restore the sets; batch-fetch every indexed object; reconcile
//! sourced objects against their sources; rebuild the caches; re-track
//! watchable files. Reconciliation writes object versions, never set changes:
//! nothing the agent deactivated comes back active.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;
use tokio::task::JoinSet;

use super::cache_feed::Seen;
use super::documents::{ChatDoc, SessionDoc};
use super::paged::{self, PagedDesc};
use super::persist::StoredPages;
use super::reconstruct::version_by_hash;
use super::{Known, Session, SessionOptions, WatchState};
use crate::context::aliases::Aliases;
use crate::context::cache_layout::{CacheState, PASSTHROUGH_ROLES};
use crate::context::chat;
use crate::context::epochs::utf16_len;
use crate::error::{Error, Result};
use crate::fs::indexer::{IndexResult, Indexer, RENAMED_TO};
use crate::fs::resolver::ResolvedPath;
use crate::fs::watcher::{WatchCallback, WatchEvent, Watcher};
use crate::model::{FilesystemSource, ObjectType};
use crate::store::{Document, Store, ID_KEY};

/// Objects fetched per `get_many` round trip.
const FETCH_CHUNK: usize = 1000;
/// Files reconciled concurrently.
const RECONCILE_CONCURRENCY: usize = 16;

fn validate_session_id(id: &str) -> Result<()> {
    if id.trim().is_empty() || id.len() > 512 || id.chars().any(char::is_control) {
        return Err(Error::InvalidArgument(format!(
            "session_id must be 1–512 printable characters, not all blank, got {id:?}"
        )));
    }
    Ok(())
}

/// Reconciles one file object with its source (run as a task).
async fn reconcile_one(
    indexer: Arc<Indexer>,
    resolved: ResolvedPath,
    state: String,
    upgrade_stubs: bool,
) -> Result<Option<IndexResult>> {
    if state == "stub" && !upgrade_stubs {
        let host = resolved.host_path.clone().unwrap_or_default();
        let gone = matches!(
            tokio::fs::metadata(&host).await,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound
        );
        return if gone {
            indexer.index_file_deletion(&resolved).await.map(Some)
        } else {
            Ok(None)
        };
    }
    match indexer.index_resolved(&resolved).await {
        Ok(r) => Ok(Some(r)),
        Err(Error::FileNotFound { .. }) if state != "deleted" => {
            indexer.index_file_deletion(&resolved).await.map(Some)
        }
        Err(Error::FileNotFound { .. }) => Ok(None),
        Err(e) if e.is_transient() || matches!(e, Error::StoreProtocol(_)) => Err(e),
        Err(e) => {
            // Unreadable or no longer a regular file: orphaned, the latest
            // version stays as it is.
            tracing::warn!(path = %resolved.source.path, error = %e, "resume: cannot reconcile");
            Ok(None)
        }
    }
}

impl Session {
    /// Creates `session:<id>` or resumes it. See the module docs.
    pub async fn open(
        store: Arc<dyn Store>,
        indexer: Arc<Indexer>,
        options: SessionOptions,
    ) -> Result<Session> {
        validate_session_id(&options.session_id)?;
        let mut s = Session::empty(store.clone(), indexer, options);
        let ids = vec![
            s.ids.session.clone(),
            s.ids.chat.clone(),
            s.ids.system_prompt.clone(),
            crate::commits::timeline::head_id(&crate::commits::timeline::session_key(
                &s.options.session_id,
            )),
        ];
        let mut docs: HashMap<String, Document> = store
            .get_many(&ids)
            .await?
            .into_iter()
            .filter_map(|d| Some((d.get(ID_KEY)?.as_str()?.to_string(), d)))
            .collect();
        if let Some(head) = docs.remove(&ids[3]) {
            s.commit_tip = crate::commits::timeline::tip_of(head)?;
        }
        if let Some(sp) = docs.remove(&s.ids.system_prompt) {
            s.system_prompt = Some(Known { doc: sp, tx: None });
        }
        // The heads as read: this instance's writes are guarded by them.
        for id in [&s.ids.session, &s.ids.chat] {
            s.writes.heads.insert(id.clone(), docs.get(id).cloned());
        }
        match docs.remove(&s.ids.session) {
            Some(session_head) => {
                let session_desc = PagedDesc::of(&session_head);
                let session_doc = paged::materialise_latest(&*store, session_head).await?;
                let (chat_desc, chat_doc) = match docs.remove(&s.ids.chat) {
                    Some(head) => (
                        PagedDesc::of(&head),
                        Some(paged::materialise_latest(&*store, head).await?),
                    ),
                    None => (None, None),
                };
                s.restore(&session_doc, chat_doc.as_ref(), true).await?;
                s.writes.paged = StoredPages::restored(
                    session_desc.as_ref(),
                    chat_desc.as_ref(),
                    chat_doc.as_ref(),
                );
                s.restore_record_bases().await?;
            }
            None => {
                s.writes.pending.session = true;
                s.writes.pending.chat = true;
            }
        }
        if let Some(p) = s.options.system_prompt.clone() {
            s.set_system_prompt_doc(&p);
        }
        if s.options.watch {
            s.start_watcher()?;
        }
        s.flush().await?;
        s.index_note_folders().await;
        Ok(s)
    }

    /// Indexes the note folders (and watches them with the watcher). The
    /// notes join the store, not this session's sets. Best effort: a
    /// failure (the store went away) is logged and the session opens.
    pub(super) async fn index_note_folders(&mut self) {
        if self.options.note_folders.is_empty() {
            return;
        }
        match crate::memory::folders::index_folders(
            &self.indexer,
            self.watch.as_ref().map(|w| &w.watcher),
            &self.options.note_folders,
        )
        .await
        {
            Ok(report) => tracing::debug!(?report, "note folders indexed"),
            Err(e) => tracing::warn!(error = %e, "note folders not indexed"),
        }
    }

    fn start_watcher(&mut self) -> Result<()> {
        let (tx, rx) = std::sync::mpsc::channel::<WatchEvent>();
        let callback: WatchCallback = Arc::new(move |ev| {
            // The session may be gone; events for it are then moot.
            let _ = tx.send(ev);
        });
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|e| Error::Watcher(format!("watching needs a tokio runtime: {e}")))?;
        let watcher = Watcher::with_options(
            self.indexer.clone(),
            runtime,
            callback,
            crate::fs::watcher::DEFAULT_DEBOUNCE,
            self.options.watch_poll,
        )?;
        self.watch = Some(WatchState {
            watcher,
            rx,
            tracked: Default::default(),
            read_at: Default::default(),
        });
        let ids: Vec<String> = self.sets.index.to_vec();
        for id in ids {
            self.track(&id);
        }
        Ok(())
    }

    pub(super) async fn restore(
        &mut self,
        session_doc: &Document,
        chat_doc: Option<&Document>,
        reconcile: bool,
    ) -> Result<()> {
        use super::OrderedSet;
        let parsed = SessionDoc::parse(session_doc)?;
        self.sets.index = OrderedSet::from_ids(parsed.session_index);
        self.sets.pool = OrderedSet::from_ids(parsed.metadata_pool);
        self.sets.active = OrderedSet::from_ids(parsed.active_set);
        self.sets.pinned = OrderedSet::from_ids(parsed.pinned_set);
        self.uses = parsed.recent_use.unwrap_or_default();

        // Batch-fetch every indexed object.
        let all = self.sets.index.to_vec();
        for chunk in all.chunks(FETCH_CHUNK) {
            for doc in self.store.get_many(chunk).await? {
                if let Some(id) = doc.get(ID_KEY).and_then(Value::as_str).map(str::to_string) {
                    self.objects.insert(id, Known { doc, tx: None });
                }
            }
        }

        if let Some(chat_doc) = chat_doc {
            let mut chat = ChatDoc::parse(chat_doc).map_err(|e| {
                Error::StoreProtocol(format!("chat {}: bad turns: {e}", self.ids.chat))
            })?;
            let (aliases, layout) = (chat.aliases.take(), chat.layout.take());
            self.restore_chat(chat);
            self.cache_restore(aliases, layout);
            self.cache_restore_frozen().await?;
            self.cache_restore_seen().await?;
        }
        if reconcile {
            self.reconcile().await?;
        }

        // Rebuild the pool lines and what changed since the last record.
        self.spec_view.pool_lines = self
            .sets
            .pool
            .iter()
            .map(|id| self.render_pool_line(id))
            .collect();
        let mut dirty: Vec<String> = self
            .sets
            .pool
            .iter()
            .filter(|id| {
                self.objects.get(*id).map(|c| c.object_hash())
                    != self.records.recorded.get(*id).map(String::as_str)
            })
            .cloned()
            .collect();
        if let Some(sp) = &self.system_prompt {
            if self
                .records
                .recorded
                .get(&self.ids.system_prompt)
                .map(String::as_str)
                != Some(sp.object_hash())
            {
                dirty.push(self.ids.system_prompt.clone());
            }
        }
        for id in dirty {
            self.records.dirty_versions.insert(id);
        }
        self.restore_last_view();
        Ok(())
    }

    /// Records stored without their transaction — the process that wrote
    /// them saw the flush receipt after its last write (a close, a crash) —
    /// get it from the chat's history: the first version holding each. Left
    /// unknown, the next write would stamp them with its own, a later state
    /// (a fork at such a call started from the call before it, and ingested
    /// that call's results again).
    async fn restore_record_bases(&mut self) -> Result<()> {
        if self
            .records
            .model_calls
            .iter()
            .all(|r| r.basis_tx.is_some())
        {
            return Ok(());
        }
        let history = self.store.history(&self.ids.chat).await?;
        for (i, r) in self.records.model_calls.iter_mut().enumerate() {
            if r.basis_tx.is_none() {
                r.basis_tx = super::reconstruct::first_version_with_call(&history, i);
                if r.basis_tx.is_some() {
                    self.writes.paged.mark_record(i);
                }
            }
        }
        Ok(())
    }

    fn restore_chat(&mut self, parsed: ChatDoc) {
        let cursor = parsed.cursor();
        let turns = parsed.turns;
        self.records.model_calls = parsed.model_calls.unwrap_or_default();
        for r in &self.records.model_calls {
            for v in &r.versions {
                self.records
                    .recorded
                    .insert(v.id.clone(), v.object_hash.clone());
            }
        }
        self.chat.toolcall_refs = parsed.toolcall_refs;
        self.cursor.consumed = cursor.consumed;
        self.cursor.last_fp = cursor.last_fp;
        self.cursor.first_head = cursor.first_head;

        // Rebuild the rendered chat and the call bookkeeping.
        let objects = &self.objects;
        let (rendered, open) = chat::render_turns(&turns, |c| match &c.toolcall_id {
            Some(id) => objects
                .get(id)
                .and_then(|o| o.doc.get("args").cloned())
                .unwrap_or_else(|| Value::Object(Default::default())),
            None => c
                .arguments
                .clone()
                .unwrap_or_else(|| Value::Object(Default::default())),
        });
        let chat_state = &mut self.chat;
        chat_state.rendered = rendered.messages;
        chat_state.open = open;
        let seen = &mut self.cursor.seen;
        for (t, turn) in turns.iter().enumerate() {
            if let Some(u) = &turn.user {
                *seen.entry(u.fp.clone()).or_default() += 1;
            }
            for (m, e) in turn.messages.iter().enumerate() {
                *seen.entry(e.fp.clone()).or_default() += 1;
                for (k, c) in e.tool_calls.iter().flatten().enumerate() {
                    if c.toolcall_id.is_none() {
                        chat_state
                            .pending_calls
                            .entry(c.call_id.clone())
                            .or_default()
                            .push_back((t, m, k));
                    }
                }
                if let (Some(call), Some(id)) = (&e.call_id, &e.toolcall_id) {
                    *chat_state.call_counts.entry(call.clone()).or_default() += 1;
                    chat_state
                        .by_call_id
                        .entry(call.clone())
                        .or_default()
                        .push(id.clone());
                }
            }
        }
        chat_state.turns = turns;
        chat_state.reindex();
    }

    /// Checks every sourced object against its source: changed → new
    /// version, confirmed deleted → deletion version, stubs read (or, with
    /// `resume_upgrades_stubs` off, only checked for existence).
    async fn reconcile(&mut self) -> Result<()> {
        let upgrade = self.options.resume_upgrades_stubs;
        let mut work: Vec<(ResolvedPath, String)> = Vec::new();
        for id in self.sets.index.iter() {
            let Some(c) = self.objects.get(id) else {
                continue;
            };
            if c.object_type() != Some(ObjectType::File) {
                continue;
            }
            let Some(resolved) = self.resolved_of(id) else {
                continue;
            };
            if resolved.host_path.is_none() {
                continue; // unreachable from here: orphaned, not deleted
            }
            work.push((resolved, c.str("state").unwrap_or("present").to_string()));
        }
        let mut set: JoinSet<Result<Option<IndexResult>>> = JoinSet::new();
        let mut results = Vec::new();
        let mut it = work.into_iter();
        loop {
            while set.len() < RECONCILE_CONCURRENCY {
                let Some((resolved, state)) = it.next() else {
                    break;
                };
                set.spawn(reconcile_one(
                    self.indexer.clone(),
                    resolved,
                    state,
                    upgrade,
                ));
            }
            let Some(joined) = set.join_next().await else {
                break;
            };
            let r = joined.map_err(|e| Error::Internal(format!("reconcile task: {e}")))??;
            results.extend(r);
        }
        // Pool lines are rebuilt afterwards: update the cache directly.
        for r in results {
            let tx = r.receipt.map(|x| x.tx_id);
            self.forget_file_line(&r.object_id);
            // A file the model saw changed while no session ran: told at
            // the next call (change notices).
            self.cache.seen.new_version(&r.object_id);
            self.objects.insert(r.object_id, Known { doc: r.doc, tx });
        }
        Ok(())
    }
}

/// The cache layout on resume: its aliases and state from the chat
/// document, the versions its activations showed and the files the model saw.
impl Session {
    /// Restores the aliases and layout state from the chat document and
    /// derives the rest from the turns. A chat written before aliases
    /// existed gets them assigned again in order.
    pub(super) fn cache_restore(&mut self, aliases: Option<Aliases>, state: Option<CacheState>) {
        self.cache.file_lines.clear();
        let calls_in_turns: usize = self
            .chat
            .turns
            .iter()
            .flat_map(|t| &t.messages)
            .filter(|e| e.role == "assistant" && e.skipped.is_none())
            .map(|e| e.tool_calls.as_ref().map_or(0, Vec::len))
            .sum();
        match (aliases, state) {
            (Some(a), Some(s))
                if a.t.len() == calls_in_turns
                    && s.calls.len() == calls_in_turns
                    && s.files.len() == a.f.len() =>
            {
                self.cache.aliases = a;
                self.cache.state = s;
                let turns = self.chat.turns.clone();
                self.cache.rebuild(&turns);
            }
            _ => self.cache_replay_turns(),
        }
    }

    /// Assigns aliases and sizes by walking the turns (no layout decisions).
    fn cache_replay_turns(&mut self) {
        // What the model saw is not the aliases' to forget.
        let seen = std::mem::take(&mut self.cache.seen);
        self.cache = Default::default();
        self.cache.seen = seen;
        let turns = self.chat.turns.clone();
        for (t, turn) in turns.iter().enumerate() {
            if turn.user.is_some() {
                self.cache_user(t);
            }
            for (m, e) in turn.messages.iter().enumerate() {
                match e.role.as_str() {
                    "assistant" if e.skipped.is_none() => {
                        let calls: Vec<(String, Value)> = e
                            .tool_calls
                            .iter()
                            .flatten()
                            .map(|c| {
                                let args = match &c.toolcall_id {
                                    Some(id) => self
                                        .objects
                                        .get(id)
                                        .and_then(|o| o.doc.get("args").cloned()),
                                    None => c.arguments.clone(),
                                };
                                (c.name.clone(), args.unwrap_or(Value::Null))
                            })
                            .collect();
                        self.cache_assistant_calls(t, m, &calls);
                    }
                    "toolResult" if e.unmatched.is_none() => {
                        let Some(id) = e.toolcall_id.clone() else {
                            continue;
                        };
                        // The matching call: the oldest of that harness id without a result.
                        let call = self
                            .cache
                            .items
                            .list
                            .iter()
                            .filter(|it| {
                                it.kind == crate::context::cache_layout::ItemKind::Assistant
                            })
                            .find_map(|it| {
                                let a = &turns[it.turn as usize].messages[it.msg as usize];
                                a.tool_calls
                                    .iter()
                                    .flatten()
                                    .position(|c| c.toolcall_id.as_deref() == Some(id.as_str()))
                                    .map(|k| it.call + k as u32)
                            });
                        let Some(call) = call else { continue };
                        let Some(doc) = self.objects.get(&id).map(|c| c.doc.clone()) else {
                            continue;
                        };
                        let content = doc
                            .get("content")
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        let is_error = doc.get("status").and_then(Value::as_str) == Some("fail");
                        let args = doc.get("args").cloned().unwrap_or(Value::Null);
                        self.cache.bind_result(
                            call,
                            &id,
                            utf16_len(content),
                            is_error,
                            &args,
                            Vec::new(),
                            None,
                            None,
                        );
                        self.cache.items.push_result(t, m, call);
                    }
                    r if e.raw.is_some() && PASSTHROUGH_ROLES.contains(&r) => {
                        self.cache.items.push_passthrough(t, m)
                    }
                    _ => {}
                }
            }
        }
        let files: Vec<String> = self.sets.index.iter().cloned().collect();
        for id in files {
            self.cache_file_entered(&id);
        }
        self.cache.state.files_listed = self.cache.state.files.len() as u32;
        // Derived again: whatever the store holds may differ.
        self.cache.changed.all = true;
    }

    /// Fetches the versions activations showed, and those the operations
    /// since the last call ran on (resume; not the fast path).
    pub(super) async fn cache_restore_frozen(&mut self) -> Result<()> {
        let state = &self.cache.state;
        let shown = state
            .calls
            .iter()
            .flat_map(|c| &c.shows)
            .filter(|s| !s.note);
        let ran_on = state
            .op_shows
            .iter()
            .flat_map(|(id, hs)| hs.iter().map(move |h| (id, h)));
        let wanted: Vec<(String, String)> = shown
            .map(|s| (s.id.clone(), s.object_hash.clone()))
            .chain(ran_on.map(|(id, h)| (id.clone(), h.clone())))
            .collect();
        for key in wanted {
            if self.cache.frozen.contains_key(&key) {
                continue;
            }
            if let Some(doc) = version_by_hash(&*self.store, &key.0, &key.1, None).await? {
                self.cache.frozen.insert(key, doc);
            }
        }
        Ok(())
    }

    /// The content of `id` when the session knows it at version `hash`.
    fn known_as(&self, id: &str, hash: &str) -> Option<Option<String>> {
        let c = self.objects.get(id).filter(|c| c.object_hash() == hash)?;
        Some(c.str("content").map(str::to_string))
    }

    /// Rebuilds what the model last saw of each file (resume): the content
    /// of each seen version, from the objects the session knows when it is still the
    /// latest, else from the object's history. Before reconciliation, so a
    /// file changed while no session ran is noticed at the next call; so is
    /// one whose newer version is already stored.
    pub(super) async fn cache_restore_seen(&mut self) -> Result<()> {
        let seen: Vec<(String, String)> = self
            .cache
            .state
            .seen
            .iter()
            .map(|(id, h)| (id.clone(), h.clone()))
            .collect();
        for (id, hash) in seen {
            // A version the store got before the last session closed (its
            // watcher indexed a change or deletion after that session's last
            // call) was never told: it is not new to reconciliation either
            // (random seed 21 with deletions).
            let newer = self
                .objects
                .get(&id)
                .is_some_and(|c| c.object_hash() != hash);
            let content = match self.objects.get(&id).filter(|_| !newer) {
                Some(c) => c.str("content").map(str::to_string),
                None => version_by_hash(&*self.store, &id, &hash, None)
                    .await?
                    .and_then(|d| d.get("content").and_then(Value::as_str).map(str::to_string)),
            };
            self.cache.seen.restore(
                id.clone(),
                Seen {
                    object_hash: hash,
                    content,
                },
            );
            if newer {
                self.cache.seen.new_version(&id);
                // Moved away before the restart: where it went is in the
                // deleted version (the watcher's pairing, kept in memory
                // only until the call that tells it).
                let to_id = (self.objects.get(&id))
                    .and_then(|c| c.str(RENAMED_TO))
                    .map(str::to_string);
                if let Some(to_id) = to_id {
                    let known = (self.objects.get(&to_id)).map(|c| c.doc.get("source").cloned());
                    let to = match known {
                        Some(source) => source,
                        None => {
                            (self.store.get(&to_id).await?).and_then(|d| d.get("source").cloned())
                        }
                    };
                    if let Some(to) = to.as_ref().and_then(FilesystemSource::from_json) {
                        let to = self.resolver().display_path(&to);
                        self.cache.seen.moved(&id, to);
                    }
                }
            }
        }
        // The whole reads since the last call, their results still to come.
        let reads: Vec<(String, String)> = (self.cache.state.read_shows.iter())
            .flat_map(|(id, hs)| hs.iter().map(move |h| (id.clone(), h.clone())))
            .collect();
        for (id, hash) in reads {
            let read = seen_version(self.known_as(&id, &hash), &*self.store, &id, hash).await?;
            self.cache.seen.read_indexed(&id, read);
        }
        // The model's edits since the last call, their results still to come.
        let edits: Vec<(String, (String, String))> = (self.cache.state.edit_shows.iter())
            .flat_map(|(id, hs)| hs.iter().map(move |h| (id.clone(), h.clone())))
            .collect();
        for (id, (base, after)) in edits {
            let base = seen_version(self.known_as(&id, &base), &*self.store, &id, base).await?;
            let after = seen_version(self.known_as(&id, &after), &*self.store, &id, after).await?;
            self.cache.seen.edit_indexed(&id, base, after);
        }
        Ok(())
    }
}

/// Version `hash` of a file as the model saw it: `known`, the content of the
/// object the session knows when it is that version, else from its history.
async fn seen_version(
    known: Option<Option<String>>,
    store: &dyn crate::store::Store,
    id: &str,
    hash: String,
) -> Result<Seen> {
    let content = match known {
        Some(content) => content,
        None => version_by_hash(store, id, &hash, None)
            .await?
            .and_then(|d| d.get("content").and_then(Value::as_str).map(str::to_string)),
    };
    Ok(Seen {
        object_hash: hash,
        content,
    })
}
