//! The parts a [`Session`](super::Session) is made of, each with one job.
//! The engine's rules live in the session's rooms (`ingest.rs`, `ops.rs`,
//! `persist.rs`, …); these are the state they share, named.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::mpsc::Receiver;

use serde_json::Value;

use super::{persist::StoredPages, OrderedSet};
use crate::context::chat::{ChatJson, Turn};
use crate::context::output::PreviousOutput;
use crate::context::static_refs::ModelCallRecord;
use crate::error::Error;
use crate::fs::watcher::{WatchEvent, Watcher};
use crate::model::{
    chat_object_id, session_object_id, system_prompt_object_id, type_of, FilesystemSource,
    ObjectType,
};
use crate::store::Document;

/// The ids of the session's own documents.
#[derive(Debug)]
pub(super) struct DocIds {
    /// `session:<id>`
    pub(super) session: String,
    /// `chat:<id>`
    pub(super) chat: String,
    /// `system_prompt:<id>`
    pub(super) system_prompt: String,
}

impl DocIds {
    pub(super) fn of(session_id: &str) -> DocIds {
        DocIds {
            session: session_object_id(session_id),
            chat: chat_object_id(session_id),
            system_prompt: system_prompt_object_id(session_id),
        }
    }
}

/// The spec's four sets of content objects (files and toolcalls; SSOT
/// §3.1), each insertion-ordered. The index only grows.
#[derive(Debug, Default)]
pub(super) struct Sets {
    pub(super) index: OrderedSet,
    pub(super) pool: OrderedSet,
    pub(super) active: OrderedSet,
    pub(super) pinned: OrderedSet,
}

/// The model calls' records (static references) and what the next one
/// needs to know.
#[derive(Debug, Default)]
pub(super) struct Records {
    pub(super) model_calls: Vec<ModelCallRecord>,
    /// Object hash last written into a model call record, per id.
    pub(super) recorded: HashMap<String, String>,
    /// Pool objects (and the system prompt) whose shown version changed
    /// since the last record.
    pub(super) dirty_versions: OrderedSet,
    /// The active set's pool positions (each model call records them), with
    /// the (active set, pool) versions they were computed for.
    pub(super) active_positions: ((u64, u64), Vec<usize>),
    /// Tokens of the system prompt as a `system` message, by the prompt's
    /// `object_hash` (the harness sends it when the engine does not emit it).
    pub(super) system_message_tokens: Option<(String, u64)>,
    /// The output last handed over as a delta, for the next record's
    /// cached estimate (None after a resume or a whole hand-over).
    pub(super) last_output: Option<LastOutput>,
}

/// The call an output was for, and the content hash of the system prompt
/// the harness sent ahead of it (None: the engine emits its own, or there
/// is none).
#[derive(Debug)]
pub(super) struct LastOutput {
    pub(super) call: usize,
    pub(super) system: Option<String>,
}

/// What goes to the store, and what it holds.
#[derive(Debug, Default)]
pub(super) struct Writes {
    pub(super) pending: Pending,
    /// What the store holds of the paged chat and session parts.
    pub(super) paged: StoredPages,
    /// Why writes are queued (see `Session::write_error`).
    pub(super) error: Option<Error>,
    /// The session's and chat's head documents as this instance last read
    /// or wrote them (`None`: absent), by id; a head not listed is not
    /// known (never guarded). Every write of a head is guarded by it, so a
    /// second instance on the same session id cannot interleave its writes
    /// with this one's (`SESSION_SUPERSEDED`).
    pub(super) heads: HashMap<String, Option<crate::store::Document>>,
    /// Heads of writes that failed since the last one landed (one may have
    /// landed all the same: see `PendingWrite::check_heads`).
    pub(super) failed_heads: HashMap<String, Vec<crate::store::Document>>,
}

/// The spec layout's rendered parts, kept between calls.
#[derive(Debug, Default)]
pub(super) struct SpecView {
    /// Rendered pool lines (JSON-escaped), aligned with the pool.
    pub(super) pool_lines: Vec<String>,
    /// Escaped active blocks by id, with the object hash they render.
    pub(super) active_json: HashMap<String, (String, String)>,
}

/// What the host was handed.
#[derive(Debug, Default)]
pub(super) struct Handover {
    /// The last output handed over as a delta (see [`super::handover`]).
    pub(super) previous: PreviousOutput,
    /// The last context handed over whole (not as a delta), for the next
    /// call's edit check (working copies); None when `previous` holds it.
    pub(super) whole: Option<String>,
    /// What the last ingest consumed (see `Session::take_last_consumed`).
    pub(super) last_consumed: Vec<(usize, String)>,
}

/// A version the session knows (its latest as far as it knows); `tx` is the transaction at which it is known to
/// be current (None: not known yet — the next flush's transaction).
#[derive(Debug, Clone)]
pub(super) struct Known {
    pub(super) doc: Document,
    pub(super) tx: Option<i64>,
}

impl Known {
    pub(super) fn str(&self, k: &str) -> Option<&str> {
        self.doc.get(k).and_then(Value::as_str)
    }
    pub(super) fn object_type(&self) -> Option<ObjectType> {
        type_of(&self.doc)
    }
    pub(super) fn object_hash(&self) -> &str {
        self.str("object_hash").unwrap_or_default()
    }
    pub(super) fn is_stub(&self) -> bool {
        self.object_type() == Some(ObjectType::File) && self.str("state") == Some("stub")
    }
    pub(super) fn source(&self) -> Option<FilesystemSource> {
        self.doc.get("source").and_then(FilesystemSource::from_json)
    }
}

/// Live chat state: turns plus what is derived from them incrementally.
#[derive(Debug, Default)]
pub(super) struct ChatState {
    pub(super) turns: Vec<Turn>,
    /// Position of each turn's start in the flattened turns (see
    /// [`paged`]): the turn start, then its messages.
    pub(super) turn_start: Vec<usize>,
    /// Flattened positions changed in place since the last chat write.
    pub(super) changed: Vec<usize>,
    /// Rendered chat messages (toolcall_refs), serialised, append-only.
    pub(super) rendered: ChatJson,
    /// Assistant messages with unresolved tool calls:
    /// (rendered index, turn, message index).
    pub(super) open: Vec<(usize, usize, usize)>,
    /// Unresolved tool calls by harness id, oldest first:
    /// (turn, message index, call position).
    pub(super) pending_calls: HashMap<String, VecDeque<(usize, usize, usize)>>,
    /// Tool results seen per harness id (repeats get `:2`, `:3` …).
    pub(super) call_counts: HashMap<String, u32>,
    /// Harness id → toolcall object ids, oldest first.
    pub(super) by_call_id: HashMap<String, Vec<String>>,
    pub(super) toolcall_refs: Vec<String>,
}

impl ChatState {
    pub(super) fn push_turn(&mut self, turn: Turn) {
        self.turn_start.push(self.flat_len());
        self.turns.push(turn);
    }

    /// Appends a message to the last turn: its position.
    pub(super) fn push_message(
        &mut self,
        entry: crate::context::chat::MessageEntry,
    ) -> (usize, usize) {
        let t = self.turns.len() - 1;
        let msgs = &mut self.turns[t].messages;
        msgs.push(entry);
        (t, msgs.len() - 1)
    }

    /// A message to change in place (its page is written again).
    pub(super) fn message_mut(
        &mut self,
        t: usize,
        m: usize,
    ) -> &mut crate::context::chat::MessageEntry {
        self.changed.push(self.turn_start[t] + 1 + m);
        &mut self.turns[t].messages[m]
    }

    /// Length of the flattened turns.
    pub(super) fn flat_len(&self) -> usize {
        match (self.turn_start.last(), self.turns.last()) {
            (Some(s), Some(t)) => s + 1 + t.messages.len(),
            _ => 0,
        }
    }

    /// After replacing `turns` wholesale.
    pub(super) fn reindex(&mut self) {
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
pub(super) struct Pending {
    /// Every object version queued (content objects and the system prompt),
    /// oldest first per object: an outage keeps each version, not only the
    /// last (history is never erased).
    pub(super) versions: VersionQueue,
    pub(super) session: bool,
    pub(super) chat: bool,
}

impl Pending {
    pub(super) fn is_empty(&self) -> bool {
        self.versions.is_empty() && !self.session && !self.chat
    }
}

/// Object versions waiting to be written, in the order they were queued.
/// Only a version identical to the one queued just before it (same
/// `object_hash`) is merged into it: A, B, A stays three versions.
#[derive(Debug, Default)]
pub(crate) struct VersionQueue {
    /// Ids in the order their first queued version was queued.
    pub(super) ids: OrderedSet,
    pub(super) by_id: HashMap<String, Queued>,
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
    pub(super) fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Queues `doc` as the newest version of `id`; `base` is the version it
    /// was derived from (used when nothing of `id` is queued yet).
    pub(super) fn push(&mut self, id: &str, doc: Document, base: Option<Document>) {
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
    pub(super) fn refresh(&mut self, id: &str, doc: &Document) {
        if let Some(last) = self.by_id.get_mut(id).and_then(|q| q.docs.last_mut()) {
            if last.get("object_hash") == doc.get("object_hash") {
                *last = doc.clone();
            }
        }
    }

    /// Puts `older` (a failed write's versions, per id oldest first) before
    /// what was queued since; an id's base is then the older write's.
    pub(super) fn prepend(&mut self, older: Vec<Queued>) {
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
    pub(super) fn take(&mut self) -> Vec<Queued> {
        let mut by_id = std::mem::take(&mut self.by_id);
        let ids = std::mem::take(&mut self.ids);
        ids.iter().filter_map(|id| by_id.remove(id)).collect()
    }
}

pub(super) struct WatchState {
    pub(super) watcher: Watcher,
    pub(super) rx: Receiver<WatchEvent>,
    pub(super) tracked: HashSet<String>,
    /// Per file object: when this session last began reading it itself. A
    /// watcher report read before that is older than what the session holds.
    pub(super) read_at: HashMap<String, std::time::Instant>,
}
