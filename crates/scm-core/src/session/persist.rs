//! Persistence batching: everything an operation or a model call changed is
//! queued and written in **one** transaction by the next flush.
//!
//! The chat and session documents are written **paged** ([`super::paged`]):
//! a flush puts the pages that changed since the last write that landed
//! (normally the tail page of each growing part) and the two small heads,
//! so what a flush writes grows with what changed, not with history.
//! Which pages changed: appends are seen from the lengths; in-place changes
//! are marked where they happen (a message whose tool calls got their
//! results, a record that got its basis transaction, a removal from a set),
//! except for the cache layout's state, which is compared page by page with
//! a copy of what was written (its items are small).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::{Map, Value};

use super::documents::ChatCursor;
use super::paged::{Draft, PagedDesc, PartPages, PartWrite};
use super::{Queued, Session};
#[cfg(debug_assertions)]
use crate::context::cache_layout::{EpochRecord, FileEntry, FoldRecord};
use crate::context::chat::Turn;
#[cfg(debug_assertions)]
use crate::context::epochs::ToolCallState;
use crate::error::{Error, Result};
use crate::fs::indexer::Indexer;
use crate::model::{assigned_document, FilesystemSource, ObjectType};
use crate::store::{Document, Store, TxOp, TxReceipt};

/// Paged parts of the chat document.
pub(super) const CHAT_PARTS: [&str; 9] = [
    "turns",
    "toolcall_refs",
    "model_calls",
    "aliases.t",
    "aliases.f",
    "layout.calls",
    "layout.files",
    "layout.epochs",
    "layout.folds",
];
/// Paged parts of the session document.
pub(super) const SESSION_PARTS: [&str; 5] = [
    "session_index",
    "metadata_pool",
    "active_set",
    "pinned_set",
    "recent_use",
];

/// The cache layout's state as last written: debug builds check against it
/// that every in-place change was reported ([`Changed`]).
#[cfg(debug_assertions)]
#[derive(Debug, Default)]
struct LastWritten {
    t: Vec<Option<String>>,
    f: Vec<String>,
    calls: Vec<ToolCallState>,
    files: Vec<FileEntry>,
    epochs: Vec<EpochRecord>,
    folds: Vec<FoldRecord>,
}

/// What the store holds of each paged part.
#[derive(Debug, Default)]
pub(super) struct StoredPages {
    parts: BTreeMap<&'static str, PartPages>,
    #[cfg(debug_assertions)]
    last_written: LastWritten,
    /// Write numbers of the heads in the store (see [`paged`]).
    chat_seq: u64,
    session_seq: u64,
}

impl StoredPages {
    fn book(&mut self, part: &'static str) -> &mut PartPages {
        self.parts.entry(part).or_default()
    }

    /// Model call record `i` changed.
    pub(super) fn mark_record(&mut self, i: usize) {
        self.book("model_calls").mark(i);
    }

    /// The books of a resumed session: its heads' descriptors, and the cache
    /// state as stored (`chat`: the materialised chat document). Heads
    /// written unpaged give empty books: the first flush writes every page.
    pub(super) fn restored(
        session_head: Option<&PagedDesc>,
        chat_head: Option<&PagedDesc>,
        chat: Option<&Document>,
    ) -> StoredPages {
        let mut b = StoredPages::default();
        for (desc, parts) in [
            (session_head, &SESSION_PARTS[..]),
            (chat_head, &CHAT_PARTS[..]),
        ] {
            let Some(desc) = desc else { continue };
            if parts.len() == CHAT_PARTS.len() {
                b.chat_seq = desc.seq;
            } else {
                b.session_seq = desc.seq;
            }
            for p in parts {
                b.parts.insert(p, PartPages::from_desc(desc.parts.get(*p)));
            }
        }
        #[cfg(not(debug_assertions))]
        let _ = chat;
        #[cfg(debug_assertions)]
        if let (Some(_), Some(chat)) = (chat_head, chat) {
            let chat = super::documents::ChatDoc::parse(chat).unwrap_or_default();
            let s = &mut b.last_written;
            if let Some(a) = chat.aliases {
                (s.t, s.f) = (a.t, a.f);
            }
            if let Some(l) = chat.layout {
                (s.calls, s.files, s.epochs, s.folds) = (l.calls, l.files, l.epochs, l.folds);
            }
        }
        b
    }
}

/// The next write number of a head: above the last one and, so that a
/// head rewritten by something else (a store written before paging, then
/// paged again) never reuses a number its old pages carry, at least the
/// wall clock in microseconds.
fn next_seq(last: u64) -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64);
    (last + 1).max(now)
}

/// Item `i` of the flattened turns: a turn start `{index, user}` or a message.
fn flat_item(turns: &[Turn], starts: &[usize], i: usize) -> Value {
    let t = starts.partition_point(|&s| s <= i) - 1;
    let turn = &turns[t];
    match i - starts[t] {
        0 => {
            let mut v = serde_json::json!({"index": turn.index});
            v["user"] = serde_json::to_value(&turn.user).unwrap_or(Value::Null);
            v
        }
        m => serde_json::to_value(&turn.messages[m - 1]).unwrap_or(Value::Null),
    }
}

fn to_values<T: serde::Serialize>(items: &[T]) -> impl Fn(usize) -> Value + '_ {
    move |i| serde_json::to_value(&items[i]).unwrap_or(Value::Null)
}

/// Writes taken out of a session, to submit without holding the session.
///
/// Normally one transaction. When an object has several queued versions (it
/// changed more than once while the store was unreachable), each version
/// needs a transaction of its own, since a later put of the same id in one
/// transaction replaces the earlier one in both stores: the versions go in
/// rounds, oldest first, each object's newest version in the last round
/// together with the chat and session heads.
///
/// A file version is a compare-and-set on the version it was derived from
/// (issue 14): a version read while the store was unreachable must not land
/// over a newer one another agent committed meanwhile. When a round aborts
/// on such a conflict, each conflicting file is re-based on the disk
/// ([`Indexer::reconcile`]: its current state, compare-and-set on the
/// store's latest), its queued versions not yet written are dropped, and
/// the round goes again without them.
#[derive(Debug)]
pub struct PendingWrite {
    /// Every object's queued versions (oldest first) and their base.
    queued: Vec<Queued>,
    /// Rounds (transactions) in all, and how many have landed.
    rounds: usize,
    landed: usize,
    /// The heads and pages, sealed by `submit` into the last round.
    drafts: Vec<Draft>,
    sealed: Option<Vec<Document>>,
    /// (id, object_hash) of each object's newest version queued.
    written: Vec<(String, String)>,
    /// The paged parts this write puts, and the heads' write numbers.
    parts: Vec<PartWrite>,
    chat_seq: Option<u64>,
    session_seq: Option<u64>,
    session: bool,
    chat: bool,
    /// Model call records covered by this write.
    records: usize,
    /// Re-bases conflicting files on the disk.
    indexer: Arc<Indexer>,
    /// Files whose queued versions lost their compare-and-set: the round
    /// from which their versions were dropped.
    dropped: HashMap<String, usize>,
    /// What re-basing them recorded: the latest version, and its tx when
    /// this write made it.
    rebased: Vec<(Document, Option<i64>)>,
    /// The receipt of the last version re-basing wrote.
    rebase_receipt: Option<TxReceipt>,
    /// Per file, how many of its leading queued versions a conflict found
    /// already in the store (a write that landed although its submit
    /// reported a failure): they are not written again.
    in_store: HashMap<String, usize>,
    /// The heads this write puts, each with the version it must replace
    /// (see `Writes::heads`): matched in the final round.
    head_guards: Vec<HeadGuard>,
}

/// A head this write puts and the version it must replace.
#[derive(Debug)]
struct HeadGuard {
    id: String,
    expected: Option<Document>,
    /// This session's own heads from writes that failed: one may have
    /// landed although its submit reported the failure.
    earlier: Vec<Document>,
}

/// Aborted attempts of one round before every guarded file of it is
/// re-based, whether or not its conflict could be seen (bounded: each abort
/// means another writer committed one of the round's files).
const ROUND_ATTEMPTS: usize = 4;

fn is_file(doc: &Document) -> bool {
    crate::model::type_of(doc) == Some(ObjectType::File)
}

impl PendingWrite {
    /// Round `r`: version k of an object with n versions goes in round
    /// `rounds - n + k`; a file version comes with its guard (the version
    /// before it, or the base), except for files dropped by then.
    fn round_ops(&self, r: usize) -> (Vec<TxOp>, Vec<(String, Option<Document>)>) {
        let mut ops = Vec::new();
        let mut guards = Vec::new();
        for q in &self.queued {
            let first = self.rounds - q.docs.len();
            if r < first || self.dropped.get(&q.id).is_some_and(|&d| r >= d) {
                continue;
            }
            let k = r - first;
            if k < self.in_store.get(&q.id).copied().unwrap_or(0) {
                continue;
            }
            let doc = &q.docs[k];
            if is_file(doc) {
                let expected = if k == 0 {
                    q.base.clone()
                } else {
                    Some(q.docs[k - 1].clone())
                };
                ops.push(TxOp::Match {
                    id: q.id.clone(),
                    expected: expected.clone(),
                });
                guards.push((q.id.clone(), expected));
            }
            ops.push(TxOp::Put(doc.clone()));
        }
        (ops, guards)
    }

    /// Submits every round not submitted yet, in order; the receipt is the
    /// last round's. After a failure, the rounds that landed stay landed
    /// ([`Session::restore_pending`] re-queues only the others).
    pub async fn submit(&mut self, store: &dyn Store) -> Result<TxReceipt> {
        let mut last = None;
        while self.landed < self.rounds {
            let r = self.landed;
            let final_round = r + 1 == self.rounds;
            if final_round && self.sealed.is_none() {
                self.sealed = Some(
                    std::mem::take(&mut self.drafts)
                        .into_iter()
                        .map(Draft::seal)
                        .collect(),
                );
            }
            let mut attempts = 0;
            let receipt = loop {
                let (mut ops, guards) = self.round_ops(r);
                if final_round {
                    ops.extend(self.head_guards.iter().map(|g| TxOp::Match {
                        id: g.id.clone(),
                        expected: g.expected.clone(),
                    }));
                    ops.extend(self.sealed.iter().flatten().cloned().map(TxOp::Put));
                }
                if ops.is_empty() {
                    break None;
                }
                let receipt = store.submit(ops).await?;
                if receipt.committed {
                    break Some(receipt);
                }
                if final_round && self.check_heads(store).await? {
                    attempts += 1;
                    if attempts >= ROUND_ATTEMPTS {
                        return Err(Error::Internal(
                            "session write aborted again after its heads were re-read".into(),
                        ));
                    }
                    continue;
                }
                if guards.is_empty() {
                    return Err(Error::Internal(
                        "session write aborted although it has no match guard".into(),
                    ));
                }
                attempts += 1;
                self.rebase_conflicts(store, r, guards, attempts >= ROUND_ATTEMPTS)
                    .await?;
            };
            self.landed += 1;
            if receipt.is_some() {
                last = receipt;
            }
        }
        match last {
            Some(r) => Ok(r),
            // Every version lost its compare-and-set and there were no heads:
            // what was written is what re-basing wrote.
            None => match self.rebase_receipt.clone() {
                Some(r) => Ok(r),
                None => Ok(TxReceipt {
                    tx_id: store.latest_tx_id().await?.unwrap_or(0),
                    tx_time: crate::commits::now_rfc3339(),
                    committed: true,
                }),
            },
        }
    }

    /// The heads this write puts (sealed with its final round), by id.
    fn written_heads(&self) -> impl Iterator<Item = (&str, &Document)> {
        self.head_guards.iter().filter_map(|g| {
            let doc = self
                .sealed
                .iter()
                .flatten()
                .find(|d| d.get(crate::store::ID_KEY).and_then(Value::as_str) == Some(&g.id))?;
            Some((g.id.as_str(), doc))
        })
    }

    /// After the final round aborted, its heads: each must be the version
    /// it replaces, or one of this session's own from a write whose submit
    /// reported a failure although it landed — then the guard moves to it
    /// and the round is tried again (true). Any other version is another
    /// instance's: it owns the session now (`SESSION_SUPERSEDED`). False:
    /// the heads are as expected (a file's guard failed).
    async fn check_heads(&mut self, store: &dyn Store) -> Result<bool> {
        let mut moved = false;
        for g in &mut self.head_guards {
            let latest = store.get(&g.id).await?;
            if latest == g.expected {
                continue;
            }
            match latest {
                Some(l) if g.earlier.contains(&l) => {
                    g.expected = Some(l);
                    moved = true;
                }
                _ => {
                    let sid = g.id.split_once(':').map_or(g.id.as_str(), |(_, s)| s);
                    return Err(Error::SessionSuperseded(sid.to_string()));
                }
            }
        }
        Ok(moved)
    }

    /// After round `r` aborted: for each guarded file whose latest version
    /// is not the one its write was derived from (every guarded file when
    /// `all`), either that latest version is one of this write's own (same
    /// `object_hash`: a write that landed although its submit reported a
    /// failure — the versions up to it are in the store, the next one is
    /// derived from it), or it is another writer's: the file is re-based on
    /// the disk and dropped from this write.
    async fn rebase_conflicts(
        &mut self,
        store: &dyn Store,
        r: usize,
        guards: Vec<(String, Option<Document>)>,
        all: bool,
    ) -> Result<()> {
        let hash = |d: &Document| d.get("object_hash").cloned();
        for (id, expected) in guards {
            let latest = store.get(&id).await?;
            if !all && latest == expected {
                continue;
            }
            let Some(qi) = self.queued.iter().position(|q| q.id == id) else {
                continue;
            };
            let q = &mut self.queued[qi];
            // The chain: base, then the queued versions; this round wrote
            // version k, guarded by chain[k].
            let k = r - (self.rounds - q.docs.len());
            let ours = latest.as_ref().and_then(|l| {
                (k..=q.docs.len()).find(|&p| {
                    let c = if p == 0 {
                        q.base.as_ref()
                    } else {
                        q.docs.get(p - 1)
                    };
                    c.is_some_and(|c| hash(c) == hash(l))
                })
            });
            if let (Some(p), Some(l)) = (ours, latest) {
                if !all || p > k {
                    tracing::info!(object_id = %id, versions = p, "queued file versions found in the store already");
                    if p == 0 {
                        q.base = Some(l);
                    } else {
                        q.docs[p - 1] = l;
                    }
                    self.in_store.insert(id, p);
                    continue;
                }
            }
            let source = q
                .docs
                .last()
                .and_then(|d| d.get("source"))
                .and_then(FilesystemSource::from_json);
            let Some(source) = source else {
                return Err(Error::Internal(format!(
                    "queued file version {id} has no source"
                )));
            };
            tracing::info!(
                object_id = %id,
                "queued file version derived from an older one than the store's latest: re-based on the disk"
            );
            let done = self.indexer.reconcile(&source).await?;
            self.dropped.insert(id, r);
            self.rebased
                .push((done.doc, done.receipt.as_ref().map(|rc| rc.tx_id)));
            if done.receipt.is_some() {
                self.rebase_receipt = done.receipt;
            }
        }
        Ok(())
    }

    /// Documents this write puts.
    pub fn op_count(&self) -> usize {
        self.queued.iter().map(|q| q.docs.len()).sum::<usize>() + self.drafts.len()
    }

    /// Transactions this write takes (1 unless an object has several
    /// queued versions).
    pub fn tx_count(&self) -> usize {
        self.rounds
    }

    /// Page documents among them (see [`super::paged`]).
    pub fn page_count(&self) -> usize {
        self.parts.iter().map(|w| w.pages.len()).sum()
    }
}

impl Session {
    /// The session head and its changed pages; the head's write number.
    fn session_write(&mut self, docs: &mut Vec<Draft>, parts: &mut Vec<PartWrite>) -> u64 {
        let head = self.ids.session.clone();
        let seq = next_seq(self.writes.paged.session_seq);
        let mut desc = PagedDesc {
            seq,
            parts: BTreeMap::new(),
        };
        for (part, set) in [
            ("session_index", &mut self.sets.index),
            ("metadata_pool", &mut self.sets.pool),
            ("active_set", &mut self.sets.active),
            ("pinned_set", &mut self.sets.pinned),
        ] {
            let book = self.writes.paged.parts.entry(part).or_default();
            if let Some(from) = set.take_changed_from() {
                book.mark_from(from, set.len());
            }
            let items = set.as_slice();
            let w = book.write(&head, part, items.len(), seq, to_values(items), docs);
            desc.parts.insert(part.to_string(), w.desc.clone());
            parts.push(w);
        }
        // The collapse window (descriptive, unhashed), so a resumed session
        // keeps collapsing exactly where it left off: flattened, as the
        // current turn's uses grow with it.
        let book = self.writes.paged.parts.entry("recent_use").or_default();
        if let Some(from) = self.uses.take_changed_from() {
            book.mark_from(from, self.uses.flat_len());
        }
        let uses = &self.uses;
        let w = book.write(
            &head,
            "recent_use",
            uses.flat_len(),
            seq,
            |i| {
                uses.flat(i)
                    .map_or(Value::Null, |(t, id)| serde_json::json!([t, id]))
            },
            docs,
        );
        desc.parts.insert("recent_use".into(), w.desc.clone());
        parts.push(w);
        let mut f = Map::new();
        f.insert("session_id".into(), self.options.session_id.clone().into());
        f.insert("chat_ref".into(), self.ids.chat.clone().into());
        f.insert(
            "system_prompt_ref".into(),
            self.ids.system_prompt.clone().into(),
        );
        let doc = assigned_document(&head, ObjectType::Session, None, f);
        docs.push(Draft::Head {
            doc,
            ty: ObjectType::Session,
            desc,
        });
        seq
    }

    /// The chat head and its changed pages; the head's write number.
    fn chat_write(&mut self, docs: &mut Vec<Draft>, parts: &mut Vec<PartWrite>) -> u64 {
        let head = self.ids.chat.clone();
        // The layout state's other (small) fields stay in the head.
        let layout = {
            let s = &mut self.cache.state;
            let taken = (
                std::mem::take(&mut s.calls),
                std::mem::take(&mut s.files),
                std::mem::take(&mut s.epochs),
                std::mem::take(&mut s.folds),
            );
            let mut v = serde_json::to_value(&*s).unwrap_or(Value::Null);
            (s.calls, s.files, s.epochs, s.folds) = taken;
            if let Some(m) = v.as_object_mut() {
                for k in ["calls", "files", "epochs", "folds"] {
                    m.remove(k);
                }
            }
            v
        };
        let books = &mut self.writes.paged;
        let seq = next_seq(books.chat_seq);
        let chat = &mut self.chat;
        let cache = &mut self.cache;
        let mut out: Vec<PartWrite> = Vec::new();

        let book = books.parts.entry("turns").or_default();
        for i in chat.changed.drain(..) {
            book.mark(i);
        }
        let (turns, starts) = (&chat.turns, &chat.turn_start);
        out.push(book.write(
            &head,
            "turns",
            chat.flat_len(),
            seq,
            |i| flat_item(turns, starts, i),
            docs,
        ));
        let refs = &chat.toolcall_refs;
        let book = books.parts.entry("toolcall_refs").or_default();
        out.push(book.write(
            &head,
            "toolcall_refs",
            refs.len(),
            seq,
            to_values(refs),
            docs,
        ));
        let book = books.parts.entry("model_calls").or_default();
        out.push(book.write(
            &head,
            "model_calls",
            self.records.model_calls.len(),
            seq,
            to_values(&self.records.model_calls),
            docs,
        ));

        // The layout's lists: the items it changed in place, and appends.
        let changed = std::mem::take(&mut cache.changed);
        let none = std::collections::BTreeSet::<u32>::new();
        macro_rules! layout_part {
            ($part:literal, $items:expr, $changed:expr, $last:ident) => {{
                let items = &$items;
                let book = books.parts.entry($part).or_default();
                if changed.all {
                    book.mark_from(0, items.len());
                }
                for &i in $changed {
                    book.mark(i as usize);
                }
                #[cfg(debug_assertions)]
                for k in super::paged::diff_last_written(items, &mut books.last_written.$last) {
                    let book = &books.parts[$part];
                    assert!(
                        book.will_write(k, items.len()),
                        "{}: page {k} changed in place unreported",
                        $part
                    );
                }
                let book = books.parts.get_mut($part).expect("just inserted");
                out.push(book.write(&head, $part, items.len(), seq, to_values(items), docs));
            }};
        }
        layout_part!("aliases.t", cache.aliases.t, &changed.alias_t, t);
        layout_part!("aliases.f", cache.aliases.f, &none, f);
        layout_part!("layout.calls", cache.state.calls, &changed.calls, calls);
        layout_part!("layout.files", cache.state.files, &changed.files, files);
        layout_part!("layout.epochs", cache.state.epochs, &changed.epochs, epochs);
        layout_part!("layout.folds", cache.state.folds, &none, folds);

        let desc = PagedDesc {
            seq,
            parts: out
                .iter()
                .map(|w| (w.part.to_string(), w.desc.clone()))
                .collect(),
        };
        let mut f = Map::new();
        f.insert("session_ref".into(), self.ids.session.clone().into());
        f.insert("turn_count".into(), chat.turns.len().into());
        let mut doc = assigned_document(&head, ObjectType::Chat, Some(String::new()), f);
        // Descriptive (unhashed): the cursor and the cache layout's state.
        doc.insert(
            "cursor".into(),
            serde_json::to_value(ChatCursor {
                consumed: self.cursor.consumed,
                last_fp: self.cursor.last_fp.clone(),
                first_head: self.cursor.first_head.clone(),
            })
            .expect("serialisable"),
        );
        doc.insert("layout".into(), layout);
        docs.push(Draft::Head {
            doc,
            ty: ObjectType::Chat,
            desc,
        });
        parts.extend(out);
        seq
    }

    /// Takes every queued write (see [`PendingWrite`]).
    pub fn take_pending(&mut self) -> Option<PendingWrite> {
        // A read-only session (`open_read_only`) never writes.
        if self.writes.pending.is_empty() || self.read_only {
            return None;
        }
        let mut pending = std::mem::take(&mut self.writes.pending);
        let queued = pending.versions.take();
        let rounds = queued.iter().map(|q| q.docs.len()).max().unwrap_or(1);
        let written = queued
            .iter()
            .filter_map(|q| {
                let hash = q.docs.last()?.get("object_hash")?.as_str()?;
                Some((q.id.clone(), hash.to_string()))
            })
            .collect();
        let mut docs = Vec::new();
        let mut parts = Vec::new();
        let chat_seq = pending.chat.then(|| self.chat_write(&mut docs, &mut parts));
        let session_seq = pending
            .session
            .then(|| self.session_write(&mut docs, &mut parts));
        let head_guards = [
            (pending.chat, &self.ids.chat),
            (pending.session, &self.ids.session),
        ]
        .into_iter()
        .filter(|(written, _)| *written)
        .filter_map(|(_, id)| {
            Some(HeadGuard {
                id: id.clone(),
                expected: self.writes.heads.get(id)?.clone(),
                earlier: self
                    .writes
                    .failed_heads
                    .get(id)
                    .cloned()
                    .unwrap_or_default(),
            })
        })
        .collect();
        Some(PendingWrite {
            queued,
            rounds,
            landed: 0,
            drafts: docs,
            sealed: None,
            written,
            parts,
            chat_seq,
            session_seq,
            session: pending.session,
            chat: pending.chat,
            records: self.records.model_calls.len(),
            indexer: self.indexer.clone(),
            dropped: HashMap::new(),
            rebased: Vec::new(),
            rebase_receipt: None,
            in_store: HashMap::new(),
            head_guards,
        })
    }

    /// Records a landed write: the written versions are current as of it.
    pub fn apply_receipt(&mut self, pending: &PendingWrite, receipt: &TxReceipt) {
        self.writes.error = None;
        for (id, hash) in &pending.written {
            if pending.dropped.contains_key(id) {
                continue;
            }
            let cached = if *id == self.ids.system_prompt {
                self.system_prompt.as_mut()
            } else {
                self.objects.get_mut(id)
            };
            if let Some(c) = cached.filter(|c| c.object_hash() == hash) {
                c.tx = Some(receipt.tx_id);
            }
        }
        for w in &pending.parts {
            self.writes.paged.book(w.part).landed(w);
        }
        // What the store holds of the files re-based on the disk.
        for (doc, tx) in &pending.rebased {
            self.put_object(doc.clone(), *tx, false);
        }
        // The heads written are what the next write must replace.
        self.writes.failed_heads.clear();
        for (id, d) in pending.written_heads() {
            self.writes.heads.insert(id.to_string(), Some(d.clone()));
        }
        if let Some(seq) = pending.chat_seq {
            self.writes.paged.chat_seq = seq;
        }
        if let Some(seq) = pending.session_seq {
            self.writes.paged.session_seq = seq;
        }
        if pending.chat {
            for i in (0..pending.records).rev() {
                if self.records.model_calls[i].basis_tx.is_some() {
                    break;
                }
                self.records.model_calls[i].basis_tx = Some(receipt.tx_id);
                self.writes.paged.mark_record(i);
            }
        }
    }

    /// Re-queues a write that failed, so the next flush retries it: the
    /// versions of the rounds that did not land, before anything queued
    /// since.
    pub fn restore_pending(&mut self, pending: PendingWrite) {
        let (rounds, landed) = (pending.rounds, pending.landed);
        // Its heads may have landed although the submit failed: the next
        // write's guard accepts them as this session's own.
        for (id, d) in pending.written_heads() {
            let earlier = self.writes.failed_heads.entry(id.to_string()).or_default();
            earlier.push(d.clone());
        }
        // A file re-based on the disk is not queued again: its store state
        // is the disk's (what re-basing wrote goes into the cache).
        for (doc, tx) in &pending.rebased {
            self.put_object(doc.clone(), *tx, false);
        }
        let (dropped, in_store) = (&pending.dropped, &pending.in_store);
        let older = pending
            .queued
            .into_iter()
            .filter(|q| !dropped.contains_key(&q.id))
            .filter_map(|q| {
                let first = rounds - q.docs.len();
                let skip = landed
                    .saturating_sub(first)
                    .max(in_store.get(&q.id).copied().unwrap_or(0));
                // The versions that landed: the next one is derived from the last.
                let base = match skip {
                    0 => q.base,
                    n => q.docs.get(n - 1).cloned(),
                };
                (skip < q.docs.len()).then(|| Queued {
                    id: q.id,
                    base,
                    docs: q.docs.into_iter().skip(skip).collect(),
                })
            })
            .collect();
        self.writes.pending.versions.prepend(older);
        for w in &pending.parts {
            self.writes.paged.book(w.part).failed(w);
        }
        self.writes.pending.session |= pending.session;
        self.writes.pending.chat |= pending.chat;
    }
}

#[cfg(test)]
#[path = "persist_tests.rs"]
mod tests;
