//! Moving a session to another of its commits: what a host's in-session
//! branch switch means (pi's `/tree`: the session id stays, the host's leaf
//! moves). The model must then see exactly the host's current branch, never
//! the branch that was left, so the engine's state goes back to the commit
//! the new branch position maps to and continues from there.
//!
//! - **Which commit.** The host hands over its current branch (the messages
//!   its context hook would get). Candidates are the session's own commits
//!   (its timeline: every branch it ever committed) that refer to a chat;
//!   a candidate maps when the host branch holds the cursor the engine had
//!   at that commit: the message the cursor ended at (fingerprint) is at
//!   that position of the branch, exactly the check the cursor's fast path
//!   makes on every call (fingerprints cover role, content, timestamp and
//!   tool call id, so a message of one branch is not one of another). Of
//!   those, the deepest position on the branch wins, then the newest commit.
//!   A session seeded by a fork or `fromCommit` was first written holding
//!   its parent's chat: that **seed** is a candidate too, at its cursor's
//!   position — a branch back at the fork point gets the session as it was
//!   forked (its sets and pins, the tip it was opened at), not a new
//!   layout. None maps (a branch before the session's first commit or its
//!   seed, e.g. back onto the first prompt): the **root**, the session's
//!   state as first written (empty chat; the chain's tip cleared, so the
//!   next commit is a new root); a seeded session's root is its seed
//!   emptied, as a new session starts (no turns, no aliases, empty sets),
//!   and the next call ingests the host's branch whole — never the branch
//!   that was left.
//! - **How the state is restored.** The session's and chat's documents as
//!   of the commit's transaction (sets, collapse window, turns, cursor,
//!   aliases, cache-layout state) become their current versions again, the
//!   chat keeping its model call records (every call of every branch stays
//!   listed and reconstructable; records only grow) and the session
//!   timeline names the commit as tip, in one transaction guarded by the
//!   chat head read. The session is then opened again (files reconciled
//!   with disk, as on resume); the host's messages after the commit's
//!   position are new to it and ingested by the next call.
//! - Before moving, what the session holds beyond its tip is committed
//!   (the branch that is left keeps its commit, its own chain); a branch
//!   that continues the session moves nothing and commits nothing.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::documents::ChatDoc;
use super::fork::{first_state, FirstState};
use super::{paged, Session, SessionOptions};
use crate::commits::{self, timeline, Artifact, Commit};
use crate::context::ingest::fingerprint;
use crate::error::{Error, Result};
use crate::fs::indexer::Indexer;
use crate::model::{chat_object_id, session_object_id, ObjectType};
use crate::store::{AsOf, Document, Store, TxOp};

/// Candidates checked (deepest first) against their chat as of their
/// transaction before giving up: each costs two reads.
const MAX_CANDIDATES: usize = 16;

/// The commit a branch maps to (None: the root), and the state to restore.
#[derive(Debug)]
pub struct RewindTarget {
    pub commit: Option<Commit>,
    /// Chat items up to the commit (the tip's position).
    pub to: u64,
    /// Host messages the commit covers (the cursor at the commit).
    pub consumed: usize,
    chat_doc: Document,
    session_doc: Document,
}

/// Which of `session_id`'s commits the host branch `messages` maps to (see
/// the module docs); None when none does.
pub async fn branch_commit(
    store: &dyn Store,
    session_id: &str,
    messages: &[Value],
) -> Result<Option<RewindTarget>> {
    let Some(first) = first_state(store, session_id).await? else {
        return Ok(None);
    };
    let fps: Vec<String> = messages.iter().map(fingerprint).collect();
    let seed = seed_target(store, session_id, &first, &fps).await?;
    let entries = timeline::entries(store, &timeline::session_key(session_id)).await?;
    if entries.is_empty() || messages.is_empty() {
        return Ok(Some(seed.unwrap_or_else(|| root(first))));
    }
    let mut at: HashMap<&str, usize> = HashMap::new();
    for (i, fp) in fps.iter().enumerate() {
        at.entry(fp.as_str()).or_insert(i);
    }
    let mut order: HashMap<String, usize> = HashMap::new();
    for (k, (_, id)) in entries.iter().enumerate() {
        order.insert(id.clone(), k);
    }
    let ids: Vec<String> = order.keys().cloned().collect();
    let mut cands: Vec<(usize, usize, Commit)> = Vec::new();
    for c in commits::get_many_bare(store, &ids).await? {
        let Artifact::ChatRange {
            last_fp: Some(fp), ..
        } = &c.artifact
        else {
            continue;
        };
        if c.session_id != session_id {
            continue;
        }
        if let Some(&i) = at.get(fp.as_str()) {
            let k = order.get(&c.id).copied().unwrap_or(0);
            cands.push((i + 1, k, c));
        }
    }
    cands.sort_by_key(|c| std::cmp::Reverse((c.0, c.1)));
    for (depth, _, c) in cands.into_iter().take(MAX_CANDIDATES) {
        if seed.as_ref().is_some_and(|s| s.consumed > depth) {
            break; // the seed lies deeper on the branch
        }
        let Artifact::ChatRange { chat, tx, to, .. } = &c.artifact else {
            continue;
        };
        let as_of = AsOf::TxId(*tx);
        let Some(chat_doc) = paged::get_as_of(store, chat, as_of).await? else {
            continue;
        };
        let cursor = ChatDoc::parse(&chat_doc)
            .map(|c| c.cursor())
            .unwrap_or_default();
        let consumed = cursor.consumed;
        let holds = consumed > 0
            && consumed <= fps.len()
            && cursor.last_fp.as_deref() == Some(fps[consumed - 1].as_str())
            && commits::materialize::flatten(&chat_doc).len() as u64 == *to;
        if !holds {
            continue;
        }
        let Some(session_doc) =
            paged::get_as_of(store, &session_object_id(session_id), as_of).await?
        else {
            continue;
        };
        let to = *to;
        return Ok(Some(RewindTarget {
            commit: Some(commits::show(store, &c.id).await?),
            to,
            consumed,
            chat_doc,
            session_doc,
        }));
    }
    Ok(Some(seed.unwrap_or_else(|| root(first))))
}

/// A seeded session's first state, when the branch `fps` holds its cursor:
/// the session as it was forked, at the tip it was opened at (a
/// `fromCommit` session's commit; none for a fork of a session).
async fn seed_target(
    store: &dyn Store,
    session_id: &str,
    first: &FirstState,
    fps: &[String],
) -> Result<Option<RewindTarget>> {
    let cursor = ChatDoc::parse(&first.chat_doc)
        .map(|c| c.cursor())
        .unwrap_or_default();
    let consumed = cursor.consumed;
    if consumed == 0
        || consumed > fps.len()
        || cursor.last_fp.as_deref() != Some(fps[consumed - 1].as_str())
    {
        return Ok(None);
    }
    let head = store
        .get_as_of(
            &timeline::head_id(&timeline::session_key(session_id)),
            AsOf::TxId(first.tx),
        )
        .await?;
    let commit = match head.map(timeline::tip_of).transpose()?.flatten() {
        Some((id, _)) => Some(commits::show(store, &id).await?),
        None => None,
    };
    Ok(Some(RewindTarget {
        commit,
        to: commits::materialize::flatten(&first.chat_doc).len() as u64,
        consumed,
        chat_doc: first.chat_doc.clone(),
        session_doc: first.session_doc.clone(),
    }))
}

/// The root: the session's state as first written, emptied when it already
/// held a chat (a fork's seed).
fn root(first: FirstState) -> RewindTarget {
    let consumed = ChatDoc::parse(&first.chat_doc)
        .map(|c| c.cursor().consumed)
        .unwrap_or(0);
    let (chat_doc, session_doc) =
        if consumed != 0 || !commits::materialize::flatten(&first.chat_doc).is_empty() {
            (
                emptied_chat(first.chat_doc),
                emptied_session(first.session_doc),
            )
        } else {
            (first.chat_doc, first.session_doc)
        };
    RewindTarget {
        commit: None,
        to: 0,
        consumed: 0,
        chat_doc,
        session_doc,
    }
}

/// A chat document as a new session's: no turns, nothing consumed, no
/// aliases nor layout state (`ChatDoc`'s fields; identity fields stay).
fn emptied_chat(mut doc: Document) -> Document {
    for k in ["cursor", "aliases", "layout"] {
        doc.remove(k);
    }
    doc.insert("turns".into(), Value::Array(Vec::new()));
    doc.insert("toolcall_refs".into(), Value::Array(Vec::new()));
    doc.insert("turn_count".into(), 0.into());
    doc
}

/// A session document as a new session's: the sets empty, no collapse
/// window (`SessionDoc`'s fields; identity fields stay).
fn emptied_session(mut doc: Document) -> Document {
    doc.remove("recent_use");
    for k in ["session_index", "metadata_pool", "active_set", "pinned_set"] {
        doc.insert(k.into(), Value::Array(Vec::new()));
    }
    doc
}

/// Makes `target`'s state the session's current one (see the module docs);
/// `calls`: the session's model call records as it holds them
/// ([`Session::model_call_records`]: the store's copy can lack the basis
/// transaction of the last ones). Store only: open the session again
/// afterwards.
pub async fn restore(
    store: &dyn Store,
    session_id: &str,
    target: &RewindTarget,
    calls: Value,
) -> Result<()> {
    let chat_id = chat_object_id(session_id);
    let head = store.get(&chat_id).await?;
    let chat = super::fork::rehome(
        target.chat_doc.clone(),
        ObjectType::Chat,
        vec![("model_calls", calls)],
    );
    let mut session = super::fork::rehome(target.session_doc.clone(), ObjectType::Session, vec![]);
    // Descriptive (unhashed): where this version came from.
    session.remove("forked_from");
    session.insert(
        "rewound_to".into(),
        serde_json::json!({"commit": target.commit.as_ref().map(|c| c.id.clone()), "messages": target.consumed}),
    );
    let key = timeline::session_key(session_id);
    let tl = timeline::read_head(store, &key).await?;
    let mut ops = vec![
        TxOp::Match {
            id: chat_id.clone(),
            expected: head,
        },
        TxOp::Put(session),
        TxOp::Put(chat),
    ];
    ops.extend(match &target.commit {
        Some(c) => timeline::set_tip_ops(&key, tl, &c.id, target.to),
        None => timeline::clear_tip_ops(&key, tl),
    });
    if !store.submit(ops).await?.committed {
        return Err(Error::CasConflict { id: chat_id });
    }
    Ok(())
}

impl Session {
    /// The model call records as this session holds them (for [`restore`]).
    pub fn model_call_records(&self) -> Value {
        serde_json::to_value(&self.records.model_calls).unwrap_or(Value::Array(Vec::new()))
    }

    /// Whether the host's `messages` continue what the session consumed (a
    /// call would take only what is new: no branch switch).
    pub fn continues(&self, messages: &[Value]) -> bool {
        !self.cursor.select(messages).replaced
    }

    /// What [`Session::open`] needs to open this session again after a
    /// [`restore`] (the system prompt is the stored one).
    pub fn reopen_parts(&self) -> (Arc<dyn Store>, Arc<Indexer>, SessionOptions) {
        let mut o = self.options.clone();
        o.system_prompt = None;
        (self.store.clone(), self.indexer.clone(), o)
    }

    /// Stops this instance without writing (another instance of the session
    /// replaces it).
    pub fn retire(&mut self) {
        self.read_only = true;
        if let Some(w) = self.watch.take() {
            w.watcher.close();
        }
        self.closed = true;
    }
}

impl RewindTarget {
    /// Whether a session at tip `tip` with `consumed` host messages is
    /// already there.
    pub fn is_current(&self, tip: Option<&str>, consumed: usize) -> bool {
        tip == self.commit.as_ref().map(|c| c.id.as_str()) && consumed == self.consumed
    }
}
