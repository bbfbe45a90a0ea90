//! Persistence batching: everything an operation or a model call changed is
//! queued and written in **one** transaction by the next flush.
//!
//! Taking the pending writes is cheap (the session can be behind a lock):
//! each chat turn and each model call record keeps its serialisation
//! (`Value` and stable JSON) cached until it changes, so the chat document —
//! which grows with the session — is assembled from shared pieces in
//! [`PendingWrite::submit`], outside the session, and its `metadata_hash` is
//! streamed over the cached stable JSON instead of re-serialising every turn.

use std::sync::Arc;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::{OrderedSet, Session};
use crate::error::{Error, Result};
use crate::model::hashing;
use crate::model::stable_json::stable_stringify;
use crate::model::{assigned_document, ObjectType};
use crate::store::{Document, Store, TxOp, TxReceipt, ID_KEY};

/// One turn's serialisations: its `Value` and its stable JSON.
pub(super) type TurnJson = Arc<(Value, String)>;

pub(super) fn turn_json(turn: &crate::context::chat::Turn) -> TurnJson {
    let v = serde_json::to_value(turn).unwrap_or(Value::Null);
    let s = stable_stringify(&v);
    Arc::new((v, s))
}

/// Writes taken out of a session, to submit without holding the session.
#[derive(Debug)]
pub struct PendingWrite {
    ops: Vec<TxOp>,
    chat_doc: Option<ChatSnapshot>,
    session_doc: Option<SessionSnapshot>,
    /// (id, object_hash) of every object version queued.
    written: Vec<(String, String)>,
    session: bool,
    chat: bool,
    system_prompt: bool,
    /// Model call records covered by this write.
    records: usize,
}

impl PendingWrite {
    /// Builds the documents and submits everything as one transaction (once).
    pub async fn submit(&mut self, store: &dyn Store) -> Result<TxReceipt> {
        let mut ops = std::mem::take(&mut self.ops);
        if let Some(chat) = self.chat_doc.take() {
            ops.push(TxOp::Put(chat.build()));
        }
        if let Some(session) = self.session_doc.take() {
            ops.push(TxOp::Put(session.build()));
        }
        let receipt = store.submit(ops).await?;
        if !receipt.committed {
            return Err(Error::Internal(
                "session write aborted although it has no match guard".into(),
            ));
        }
        Ok(receipt)
    }

    /// Documents this write puts.
    pub fn op_count(&self) -> usize {
        self.ops.len()
            + usize::from(self.chat_doc.is_some())
            + usize::from(self.session_doc.is_some())
    }
}

/// The chat document's parts, shared with the session.
#[derive(Debug)]
struct ChatSnapshot {
    chat_id: String,
    session_ref: String,
    turns: Vec<TurnJson>,
    toolcall_refs: Vec<String>,
    cursor: Value,
    model_calls: Vec<Arc<Value>>,
    /// Further descriptive (unhashed) fields, e.g. the cache layout's state.
    extra: Vec<(&'static str, Value)>,
}

impl ChatSnapshot {
    /// The sealed chat document: what `assigned_document` would build from
    /// the same fields, with the metadata hash streamed over cached pieces.
    fn build(self) -> Document {
        let toolcall_refs = Value::from(self.toolcall_refs);
        let turn_count = Value::from(self.turns.len());
        // stable({session_ref, toolcall_refs, turn_count, turns}): keys sorted.
        let mut h = Sha256::new();
        h.update(b"{\"session_ref\":");
        h.update(stable_stringify(&Value::String(self.session_ref.clone())).as_bytes());
        h.update(b",\"toolcall_refs\":");
        h.update(stable_stringify(&toolcall_refs).as_bytes());
        h.update(b",\"turn_count\":");
        h.update(stable_stringify(&turn_count).as_bytes());
        h.update(b",\"turns\":[");
        for (i, t) in self.turns.iter().enumerate() {
            if i > 0 {
                h.update(b",");
            }
            h.update(t.1.as_bytes());
        }
        h.update(b"]}");
        let metadata_hash = hex::encode(h.finalize());
        let content_hash = hashing::content_hash(Some("")).expect("content is a string");
        let object_hash = hashing::object_hash(None, Some(&content_hash), &metadata_hash);

        let mut doc = Map::new();
        doc.insert(ID_KEY.into(), Value::String(self.chat_id.clone()));
        doc.insert("type".into(), ObjectType::Chat.as_str().into());
        doc.insert("source".into(), Value::Null);
        doc.insert("content".into(), Value::String(String::new()));
        doc.insert(
            "turns".into(),
            Value::Array(self.turns.iter().map(|t| t.0.clone()).collect()),
        );
        doc.insert("session_ref".into(), Value::String(self.session_ref));
        doc.insert("turn_count".into(), turn_count);
        doc.insert("toolcall_refs".into(), toolcall_refs);
        doc.insert(
            "identity_hash".into(),
            hashing::identity_hash_assigned(ObjectType::Chat.as_str(), &self.chat_id).into(),
        );
        doc.insert("file_hash".into(), Value::Null);
        doc.insert("content_hash".into(), content_hash.into());
        doc.insert("metadata_hash".into(), metadata_hash.into());
        doc.insert("object_hash".into(), object_hash.into());
        // Descriptive (unhashed): the cursor and the static references.
        doc.insert("cursor".into(), self.cursor);
        doc.insert(
            "model_calls".into(),
            Value::Array(self.model_calls.iter().map(|r| (**r).clone()).collect()),
        );
        for (k, v) in self.extra {
            doc.insert(k.into(), v);
        }
        doc
    }
}

/// The session document's parts.
#[derive(Debug)]
struct SessionSnapshot {
    id: String,
    fields: Map<String, Value>,
    recent_use: Value,
}

impl SessionSnapshot {
    fn build(self) -> Document {
        let mut doc = assigned_document(&self.id, ObjectType::Session, None, self.fields);
        // Descriptive (unhashed): the collapse window, so a resumed session
        // keeps collapsing exactly where it left off.
        doc.insert("recent_use".into(), self.recent_use);
        doc
    }
}

impl Session {
    fn session_snapshot(&self) -> SessionSnapshot {
        let ids = |s: &OrderedSet| Value::from(s.to_vec());
        let mut f = Map::new();
        f.insert("session_id".into(), self.options.session_id.clone().into());
        f.insert("chat_ref".into(), self.chat_id.clone().into());
        f.insert(
            "system_prompt_ref".into(),
            self.system_prompt_id.clone().into(),
        );
        f.insert("session_index".into(), ids(&self.session_index));
        f.insert("metadata_pool".into(), ids(&self.metadata_pool));
        f.insert("active_set".into(), ids(&self.active_set));
        f.insert("pinned_set".into(), ids(&self.pinned_set));
        SessionSnapshot {
            id: self.session_doc_id.clone(),
            fields: f,
            recent_use: serde_json::to_value(&self.uses).unwrap_or(Value::Null),
        }
    }

    fn chat_snapshot(&mut self) -> ChatSnapshot {
        // Serialise only what changed since the last write.
        for (t, slot) in self.chat.turn_json.iter_mut().enumerate() {
            if slot.is_none() {
                *slot = Some(turn_json(&self.chat.turns[t]));
            }
        }
        for (i, slot) in self.calls_json.iter_mut().enumerate() {
            if slot.is_none() {
                *slot = Some(Arc::new(
                    serde_json::to_value(&self.calls[i]).unwrap_or(Value::Null),
                ));
            }
        }
        ChatSnapshot {
            chat_id: self.chat_id.clone(),
            session_ref: self.session_doc_id.clone(),
            turns: self.chat.turn_json.iter().flatten().cloned().collect(),
            toolcall_refs: self.chat.toolcall_refs.clone(),
            cursor: serde_json::json!({"consumed": self.cursor.consumed, "last_fp": self.cursor.last_fp}),
            model_calls: self.calls_json.iter().flatten().cloned().collect(),
            extra: {
                let (aliases, layout) = self.cache_persisted();
                vec![("aliases", aliases), ("layout", layout)]
            },
        }
    }

    /// Takes every queued write as one transaction's worth of operations.
    pub fn take_pending(&mut self) -> Option<PendingWrite> {
        if self.pending.is_empty() {
            return None;
        }
        let pending = std::mem::take(&mut self.pending);
        let mut ops = Vec::new();
        let mut written = Vec::new();
        for id in pending.docs.iter() {
            if let Some(c) = self.objects.get(id) {
                written.push((id.clone(), c.object_hash().to_string()));
                ops.push(TxOp::Put(c.doc.clone()));
            }
        }
        if pending.system_prompt {
            if let Some(c) = &self.system_prompt {
                written.push((self.system_prompt_id.clone(), c.object_hash().to_string()));
                ops.push(TxOp::Put(c.doc.clone()));
            }
        }
        Some(PendingWrite {
            ops,
            chat_doc: pending.chat.then(|| self.chat_snapshot()),
            session_doc: pending.session.then(|| self.session_snapshot()),
            written,
            session: pending.session,
            chat: pending.chat,
            system_prompt: pending.system_prompt,
            records: self.calls.len(),
        })
    }

    /// Records a landed write: the written versions are current as of it.
    pub fn apply_receipt(&mut self, pending: &PendingWrite, receipt: &TxReceipt) {
        self.write_error = None;
        for (id, hash) in &pending.written {
            let cached = if *id == self.system_prompt_id {
                self.system_prompt.as_mut()
            } else {
                self.objects.get_mut(id)
            };
            if let Some(c) = cached.filter(|c| c.object_hash() == hash) {
                c.tx = Some(receipt.tx_id);
            }
        }
        if pending.chat {
            for i in (0..pending.records).rev() {
                if self.calls[i].basis_tx.is_some() {
                    break;
                }
                self.calls[i].basis_tx = Some(receipt.tx_id);
                self.calls_json[i] = None;
            }
        }
    }

    /// Re-queues a write that failed, so the next flush retries it.
    pub fn restore_pending(&mut self, pending: PendingWrite) {
        for (id, _) in pending.written {
            if id == self.system_prompt_id {
                self.pending.system_prompt = true;
            } else {
                self.pending.docs.insert(id);
            }
        }
        self.pending.session |= pending.session;
        self.pending.chat |= pending.chat;
        self.pending.system_prompt |= pending.system_prompt;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::chat::{MessageEntry, Turn, UserEntry};

    #[test]
    fn streamed_chat_document_equals_the_sealed_one() {
        let turns = vec![
            Turn {
                index: 0,
                user: Some(UserEntry {
                    content: "hé \u{1F600} \"q\"".into(),
                    timestamp: 1.into(),
                    fp: "f0".into(),
                }),
                messages: vec![MessageEntry {
                    role: "assistant".into(),
                    fp: "f1".into(),
                    content: Some(vec![
                        serde_json::json!({"type": "text", "text": "x", "b": 1.5e21}),
                    ]),
                    ..Default::default()
                }],
            },
            Turn {
                index: 1,
                user: None,
                messages: vec![],
            },
        ];
        let snap = ChatSnapshot {
            chat_id: "chat:s".into(),
            session_ref: "session:s".into(),
            turns: turns.iter().map(turn_json).collect(),
            toolcall_refs: vec!["toolcall:s:1".into()],
            cursor: Value::Null,
            model_calls: vec![],
            extra: vec![],
        };
        let built = snap.build();
        let mut f = Map::new();
        f.insert("turns".into(), serde_json::to_value(&turns).unwrap());
        f.insert("session_ref".into(), "session:s".into());
        f.insert("turn_count".into(), 2.into());
        f.insert("toolcall_refs".into(), serde_json::json!(["toolcall:s:1"]));
        let mut sealed = assigned_document("chat:s", ObjectType::Chat, Some(String::new()), f);
        sealed.insert("cursor".into(), Value::Null);
        sealed.insert("model_calls".into(), serde_json::json!([]));
        assert_eq!(built, sealed);
    }
}
