//! Rebuilding a past model call from the store (static references,
//! memory-system-v0 §7.2): the session and chat documents as of the call's
//! basis transaction give the pool order, the active positions and the chat;
//! every shown object is fetched at its recorded transaction and verified by
//! its `object_hash` (and `content_hash`).

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::documents::{ChatDoc, SessionDoc};
use super::{paged, Session};
use crate::context::cache_layout::{Env, Frozen, Items};
use crate::context::chat;
use crate::context::spec_layout::{self, ActiveBlock, AssemblyInput};
use crate::context::static_refs::ModelCallRecord;
use crate::context::{Layout, RenderOptions};
use crate::error::{Error, Result};
use crate::fs::resolver::Resolver;
use crate::store::{AsOf, Document, Store, Version};

/// Everything needed to rebuild call `call_index`, detached from the session
/// (so a binding can run it without holding the session).
#[derive(Debug, Clone)]
pub struct ReconstructPlan {
    pub call_index: usize,
    pub(super) records: Vec<ModelCallRecord>,
    session_id: String,
    session_doc_id: String,
    chat_id: String,
    system_prompt_id: String,
    layout: Layout,
    pub(super) resolver: Arc<Resolver>,
    pub(super) cache: crate::context::epochs::CachePolicy,
}

/// What rebuilding several calls of one session fetches once: toolcall
/// documents (written once, so the latest is every call's) and the frozen
/// versions activations showed (by object hash). Without it each call read
/// and parsed every toolcall document again: 35 ms a call on the recorded
/// session, most of `calls` and `report` (docs/benchmarks.md "Session 41").
#[derive(Default)]
pub struct Fetched {
    docs: HashMap<String, Document>,
    frozen: Frozen,
}

fn mismatch(id: &str, tx: i64, what: &str) -> Error {
    Error::Internal(format!(
        "static reference {id} at tx {tx}: no stored version has the recorded {what}"
    ))
}

/// The version of `id` recorded as (`tx`, `object_hash`): read as of `tx`,
/// verified; if a concurrent writer got in between, the version with the
/// recorded hash from the object's history.
async fn fetch_verified(
    store: &dyn Store,
    id: &str,
    tx: i64,
    object_hash: &str,
    content_hash: Option<&str>,
) -> Result<Document> {
    let ok = |d: &Document| {
        d.get("object_hash").and_then(Value::as_str) == Some(object_hash)
            && d.get("content_hash").and_then(Value::as_str) == content_hash
    };
    if let Some(doc) = store.get_as_of(id, AsOf::TxId(tx)).await? {
        if ok(&doc) {
            return Ok(doc);
        }
    }
    store
        .history(id)
        .await?
        .into_iter()
        .rev()
        .filter_map(|v| v.doc)
        .find(|d| ok(d))
        .ok_or_else(|| mismatch(id, tx, "object_hash"))
}

impl Session {
    /// Detaches what reconstruction of `call_index` needs.
    pub fn reconstruct_plan(&self, call_index: usize) -> Result<ReconstructPlan> {
        if call_index >= self.records.model_calls.len() {
            return Err(Error::InvalidArgument(format!(
                "no model call {call_index}: this session has {}",
                self.records.model_calls.len()
            )));
        }
        Ok(ReconstructPlan {
            call_index,
            records: self.records.model_calls[..=call_index].to_vec(),
            session_id: self.options.session_id.clone(),
            session_doc_id: self.ids.session.clone(),
            chat_id: self.ids.chat.clone(),
            system_prompt_id: self.ids.system_prompt.clone(),
            layout: self.options.layout,
            resolver: self.indexer.resolver.clone(),
            cache: self.options.cache.clone(),
        })
    }

    /// Rebuilds what model call `call_index` received, from the store: the
    /// context it assembled, headed by the session's system prompt of that
    /// call as a `system` message — also when the engine did not emit it
    /// (`emit_system_message: false`: the harness sends its own prompt and
    /// hands it over with [`Session::set_system_prompt`]).
    pub async fn reconstruct_call(&self, call_index: usize) -> Result<Vec<Value>> {
        self.reconstruct_plan(call_index)?.run(&*self.store).await
    }
}

/// The transaction of the first chat version (of `history`, oldest first)
/// that holds model call record `k`: that call's basis when its flush
/// receipt was never seen.
pub(super) fn first_version_with_call(history: &[Version], k: usize) -> Option<i64> {
    history.iter().find_map(|v| {
        let n = paged::part_len(v.doc.as_ref()?, "model_calls")?;
        (n > k).then_some(v.tx_id)
    })
}

impl ReconstructPlan {
    /// The plan of an earlier call `n` of the same session (`n` ≤ this
    /// plan's call).
    pub fn for_call(&self, n: usize) -> ReconstructPlan {
        let n = n.min(self.call_index);
        ReconstructPlan {
            call_index: n,
            records: self.records[..=n].to_vec(),
            ..self.clone()
        }
    }

    /// Basis transaction of every record; records whose flush receipt was not
    /// seen (a session resumed right after a crash) are found in the chat
    /// object's history: the first version that contains them.
    async fn bases(&self, store: &dyn Store) -> Result<Vec<i64>> {
        if self.records.iter().all(|r| r.basis_tx.is_some()) {
            return Ok(self.records.iter().map(|r| r.basis_tx.unwrap()).collect());
        }
        let history = store.history(&self.chat_id).await?;
        self.records
            .iter()
            .map(|r| {
                r.basis_tx
                    .or_else(|| first_version_with_call(&history, r.call_index))
                    .ok_or_else(|| {
                        Error::InvalidArgument(format!(
                            "model call {} has not been written to the store yet",
                            r.call_index
                        ))
                    })
            })
            .collect()
    }

    /// The basis transaction of this plan's call.
    pub async fn basis_tx(&self, store: &dyn Store) -> Result<i64> {
        Ok(self.bases(store).await?[self.call_index])
    }

    /// The context commit this plan's call followed: the session's tip as
    /// of the call's basis transaction (accountability, issue 11 item 5);
    /// None before the session's first commit.
    pub async fn followed_commit(&self, store: &dyn Store) -> Result<Option<String>> {
        let tx = self.basis_tx(store).await?;
        crate::commits::tip_as_of(store, &self.session_id, tx).await
    }

    pub async fn run(self, store: &dyn Store) -> Result<Vec<Value>> {
        self.run_with(store, &mut Fetched::default()).await
    }

    /// [`ReconstructPlan::run`] with what earlier calls fetched.
    pub async fn run_with(self, store: &dyn Store, fetched: &mut Fetched) -> Result<Vec<Value>> {
        let bases = self.bases(store).await?;
        let record = &self.records[self.call_index];
        let basis = bases[self.call_index];
        let as_of = |id: &str| {
            let id = id.to_string();
            async move {
                paged::get_as_of(store, &id, AsOf::TxId(basis))
                    .await?
                    .ok_or_else(|| Error::Internal(format!("{id} did not exist at tx {basis}")))
            }
        };

        // Latest recorded version per object up to this call.
        let mut versions: HashMap<&str, (i64, &str, Option<&str>)> = HashMap::new();
        for (r, b) in self.records.iter().zip(&bases) {
            for v in &r.versions {
                versions.insert(
                    &v.id,
                    (
                        v.tx_id.unwrap_or(*b),
                        &v.object_hash,
                        v.content_hash.as_deref(),
                    ),
                );
            }
        }
        let fetch = |id: &str| {
            let v = versions.get(id).copied();
            let id = id.to_string();
            async move {
                let (tx, h, ch) =
                    v.ok_or_else(|| Error::Internal(format!("no static reference for {id}")))?;
                fetch_verified(store, &id, tx, h, ch).await
            }
        };

        if self.layout == Layout::Cache {
            let chat_doc = as_of(&self.chat_id).await?;
            let system_prompt = match versions.get(self.system_prompt_id.as_str()) {
                Some(_) => Some(fetch(&self.system_prompt_id).await?),
                None => None,
            };
            let shown: HashMap<String, (i64, String)> = versions
                .iter()
                .map(|(id, (tx, h, _))| (id.to_string(), (*tx, h.to_string())))
                .collect();
            let sp = system_prompt
                .as_ref()
                .and_then(|d| d.get("content"))
                .and_then(Value::as_str);
            return reconstruct_cache(&self, store, &chat_doc, sp, &shown, fetched).await;
        }
        let session_doc = as_of(&self.session_doc_id).await?;
        let pool_ids = SessionDoc::parse(&session_doc)?.metadata_pool;
        if pool_ids.len() < record.pool_len {
            return Err(Error::Internal(format!(
                "session at tx {basis} has {} pool objects, call {} showed {}",
                pool_ids.len(),
                record.call_index,
                record.pool_len
            )));
        }
        let mut pool_docs: Vec<Document> = Vec::with_capacity(record.pool_len);
        for id in &pool_ids[..record.pool_len] {
            pool_docs.push(fetch(id).await?);
        }
        let system_prompt = match versions.get(self.system_prompt_id.as_str()) {
            Some(_) => Some(fetch(&self.system_prompt_id).await?),
            None => None,
        };

        let chat_doc = as_of(&self.chat_id).await?;
        let turns = ChatDoc::parse(&chat_doc)?.turns;
        // Toolcall objects are written once: their args are the call's.
        let pool_index: HashMap<&str, usize> = pool_ids[..record.pool_len]
            .iter()
            .enumerate()
            .map(|(i, id)| (id.as_str(), i))
            .collect();
        let needed: Vec<String> = turns
            .iter()
            .flat_map(|t| &t.messages)
            .flat_map(|m| m.tool_calls.iter().flatten())
            .filter_map(|c| c.toolcall_id.clone())
            .filter(|id| !pool_index.contains_key(id.as_str()))
            .collect();
        let mut args_of: HashMap<String, Value> = HashMap::new();
        for chunk in needed.chunks(1000) {
            for d in store.get_many(chunk).await? {
                if let (Some(id), Some(a)) = (d.get("xt/id").and_then(Value::as_str), d.get("args"))
                {
                    args_of.insert(id.to_string(), a.clone());
                }
            }
        }
        for d in &pool_docs {
            if let (Some(id), Some(a)) = (d.get("xt/id").and_then(Value::as_str), d.get("args")) {
                args_of.insert(id.to_string(), a.clone());
            }
        }
        let args = |c: &chat::ToolCallEntry| match &c.toolcall_id {
            Some(id) => args_of
                .get(id)
                .cloned()
                .unwrap_or_else(|| Value::Object(Default::default())),
            None => c
                .arguments
                .clone()
                .unwrap_or_else(|| Value::Object(Default::default())),
        };
        let (mut rendered, _) = chat::render_turns(&turns, args);
        // Later calls' messages in the same transaction: the chat as it was.
        if rendered.messages.len() > record.chat_messages {
            if let Some(earlier) = chat::turns_as_shown(&turns, record.chat_messages, args) {
                rendered = chat::render_turns(&earlier, args).0;
            }
        }
        if rendered.messages.len() != record.chat_messages {
            return Err(Error::Internal(format!(
                "chat at tx {basis} renders {} messages, call {} showed {}",
                rendered.messages.len(),
                record.call_index,
                record.chat_messages
            )));
        }

        let display = |s: &crate::model::FilesystemSource| self.resolver.display_path(s);
        let pool_lines: Vec<String> = pool_docs
            .iter()
            .map(|d| spec_layout::escape(&spec_layout::pool_line(d, &display)))
            .collect();
        let mut blocks = Vec::with_capacity(record.active.len());
        // A note's link lines, from the pool as shown (its targets are pool
        // objects), as the live session rendered them (`session::links`).
        let by_id: std::collections::HashMap<&str, &Document> = pool_ids
            .iter()
            .map(String::as_str)
            .zip(pool_docs.iter())
            .collect();
        // Pins resolve to immutable versions: resolving them again gives
        // what the live session showed.
        let pins_needed: Vec<(String, String)> = record
            .active
            .iter()
            .filter_map(|&pos| pool_docs.get(pos))
            .flat_map(|d| crate::memory::links::pins_to_resolve(d, &|_| false))
            .collect();
        let pins = crate::memory::links::resolve_pins(store, &pins_needed).await?;
        for &pos in &record.active {
            let d = pool_docs.get(pos).ok_or_else(|| {
                Error::Internal(format!("active position {pos} outside the shown pool"))
            })?;
            let mut body = spec_layout::active_body(d, &display);
            if let Some(lines) =
                crate::memory::links::link_lines(d, &|t| by_id.get(t).copied(), &pins, &display)
            {
                body = std::borrow::Cow::Owned(format!("{body}\n\n{lines}"));
            }
            blocks.push(ActiveBlock {
                id: &pool_ids[pos],
                content_hash: d.get("content_hash").and_then(Value::as_str),
                body,
                escaped: None,
            });
        }
        let input = AssemblyInput {
            system_prompt: system_prompt
                .as_ref()
                .and_then(|d| d.get("content"))
                .and_then(Value::as_str),
            pool_lines: &pool_lines,
            chat: &rendered.messages,
            missing: &rendered.missing,
            active: &blocks,
        };
        // The system prompt heads what the model received, emitted or not.
        let render = RenderOptions {
            emit_system_message: true,
        };
        Ok(spec_layout::assemble(self.layout, &render, &input))
    }
}

/// The version of `id` whose `object_hash` is `hash`: as of `tx` if given
/// and matching, else from its history.
pub(super) async fn version_by_hash(
    store: &dyn Store,
    id: &str,
    hash: &str,
    tx: Option<i64>,
) -> Result<Option<Document>> {
    let ok = |d: &Document| d.get("object_hash").and_then(Value::as_str) == Some(hash);
    if let Some(tx) = tx {
        if let Some(d) = store.get_as_of(id, AsOf::TxId(tx)).await? {
            if ok(&d) {
                return Ok(Some(d));
            }
        }
    }
    Ok(store
        .history(id)
        .await?
        .into_iter()
        .rev()
        .filter_map(|v| v.doc)
        .find(|d| ok(d)))
}

/// Rebuilds a cache-layout call from the chat document as of its basis
/// transaction and the shown versions (see [`ReconstructPlan`]).
async fn reconstruct_cache(
    plan: &ReconstructPlan,
    store: &dyn Store,
    chat_doc: &Document,
    system_prompt: Option<&str>,
    versions: &HashMap<String, (i64, String)>,
    fetched: &mut Fetched,
) -> Result<Vec<Value>> {
    let record = &plan.records[plan.call_index];
    let epochs = record.epochs.ok_or_else(|| {
        Error::Internal(format!(
            "model call {} was not assembled in the cache layout",
            record.call_index
        ))
    })?;
    let ChatDoc {
        turns,
        aliases,
        layout,
        ..
    } = ChatDoc::parse(chat_doc)?;
    let mut aliases =
        aliases.ok_or_else(|| Error::StoreProtocol("chat aliases: missing or malformed".into()))?;
    aliases.reindex();
    let state = layout
        .ok_or_else(|| Error::StoreProtocol("chat layout state: missing or malformed".into()))?;
    let items = Items::from_turns(&turns, &aliases);
    let limit = record.chat_messages;
    if items.len() < limit || (epochs as usize) > state.epochs.len() {
        return Err(Error::Internal(format!(
            "chat at the basis of call {} has {} items and {} epochs, the call showed {limit} and {epochs}",
            record.call_index,
            items.len(),
            state.epochs.len()
        )));
    }
    // Toolcall objects are written once: fetch the calls' documents (those
    // an earlier call of the range did not).
    let missing: Vec<String> = aliases
        .t
        .iter()
        .flatten()
        .filter(|id| !fetched.docs.contains_key(id.as_str()))
        .cloned()
        .collect();
    for chunk in missing.chunks(1000) {
        for d in store.get_many(chunk).await? {
            if let Some(id) = d.get("xt/id").and_then(Value::as_str) {
                fetched.docs.insert(id.to_string(), d);
            }
        }
    }
    let docs = &fetched.docs;
    for id in aliases.t.iter().flatten() {
        let (Some(d), Some((_, h))) = (docs.get(id), versions.get(id)) else {
            continue;
        };
        if d.get("object_hash").and_then(Value::as_str) != Some(h) {
            return Err(Error::Internal(format!(
                "static reference {id}: stored object_hash differs"
            )));
        }
    }
    let frozen = &mut fetched.frozen;
    for s in state
        .calls
        .iter()
        .flat_map(|c| &c.shows)
        .filter(|s| !s.note)
    {
        let key = (s.id.clone(), s.object_hash.clone());
        if frozen.contains_key(&key) {
            continue;
        }
        let tx = versions.get(&s.id).map(|(tx, _)| *tx);
        let doc = version_by_hash(store, &s.id, &s.object_hash, tx)
            .await?
            .ok_or_else(|| {
                Error::Internal(format!(
                    "static reference {}: no version {}",
                    s.id, s.object_hash
                ))
            })?;
        frozen.insert(key, doc);
    }
    let resolver = plan.resolver.clone();
    let display = move |s: &crate::model::FilesystemSource| resolver.display_path(s);
    let env = Env {
        turns: &turns,
        items: &items,
        aliases: &aliases,
        state: &state,
        policy: &plan.cache,
        doc: docs,
        frozen,
        display: &display,
        epochs,
        limit,
    };
    let start = env.view_start();
    let fold_user = env.fold().and_then(|f| f.user).map(|u| u as usize);
    let mut rendered: HashMap<usize, String> = HashMap::new();
    for i in (start..limit).chain(fold_user) {
        rendered.insert(i, env.render_item(i));
    }
    // What the model received: the system prompt heads it whether the engine
    // emitted it or the harness sent it itself (see ReconstructPlan::run).
    let json = env.assemble(
        &|i| rendered.get(&i).map_or("null", String::as_str),
        system_prompt,
    );
    serde_json::from_str(&json).map_err(|e| Error::Internal(format!("assembly JSON: {e}")))
}
