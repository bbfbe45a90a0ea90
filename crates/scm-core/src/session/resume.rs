//! Opening a session: create, or resume (implementation-plan §5 "Session
//! resume"): restore the sets; batch-fetch every indexed object; reconcile
//! sourced objects against their sources; rebuild the caches; re-track
//! watchable files. Reconciliation writes object versions, never set changes:
//! nothing the agent deactivated comes back active.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;
use tokio::task::JoinSet;

use super::paged::{self, PagedDesc};
use super::persist::Books;
use super::{Cached, Session, SessionOptions, UseWindow, WatchState};
use crate::context::chat::{self, Turn};
use crate::context::static_refs::ModelCallRecord;
use crate::error::{Error, Result};
use crate::fs::indexer::{IndexResult, Indexer};
use crate::fs::resolver::ResolvedPath;
use crate::fs::watcher::{WatchCallback, WatchEvent, Watcher};
use crate::model::ObjectType;
use crate::store::{Document, Store, ID_KEY};

/// Objects fetched per `get_many` round trip.
const FETCH_CHUNK: usize = 1000;
/// Files reconciled concurrently.
const RECONCILE_CONCURRENCY: usize = 16;

/// The string ids in a document's array field (empty when absent).
pub(super) fn ids_of(doc: &Document, key: &str) -> Vec<String> {
    doc.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

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
            s.session_doc_id.clone(),
            s.chat_id.clone(),
            s.system_prompt_id.clone(),
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
        if let Some(sp) = docs.remove(&s.system_prompt_id) {
            s.system_prompt = Some(Cached { doc: sp, tx: None });
        }
        match docs.remove(&s.session_doc_id) {
            Some(session_head) => {
                let session_desc = PagedDesc::of(&session_head);
                let session_doc = paged::materialise_latest(&*store, session_head).await?;
                let (chat_desc, chat_doc) = match docs.remove(&s.chat_id) {
                    Some(head) => (
                        PagedDesc::of(&head),
                        Some(paged::materialise_latest(&*store, head).await?),
                    ),
                    None => (None, None),
                };
                s.restore(&session_doc, chat_doc.as_ref(), true).await?;
                s.paged =
                    Books::restored(session_desc.as_ref(), chat_desc.as_ref(), chat_doc.as_ref());
            }
            None => {
                s.pending.session = true;
                s.pending.chat = true;
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
        let watcher = Watcher::new(self.indexer.clone(), runtime, callback)?;
        self.watch = Some(WatchState {
            watcher,
            rx,
            tracked: Default::default(),
        });
        let ids: Vec<String> = self.session_index.to_vec();
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
        self.session_index = OrderedSet::from_ids(ids_of(session_doc, "session_index"));
        self.metadata_pool = OrderedSet::from_ids(ids_of(session_doc, "metadata_pool"));
        self.active_set = OrderedSet::from_ids(ids_of(session_doc, "active_set"));
        self.pinned_set = OrderedSet::from_ids(ids_of(session_doc, "pinned_set"));
        self.uses = session_doc
            .get("recent_use")
            .and_then(|v| serde_json::from_value::<UseWindow>(v.clone()).ok())
            .unwrap_or_default();

        // Batch-fetch every indexed object.
        let all = self.session_index.to_vec();
        for chunk in all.chunks(FETCH_CHUNK) {
            for doc in self.store.get_many(chunk).await? {
                if let Some(id) = doc.get(ID_KEY).and_then(Value::as_str).map(str::to_string) {
                    self.objects.insert(id, Cached { doc, tx: None });
                }
            }
        }

        if let Some(chat_doc) = chat_doc {
            self.restore_chat(chat_doc)?;
            self.cache_restore(chat_doc);
            self.cache_restore_frozen().await?;
            self.cache_restore_seen().await?;
        }
        if reconcile {
            self.reconcile().await?;
        }

        // Rebuild the pool lines and what changed since the last record.
        self.pool_lines = self
            .metadata_pool
            .iter()
            .map(|id| self.render_pool_line(id))
            .collect();
        let mut dirty: Vec<String> = self
            .metadata_pool
            .iter()
            .filter(|id| {
                self.objects.get(*id).map(|c| c.object_hash())
                    != self.recorded.get(*id).map(String::as_str)
            })
            .cloned()
            .collect();
        if let Some(sp) = &self.system_prompt {
            if self
                .recorded
                .get(&self.system_prompt_id)
                .map(String::as_str)
                != Some(sp.object_hash())
            {
                dirty.push(self.system_prompt_id.clone());
            }
        }
        for id in dirty {
            self.dirty_versions.insert(id);
        }
        Ok(())
    }

    fn restore_chat(&mut self, doc: &Document) -> Result<()> {
        let turns: Vec<Turn> = match doc.get("turns") {
            Some(v) => serde_json::from_value(v.clone()).map_err(|e| {
                Error::StoreProtocol(format!("chat {}: bad turns: {e}", self.chat_id))
            })?,
            None => Vec::new(),
        };
        self.calls = doc
            .get("model_calls")
            .and_then(|v| serde_json::from_value::<Vec<ModelCallRecord>>(v.clone()).ok())
            .unwrap_or_default();
        for r in &self.calls {
            for v in &r.versions {
                self.recorded.insert(v.id.clone(), v.object_hash.clone());
            }
        }
        self.chat.toolcall_refs = ids_of(doc, "toolcall_refs");
        let cursor = doc.get("cursor");
        self.cursor.consumed = cursor
            .and_then(|c| c.get("consumed"))
            .and_then(Value::as_u64)
            .unwrap_or(0) as usize;
        self.cursor.last_fp = cursor
            .and_then(|c| c.get("last_fp"))
            .and_then(Value::as_str)
            .map(str::to_string);

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
        Ok(())
    }

    /// Checks every sourced object against its source: changed → new
    /// version, confirmed deleted → deletion version, stubs read (or, with
    /// `resume_upgrades_stubs` off, only checked for existence).
    async fn reconcile(&mut self) -> Result<()> {
        let upgrade = self.options.resume_upgrades_stubs;
        let mut work: Vec<(ResolvedPath, String)> = Vec::new();
        for id in self.session_index.iter() {
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
            if self.seen.contains_key(&r.object_id) {
                self.seen_changed.insert(r.object_id.clone());
            }
            self.objects.insert(r.object_id, Cached { doc: r.doc, tx });
        }
        Ok(())
    }
}
