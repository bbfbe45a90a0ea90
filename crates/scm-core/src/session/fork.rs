//! Forking: a fork starts a new session seeded from the parent's state at
//! the fork point.
//!
//! The harness gives the child's transcript at start, a prefix of the
//! parent's (pi: the branch before the message the user forked at). The fork
//! point is the parent's **last model call whose consumed messages are a
//! prefix of it**: its record says how many messages the call had consumed
//! (`messages_consumed`), and the parent's chat document as of the call's
//! basis transaction holds the cursor (the fingerprint of the last of them)
//! and every consumed fingerprint. The parent's session and chat documents
//! as of that transaction are exactly what the parent's model was shown;
//! the child gets a copy under its own ids — sets, collapse window, chat
//! turns, cursor, aliases and cache-layout state, but no model call records
//! (the child records its own calls) — written in one transaction guarded by
//! "the child does not exist yet", and is then opened like any resumed
//! session (reconciliation, watcher). Messages after the fork point are new
//! to the child and ingested by its first call.
//!
//! Toolcall objects are shared, not copied: the child's chat refers to the
//! parent's (they are written once and never change). A second open of the
//! child just resumes it (pi fires `session_start` twice on an RPC fork).

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::documents::{ChatDoc, SessionDoc};
use super::{paged, Session, SessionOptions};
use crate::context::ingest::fingerprint;
use crate::context::static_refs::ModelCallRecord;
use crate::error::{Error, Result};
use crate::fs::indexer::Indexer;
use crate::model::{
    assigned_document, chat_object_id, seal, session_object_id, system_prompt_object_id, ObjectType,
};
use crate::store::{AsOf, Document, Store, TxOp, Version, ID_KEY};

/// Model call records tried (newest first) before giving up on seeding: a
/// rejected one costs two reads as of its transaction.
const MAX_CANDIDATES: usize = 32;

/// Keys `seal` computes; dropped before re-sealing under the child's id.
const HASH_KEYS: [&str; 4] = [
    "identity_hash",
    "content_hash",
    "metadata_hash",
    "object_hash",
];

pub(super) fn check_id(what: &str, id: &str) -> Result<()> {
    if id.is_empty() || id.len() > 512 || id.chars().any(char::is_control) {
        return Err(Error::InvalidArgument(format!(
            "{what} must be 1–512 printable characters, got {id:?}"
        )));
    }
    Ok(())
}

/// The parent's state at the fork point.
#[derive(Debug)]
pub(super) struct ForkPoint {
    /// The parent's call (None: the parent's seed, before any call of its own).
    pub(super) call_index: Option<usize>,
    pub(super) basis_tx: Option<i64>,
    pub(super) session_doc: Document,
    pub(super) chat_doc: Document,
    pub(super) system_prompt: Option<String>,
}

/// Fingerprints a chat document's turns hold, as a multiset.
fn consumed_fps(chat: &ChatDoc) -> HashMap<&str, u32> {
    let mut out: HashMap<&str, u32> = HashMap::new();
    for turn in &chat.turns {
        let user = turn.user.iter().map(|u| u.fp.as_str());
        for fp in user.chain(turn.messages.iter().map(|m| m.fp.as_str())) {
            *out.entry(fp).or_default() += 1;
        }
    }
    out
}

/// How many leading fingerprints of `fps` the multiset `seen` covers.
fn covered(fps: &[String], seen: &HashMap<&str, u32>) -> usize {
    let mut used: HashMap<&str, u32> = HashMap::new();
    for (i, fp) in fps.iter().enumerate() {
        let n = used.entry(fp.as_str()).or_default();
        *n += 1;
        if *n > seen.get(fp.as_str()).copied().unwrap_or(0) {
            return i;
        }
    }
    fps.len()
}

/// Whether the chat document as of a call that consumed `fps[..m]` has
/// consumed a prefix of `fps` (the child's transcript) holding it. More
/// than `m` when write-behind coalesced: the flush that landed the call also
/// carried messages observed after it (pi's final answer, stored at
/// `agent_end`), so the record's transaction is that later state. It is
/// still a state the child continues from; one past the child's transcript
/// is not.
fn cursor_matches(chat_doc: &Document, fps: &[String], m: usize) -> bool {
    let Ok(chat) = ChatDoc::parse(chat_doc) else {
        return false;
    };
    let Some(cursor) = &chat.cursor else {
        return false;
    };
    let c = cursor.consumed;
    (m..=fps.len()).contains(&c)
        && cursor.last_fp.as_deref() == c.checked_sub(1).map(|i| fps[i].as_str())
        && covered(&fps[..c], &consumed_fps(&chat)) == c
}

/// The parent's sets as the record of call `r` describes them: the pool
/// prefix it showed and its active positions (the session document may have
/// moved on since, e.g. by an operation after the parent's last call).
fn sets_as_recorded(session_doc: &mut Document, r: &ModelCallRecord) {
    let SessionDoc {
        metadata_pool: pool,
        pinned_set,
        ..
    } = SessionDoc::parse(session_doc).unwrap_or_default();
    if pool.len() < r.pool_len {
        return; // not this session's pool: keep the document as it is
    }
    let pool = &pool[..r.pool_len];
    let active: Vec<&String> = r.active.iter().filter_map(|&p| pool.get(p)).collect();
    let pinned: Vec<String> = pinned_set
        .into_iter()
        .filter(|id| active.contains(&id))
        .collect();
    session_doc.insert("metadata_pool".into(), Value::from(pool.to_vec()));
    session_doc.insert(
        "active_set".into(),
        Value::from(active.into_iter().cloned().collect::<Vec<_>>()),
    );
    session_doc.insert("pinned_set".into(), Value::from(pinned));
}

/// Finds the fork point in the parent's documents; None when the parent is
/// unknown or no call of it consumed a prefix of `messages`.
async fn fork_point(
    store: &dyn Store,
    parent: &str,
    messages: &[Value],
) -> Result<Option<ForkPoint>> {
    let session_id = session_object_id(parent);
    let chat_id = chat_object_id(parent);
    let prompt_id = system_prompt_object_id(parent);
    let mut current: HashMap<String, Document> = paged::get_many(
        store,
        &[session_id.clone(), chat_id.clone(), prompt_id.clone()],
    )
    .await?
    .into_iter()
    .filter_map(|d| Some((d.get(ID_KEY)?.as_str()?.to_string(), d)))
    .collect();
    let (Some(session_doc), Some(chat_doc)) =
        (current.remove(&session_id), current.remove(&chat_id))
    else {
        return Ok(None);
    };
    let chat =
        ChatDoc::parse(&chat_doc).map_err(|e| Error::StoreProtocol(format!("{chat_id}: {e}")))?;
    let records: Vec<ModelCallRecord> = chat.model_calls.clone().unwrap_or_default();
    let fps: Vec<String> = messages.iter().map(fingerprint).collect();
    // Everything a candidate consumed, the parent still holds: prune by it.
    let reach = covered(&fps, &consumed_fps(&chat));
    let prompt_of = |d: Option<Document>| {
        d.and_then(|d| d.get("content").and_then(Value::as_str).map(str::to_string))
    };
    let last = records.len().checked_sub(1);
    let mut history: Option<Vec<Version>> = None;
    let mut tried = 0;
    for (k, r) in records.iter().enumerate().rev() {
        if r.messages_consumed > reach {
            continue;
        }
        if tried == MAX_CANDIDATES {
            break;
        }
        tried += 1;
        // A record whose flush receipt the parent never saw (its process
        // closed right after that write) has no basis: the first chat
        // version holding it is (else a restart in the parent moved the
        // fork point one call back, and the child's first call ingested
        // that call's results again).
        let basis = match r.basis_tx {
            None if Some(k) != last => {
                if history.is_none() {
                    history = Some(store.history(&chat_id).await?);
                }
                super::reconstruct::first_version_with_call(
                    history.as_deref().unwrap_or_default(),
                    k,
                )
            }
            b => b,
        };
        let point = match basis {
            Some(tx) => {
                let at = AsOf::TxId(tx);
                // The chat first: most rejected candidates stop here.
                let Some(c) = paged::get_as_of(store, &chat_id, at).await? else {
                    continue;
                };
                if !cursor_matches(&c, &fps, r.messages_consumed) {
                    continue;
                }
                let Some(s) = paged::get_as_of(store, &session_id, at).await? else {
                    continue;
                };
                ForkPoint {
                    call_index: Some(k),
                    basis_tx: Some(tx),
                    session_doc: s,
                    chat_doc: c,
                    system_prompt: prompt_of(store.get_as_of(&prompt_id, at).await?),
                }
            }
            // A record without its basis is from the parent's last chat
            // write: the current documents are as of it.
            None if Some(k) == last => {
                if !cursor_matches(&chat_doc, &fps, r.messages_consumed) {
                    continue;
                }
                let mut s = session_doc.clone();
                sets_as_recorded(&mut s, r);
                ForkPoint {
                    call_index: Some(k),
                    basis_tx: None,
                    session_doc: s,
                    chat_doc: chat_doc.clone(),
                    system_prompt: prompt_of(current.remove(&prompt_id)),
                }
            }
            None => continue,
        };
        return Ok(Some(point));
    }
    // No call of the parent's own at a prefix: a parent that was itself
    // seeded (a fork, `fromCommit`) held its seed before any call, the
    // state its own parent's model was in there. A fork of it at that point
    // (pi: `/fork` in the child onto its first own prompt) starts from it.
    let Some(first) = first_state(store, parent).await? else {
        return Ok(None);
    };
    let consumed = ChatDoc::parse(&first.chat_doc)
        .map(|c| c.cursor().consumed)
        .unwrap_or(0);
    if consumed == 0 || !cursor_matches(&first.chat_doc, &fps, consumed) {
        return Ok(None);
    }
    let at = AsOf::TxId(first.tx);
    Ok(Some(ForkPoint {
        call_index: None,
        basis_tx: Some(first.tx),
        session_doc: first.session_doc,
        chat_doc: first.chat_doc,
        system_prompt: prompt_of(store.get_as_of(&prompt_id, at).await?),
    }))
}

/// The session as first written: its chat's first version and the session
/// document as of that transaction.
pub(super) struct FirstState {
    pub(super) tx: i64,
    pub(super) chat_doc: Document,
    pub(super) session_doc: Document,
}

/// The session's and chat's documents as the session was first written (a
/// seeded session's seed).
pub(super) async fn first_state(store: &dyn Store, session_id: &str) -> Result<Option<FirstState>> {
    let chat_id = chat_object_id(session_id);
    let Some(first) = store.history(&chat_id).await?.into_iter().next() else {
        return Ok(None);
    };
    let as_of = AsOf::TxId(first.tx_id);
    let (Some(chat_doc), Some(session_doc)) = (
        paged::get_as_of(store, &chat_id, as_of).await?,
        paged::get_as_of(store, &session_object_id(session_id), as_of).await?,
    ) else {
        return Ok(None);
    };
    Ok(Some(FirstState {
        tx: first.tx_id,
        chat_doc,
        session_doc,
    }))
}

/// `doc` under another id: `fields` replaced, hashes recomputed.
pub(super) fn rehome(mut doc: Document, ty: ObjectType, fields: Vec<(&str, Value)>) -> Document {
    for k in HASH_KEYS {
        doc.remove(k);
    }
    for (k, v) in fields {
        doc.insert(k.into(), v);
    }
    seal(doc, ty)
}

/// The child's first documents: the parent's at the fork point, re-homed.
pub(super) fn seed_ops(child: &str, parent: &str, p: ForkPoint, set_prompt: bool) -> Vec<TxOp> {
    let (session_id, chat_id, prompt_id) = (
        session_object_id(child),
        chat_object_id(child),
        system_prompt_object_id(child),
    );
    let mut session = rehome(
        p.session_doc,
        ObjectType::Session,
        vec![
            (ID_KEY, session_id.clone().into()),
            ("session_id", child.into()),
            ("chat_ref", chat_id.clone().into()),
            ("system_prompt_ref", prompt_id.clone().into()),
        ],
    );
    // Descriptive: where the child came from (its first version only).
    session.insert(
        "forked_from".into(),
        serde_json::json!({"session_id": parent, "call_index": p.call_index, "basis_tx": p.basis_tx}),
    );
    let chat = rehome(
        p.chat_doc,
        ObjectType::Chat,
        vec![
            (ID_KEY, chat_id.into()),
            ("session_ref", session_id.clone().into()),
            // The parent's records describe the parent's calls.
            ("model_calls", Value::Array(Vec::new())),
        ],
    );
    let mut ops = vec![
        TxOp::Match {
            id: session_id,
            expected: None,
        },
        TxOp::Put(session),
        TxOp::Put(chat),
    ];
    if let Some(prompt) = p.system_prompt.filter(|_| set_prompt) {
        ops.push(TxOp::Put(assigned_document(
            &prompt_id,
            ObjectType::SystemPrompt,
            Some(prompt),
            Map::new(),
        )));
    }
    ops
}

impl Session {
    /// Opens session `options.session_id` as a fork of `parent_session_id`
    /// (see the module docs). `messages` is the child's transcript at start.
    /// A child that exists already is resumed; an unknown parent, or one with
    /// no call at a prefix of `messages`, gives a fresh session that ingests
    /// `messages` itself.
    pub async fn open_fork(
        store: Arc<dyn Store>,
        indexer: Arc<Indexer>,
        options: SessionOptions,
        parent_session_id: &str,
        messages: &[Value],
    ) -> Result<Session> {
        check_id("session_id", &options.session_id)?;
        check_id("fork parent session_id", parent_session_id)?;
        if parent_session_id == options.session_id {
            return Err(Error::InvalidArgument(format!(
                "session {parent_session_id} cannot be a fork of itself"
            )));
        }
        let child = options.session_id.clone();
        if store.get(&session_object_id(&child)).await?.is_none() {
            match fork_point(&*store, parent_session_id, messages).await? {
                Some(point) => {
                    let ops = seed_ops(
                        &child,
                        parent_session_id,
                        point,
                        options.system_prompt.is_none(),
                    );
                    // Not committed: a concurrent open seeded the child first.
                    store.submit(ops).await?;
                }
                None => tracing::info!(
                    child,
                    parent = parent_session_id,
                    "fork: no parent state at a prefix of the transcript; starting empty"
                ),
            }
        }
        Session::open(store, indexer, options).await
    }
}
