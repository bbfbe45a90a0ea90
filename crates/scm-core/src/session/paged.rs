//! Paged session documents: the growing parts of `chat:<sid>` and
//! `session:<sid>` (turns, model call records, the cache layout's per-call
//! state, the session index, …) are stored as **page documents** of
//! [`PAGE_SIZE`] items, so a flush writes the pages that changed (normally
//! the tail) plus a small **head** — O(what changed), not O(history).
//!
//! - Page id: `page:<head id>:<part>:<k>` (the `page:` prefix never clashes
//!   with a head id, whatever the session id holds). A page is an assigned
//!   document of type `page`: `{of, part, page, seq, items}` and its hashes.
//! - The head is the `chat:<sid>` / `session:<sid>` document without its
//!   paged arrays, plus `paged: {seq, parts: {<part>: {len, pages}}}`;
//!   `seq` counts the head's writes, and every page records the `seq` of
//!   the write that put it. Head and its changed pages go in one
//!   transaction, so the version of page `k` that belongs to a head is the
//!   newest one with `seq ≤` the head's: a reader fetches the newest pages
//!   in one round trip and reads only the few written after the head (the
//!   tail, a page an epoch changed) as of the head's transaction. The head
//!   stays O(number of parts): no page list.
//! - A part named `a.b` is field `b` of the object field `a` (`layout.calls`
//!   is `layout.calls`); the part `turns` holds the flattened turns: a turn
//!   start `{index, user}` followed by the turn's messages (they have a
//!   `role`), because one turn can hold hundreds of messages and only the
//!   last few change; `recent_use` (the collapse window) holds `[turn, id]`
//!   pairs for the same reason.
//!
//! [`get`], [`get_many`], [`get_as_of`] and [`history`] read any object and
//! **materialise** a paged head into the one document earlier versions
//! stored (same fields, hashes over the whole document as the spec defines
//! them), so readers see the spec's chat and session objects. A head without
//! `paged` (written by an earlier version) is returned as it is.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::model::hashing;
use crate::model::{seal, type_of, ObjectType};
use crate::store::{AsOf, Document, Store, Version, ID_KEY};

/// Items per page. A flush rewrites the tail page of each growing part, so
/// the page size is the write's constant: measured (tests/write_volume.rs,
/// 400 calls) 8 → 12 KB per flush, 16 → 16 KB, 32 → 24 KB, 64 → 40 KB;
/// smaller pages mean more documents to read back.
pub const PAGE_SIZE: usize = 16;
/// The head's descriptor field.
pub const PAGED_KEY: &str = "paged";
/// `type` of a page document.
pub const PAGE_TYPE: &str = "page";
const HASH_KEYS: [&str; 4] = [
    "identity_hash",
    "content_hash",
    "metadata_hash",
    "object_hash",
];

pub fn page_id(head: &str, part: &str, k: usize) -> String {
    format!("page:{head}:{part}:{k}")
}

/// Pages needed for `n` items.
pub fn pages_for(n: usize) -> usize {
    n.div_ceil(PAGE_SIZE)
}

/// What a head says about one part.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartDesc {
    /// Items.
    pub len: usize,
    /// Pages (`len` items of [`PAGE_SIZE`]).
    pub pages: usize,
}

/// A head's `paged` field.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PagedDesc {
    /// This head's write number (1, 2, …).
    pub seq: u64,
    pub parts: BTreeMap<String, PartDesc>,
}

impl PagedDesc {
    /// The descriptor of a chat or session head (None: not paged).
    pub fn of(doc: &Document) -> Option<PagedDesc> {
        if !matches!(type_of(doc), Some(ObjectType::Chat | ObjectType::Session)) {
            return None;
        }
        serde_json::from_value(doc.get(PAGED_KEY)?.clone()).ok()
    }
}

/// Number of items of `part` a head (or an unpaged document) holds, without
/// reading its pages: `model_calls` for the basis of a record.
pub fn part_len(doc: &Document, part: &str) -> Option<usize> {
    match PagedDesc::of(doc) {
        Some(d) => d.parts.get(part).map(|p| p.len),
        None => field_at(doc, part).and_then(Value::as_array).map(Vec::len),
    }
}

/// The last item of `part` of a head (or an unpaged document): one page
/// read, the newest version of the tail page. Items are appended, so the
/// item at that place is the head's even if a later write has landed since.
pub async fn last_item(store: &dyn Store, doc: &Document, part: &str) -> Result<Option<Value>> {
    let Some(desc) = PagedDesc::of(doc) else {
        return Ok(field_at(doc, part)
            .and_then(Value::as_array)
            .and_then(|a| a.last().cloned()));
    };
    let Some(len) = desc.parts.get(part).map(|p| p.len).filter(|&n| n > 0) else {
        return Ok(None);
    };
    let id = page_id(&head_id(doc), part, (len - 1) / PAGE_SIZE);
    Ok(store
        .get(&id)
        .await?
        .and_then(|mut page| match page.remove("items") {
            Some(Value::Array(mut items)) => {
                let i = (len - 1) % PAGE_SIZE;
                (i < items.len()).then(|| items.swap_remove(i))
            }
            _ => None,
        }))
}

fn field_at<'a>(doc: &'a Document, part: &str) -> Option<&'a Value> {
    match part.split_once('.') {
        Some((a, b)) => doc.get(a)?.get(b),
        None => doc.get(part),
    }
}

/// A page document: storage of a head, not an object of the model, so it
/// carries only the hashes that verify it (`metadata_hash` over `{of, part,
/// page, seq, items}`, `object_hash` as for any assigned object).
pub fn page_doc(head: &str, part: &str, k: usize, seq: u64, items: Vec<Value>) -> Document {
    let mut doc = Map::new();
    doc.insert("of".into(), head.into());
    doc.insert("part".into(), part.into());
    doc.insert("page".into(), k.into());
    doc.insert("seq".into(), seq.into());
    doc.insert("items".into(), Value::Array(items));
    let metadata_hash = hashing::metadata_hash(&Value::Object(doc.clone()));
    let object_hash = hashing::object_hash(None, None, &metadata_hash);
    doc.insert(ID_KEY.into(), page_id(head, part, k).into());
    doc.insert("type".into(), PAGE_TYPE.into());
    doc.insert("metadata_hash".into(), metadata_hash.into());
    doc.insert("object_hash".into(), object_hash.into());
    doc
}

/// A document of a write, hashed when the write is submitted rather than
/// when it is taken out of the session: hashing is most of a flush's CPU,
/// and taking happens under the session's lock, which the next
/// `transformContext` waits for.
#[derive(Debug, Clone)]
pub enum Draft {
    Page {
        head: String,
        part: &'static str,
        page: usize,
        seq: u64,
        items: Vec<Value>,
    },
    Head {
        doc: Document,
        ty: ObjectType,
        desc: PagedDesc,
    },
}

impl Draft {
    pub fn seal(self) -> Document {
        match self {
            Draft::Page {
                head,
                part,
                page,
                seq,
                items,
            } => page_doc(&head, part, page, seq, items),
            Draft::Head { doc, ty, desc } => seal_head(doc, ty, &desc),
        }
    }
}

fn page_seq(doc: &Document) -> Option<u64> {
    doc.get("seq").and_then(Value::as_u64)
}

/// Seals a head: the type's metadata fields it holds plus its descriptor
/// enter `metadata_hash`.
pub fn seal_head(mut doc: Document, ty: ObjectType, desc: &PagedDesc) -> Document {
    let desc = serde_json::to_value(desc).unwrap_or(Value::Null);
    doc.insert(PAGED_KEY.into(), desc.clone());
    let mut doc = seal(doc, ty);
    let mut fields = Map::new();
    for f in ty.metadata_fields() {
        if let Some(v) = doc.get(*f) {
            fields.insert((*f).to_string(), v.clone());
        }
    }
    fields.insert(PAGED_KEY.into(), desc);
    let metadata_hash = hashing::metadata_hash(&Value::Object(fields));
    let content_hash = doc
        .get("content_hash")
        .and_then(Value::as_str)
        .map(str::to_string);
    let object_hash = hashing::object_hash(None, content_hash.as_deref(), &metadata_hash);
    doc.insert("metadata_hash".into(), metadata_hash.into());
    doc.insert("object_hash".into(), object_hash.into());
    doc
}

// ------------------------------------------------------------- writing

/// The writer's view of one part: what the store holds (as of the last
/// write that landed) and which pages changed since.
#[derive(Debug, Default, Clone)]
pub struct PartPages {
    /// Items and pages in the store.
    pub stored: PartDesc,
    /// Pages changed in place since they were written.
    marks: BTreeSet<usize>,
}

/// The pages of one part a write puts, and the descriptor it writes.
#[derive(Debug, Clone)]
pub struct PartWrite {
    pub part: &'static str,
    pub desc: PartDesc,
    pub pages: Vec<usize>,
}

impl PartPages {
    pub fn from_desc(desc: Option<&PartDesc>) -> PartPages {
        PartPages {
            stored: desc.cloned().unwrap_or_default(),
            marks: BTreeSet::new(),
        }
    }

    /// Item `i` changed in place.
    pub fn mark(&mut self, i: usize) {
        self.marks.insert(i / PAGE_SIZE);
    }

    /// Items from `i` on changed (a removal shifted them).
    pub fn mark_from(&mut self, i: usize, n: usize) {
        for k in i / PAGE_SIZE..pages_for(n) {
            self.marks.insert(k);
        }
    }

    /// Whether the next write of `n` items puts page `k`.
    #[cfg(debug_assertions)]
    pub fn will_write(&self, k: usize, n: usize) -> bool {
        self.marks.contains(&k)
            || (n != self.stored.len && k >= self.stored.len.min(n) / PAGE_SIZE)
            || k >= self.stored.pages
    }

    /// Pages to write for `n` items now: the marked ones and every page
    /// holding items the store does not have. Takes the marks.
    fn take_dirty(&mut self, n: usize) -> Vec<usize> {
        let total = pages_for(n);
        let mut out: BTreeSet<usize> = std::mem::take(&mut self.marks)
            .into_iter()
            .filter(|&k| k < total)
            .collect();
        if n != self.stored.len {
            out.extend(self.stored.len.min(n) / PAGE_SIZE..total);
        }
        // Pages the store lacks (the head said fewer).
        out.extend(self.stored.pages.min(total)..total);
        out.into_iter().collect()
    }

    /// Puts the page documents of the pages to write into `docs` (`item(i)`
    /// serialises item `i`); `seq` is the head write they belong to.
    pub fn write(
        &mut self,
        head: &str,
        part: &'static str,
        n: usize,
        seq: u64,
        item: impl Fn(usize) -> Value,
        docs: &mut Vec<Draft>,
    ) -> PartWrite {
        let pages = self.take_dirty(n);
        for &k in &pages {
            let items: Vec<Value> = (k * PAGE_SIZE..((k + 1) * PAGE_SIZE).min(n))
                .map(&item)
                .collect();
            docs.push(Draft::Page {
                head: head.to_string(),
                part,
                page: k,
                seq,
                items,
            });
        }
        PartWrite {
            part,
            desc: PartDesc {
                len: n,
                pages: pages_for(n),
            },
            pages,
        }
    }

    /// The write landed.
    pub fn landed(&mut self, w: &PartWrite) {
        self.stored = w.desc.clone();
    }

    /// The write failed: its pages go again with the next one.
    pub fn failed(&mut self, w: &PartWrite) {
        self.marks.extend(w.pages.iter().copied());
    }
}

/// The pages where `items` differ from `last` (the items as last
/// written); brings `last` up to date. Debug builds check with it that
/// the cache layout reported every change it made in place.
#[cfg(debug_assertions)]
pub fn diff_last_written<T: PartialEq + Clone>(items: &[T], last: &mut Vec<T>) -> Vec<usize> {
    let common = items.len().min(last.len());
    let mut pages = Vec::new();
    let mut k = 0;
    while k * PAGE_SIZE < common {
        let r = k * PAGE_SIZE..((k + 1) * PAGE_SIZE).min(common);
        if items[r.clone()] != last[r.clone()] {
            pages.push(k);
            last[r.clone()].clone_from_slice(&items[r]);
        }
        k += 1;
    }
    last.truncate(items.len());
    last.extend_from_slice(&items[common..]);
    pages
}

// ------------------------------------------------------------- reading

/// The page documents of a head: the newest versions in one round trip; a
/// page written after the head (`seq` above the head's) is read again as
/// of `as_of`, or, reading the latest head, means a write came in between:
/// `None`, read the head again.
async fn fetch_pages(
    store: &dyn Store,
    head_id: &str,
    desc: &PagedDesc,
    as_of: Option<AsOf<'_>>,
) -> Result<Option<HashMap<String, Document>>> {
    let ids: Vec<String> = desc
        .parts
        .iter()
        .flat_map(|(part, d)| (0..d.pages).map(move |k| page_id(head_id, part, k)))
        .collect();
    let mut got: HashMap<String, Document> = HashMap::new();
    for chunk in ids.chunks(1000) {
        for d in store.get_many(chunk).await? {
            if let Some(id) = d.get(ID_KEY).and_then(Value::as_str) {
                got.insert(id.to_string(), d);
            }
        }
    }
    let missing = |id: &str| {
        Error::StoreProtocol(format!(
            "{head_id}: page {id} of write {} is missing",
            desc.seq
        ))
    };
    for id in &ids {
        let fits = |d: &Document| page_seq(d).is_some_and(|s| s <= desc.seq);
        match got.get(id) {
            Some(d) if fits(d) => continue,
            // Every page a head names was written with it or before.
            None => return Err(missing(id)),
            Some(_) => {}
        }
        let Some(at) = as_of else {
            return Ok(None);
        };
        let doc = store.get_as_of(id, at).await?.filter(fits).ok_or_else(|| {
            Error::StoreProtocol(format!(
                "{head_id}: page {id} of write {} is missing",
                desc.seq
            ))
        })?;
        got.insert(id.clone(), doc);
    }
    Ok(Some(got))
}

/// The full document a head stands for; `page(id)` gives each (verified)
/// page document.
fn assemble(
    mut head: Document,
    desc: &PagedDesc,
    mut page: impl FnMut(&str) -> Option<Document>,
) -> Result<Document> {
    let head_id = head
        .get(ID_KEY)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let ty = type_of(&head)
        .ok_or_else(|| Error::StoreProtocol(format!("{head_id}: paged head without a type")))?;
    head.remove(PAGED_KEY);
    for k in HASH_KEYS {
        if k != "identity_hash" {
            head.remove(k);
        }
    }
    for (part, d) in &desc.parts {
        let mut items: Vec<Value> = Vec::with_capacity(d.len);
        for k in 0..d.pages {
            let id = page_id(&head_id, part, k);
            let doc = page(&id)
                .ok_or_else(|| Error::StoreProtocol(format!("{head_id}: page {id} missing")))?;
            match doc.get("items") {
                Some(Value::Array(a)) => items.extend(a.iter().cloned()),
                _ => return Err(Error::StoreProtocol(format!("{id}: no items"))),
            }
        }
        if items.len() != d.len {
            return Err(Error::StoreProtocol(format!(
                "{head_id}: part {part} has {} items in its pages, the head says {}",
                items.len(),
                d.len
            )));
        }
        let value = match part.as_str() {
            "turns" => Value::Array(regroup_turns(items)),
            "recent_use" => regroup_uses(items),
            _ => Value::Array(items),
        };
        match part.split_once('.') {
            Some((a, b)) => {
                let slot = head
                    .entry(a.to_string())
                    .or_insert_with(|| Value::Object(Map::new()));
                if !slot.is_object() {
                    *slot = Value::Object(Map::new());
                }
                slot.as_object_mut()
                    .expect("object")
                    .insert(b.to_string(), value);
            }
            None => {
                head.insert(part.clone(), value);
            }
        }
    }
    Ok(seal(head, ty))
}

/// Flattened uses (`[turn, id]`) → the collapse window.
fn regroup_uses(items: Vec<Value>) -> Value {
    let uses = items.iter().filter_map(|it| {
        Some((
            it.get(0)?.as_u64()? as usize,
            it.get(1)?.as_str()?.to_string(),
        ))
    });
    serde_json::to_value(super::UseWindow::from_flat(uses)).unwrap_or(Value::Null)
}

/// Flattened turns (`{index, user}` starts, messages with a `role`) → turns.
fn regroup_turns(items: Vec<Value>) -> Vec<Value> {
    let mut turns: Vec<Value> = Vec::new();
    for it in items {
        if it.get("role").is_none() {
            let mut t = match it {
                Value::Object(m) => m,
                _ => Map::new(),
            };
            t.insert("messages".into(), Value::Array(Vec::new()));
            turns.push(Value::Object(t));
            continue;
        }
        if turns.is_empty() {
            turns.push(serde_json::json!({"messages": []}));
        }
        if let Some(Value::Array(msgs)) = turns.last_mut().and_then(|t| t.get_mut("messages")) {
            msgs.push(it);
        }
    }
    turns
}

/// `doc` materialised if it is a paged head read as of `as_of`.
pub async fn materialise(store: &dyn Store, doc: Document, as_of: AsOf<'_>) -> Result<Document> {
    let Some(desc) = PagedDesc::of(&doc) else {
        return Ok(doc);
    };
    let id = head_id(&doc);
    let mut pages = fetch_pages(store, &id, &desc, Some(as_of))
        .await?
        .expect("read as of a point");
    assemble(doc, &desc, |pid| pages.remove(pid))
}

/// `doc`, the latest version of its object, materialised if it is a paged
/// head (read again if a write lands while its pages are read).
pub async fn materialise_latest(store: &dyn Store, mut doc: Document) -> Result<Document> {
    for _ in 0..8 {
        let Some(desc) = PagedDesc::of(&doc) else {
            return Ok(doc);
        };
        let id = head_id(&doc);
        if let Some(mut pages) = fetch_pages(store, &id, &desc, None).await? {
            return assemble(doc, &desc, |pid| pages.remove(pid));
        }
        doc = store
            .get(&id)
            .await?
            .ok_or_else(|| Error::StoreProtocol(format!("{id} vanished")))?;
    }
    Err(Error::StoreUnavailable(
        "the session documents kept changing while being read".into(),
    ))
}

fn head_id(doc: &Document) -> String {
    doc.get(ID_KEY)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// [`Store::get`], materialised.
pub async fn get(store: &dyn Store, id: &str) -> Result<Option<Document>> {
    match store.get(id).await? {
        Some(d) => materialise_latest(store, d).await.map(Some),
        None => Ok(None),
    }
}

/// [`Store::get_many`], materialised.
pub async fn get_many(store: &dyn Store, ids: &[String]) -> Result<Vec<Document>> {
    let mut out = Vec::new();
    for d in store.get_many(ids).await? {
        out.push(materialise_latest(store, d).await?);
    }
    Ok(out)
}

/// [`Store::get_as_of`], materialised as of the same point.
pub async fn get_as_of(store: &dyn Store, id: &str, as_of: AsOf<'_>) -> Result<Option<Document>> {
    match store.get_as_of(id, as_of).await? {
        Some(d) => materialise(store, d, as_of).await.map(Some),
        None => Ok(None),
    }
}

/// [`Store::history`], every version materialised (each page's history is
/// read once).
pub async fn history(store: &dyn Store, id: &str) -> Result<Vec<Version>> {
    let versions = store.history(id).await?;
    if !versions
        .iter()
        .any(|v| v.doc.as_ref().and_then(PagedDesc::of).is_some())
    {
        return Ok(versions);
    }
    // page id → its versions, oldest first
    let mut page_versions: HashMap<String, Vec<Document>> = HashMap::new();
    let mut out = Vec::with_capacity(versions.len());
    for v in versions {
        let Some(desc) = v.doc.as_ref().and_then(PagedDesc::of) else {
            out.push(v);
            continue;
        };
        for (part, d) in &desc.parts {
            for k in 0..d.pages {
                let pid = page_id(id, part, k);
                if let std::collections::hash_map::Entry::Vacant(e) = page_versions.entry(pid) {
                    let h = store.history(e.key()).await?;
                    e.insert(h.into_iter().filter_map(|v| v.doc).collect());
                }
            }
        }
        // The page of this head: the newest written at or before its seq.
        let page = |pid: &str| -> Option<Document> {
            page_versions
                .get(pid)?
                .iter()
                .rev()
                .find(|d| page_seq(d).is_some_and(|s| s <= desc.seq))
                .cloned()
        };
        let doc = assemble(v.doc.clone().expect("paged"), &desc, page)?;
        out.push(Version {
            tx_id: v.tx_id,
            tx_time: v.tx_time,
            doc: Some(doc),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::TxOp;

    #[test]
    fn a_book_writes_the_tail_and_marked_pages_only() {
        let p = PAGE_SIZE;
        let mut b = PartPages::default();
        let mut docs = Vec::new();
        let w = b.write("chat:s", "x", 2 * p + 2, 1, |i| i.into(), &mut docs);
        assert_eq!(w.pages, [0, 1, 2]);
        assert_eq!(docs.len(), 3);
        b.landed(&w);
        let w = b.write("chat:s", "x", 2 * p + 3, 2, |i| i.into(), &mut docs);
        assert_eq!(w.pages, [2]);
        b.landed(&w);
        b.mark(3);
        let w = b.write("chat:s", "x", 2 * p + 3, 3, |i| i.into(), &mut docs);
        assert_eq!(w.pages, [0]);
        b.failed(&w);
        let w = b.write("chat:s", "x", 3 * p + 1, 4, |i| i.into(), &mut docs);
        assert_eq!(w.pages, [0, 2, 3]);
        assert_eq!(w.desc.pages, 4);
    }

    /// A session head with one part of `n` items written as write `seq`.
    fn head_write(seq: u64, n: usize) -> (Document, Vec<TxOp>) {
        let mut b = PartPages::default();
        let mut docs = Vec::new();
        let w = b.write(
            "session:s",
            "session_index",
            n,
            seq,
            |i| format!("id{i}").into(),
            &mut docs,
        );
        let desc = PagedDesc {
            seq,
            parts: [("session_index".to_string(), w.desc)]
                .into_iter()
                .collect(),
        };
        let mut f = Map::new();
        f.insert("session_id".into(), "s".into());
        let head = seal_head(
            crate::model::assigned_document("session:s", ObjectType::Session, None, f),
            ObjectType::Session,
            &desc,
        );
        let mut ops: Vec<TxOp> = docs.into_iter().map(|d| TxOp::Put(d.seal())).collect();
        ops.push(TxOp::Put(head.clone()));
        (head, ops)
    }

    #[tokio::test]
    async fn a_head_read_before_a_write_is_read_again_and_a_missing_page_is_an_error() {
        let store = crate::store::embedded::EmbeddedStore::open_in_memory().unwrap();
        let (old, ops) = head_write(1, 3);
        store.submit(ops).await.unwrap();
        let (_, ops) = head_write(2, 5);
        store.submit(ops).await.unwrap();
        // The page was rewritten after `old`: the latest head is read.
        let doc = materialise_latest(&store, old.clone()).await.unwrap();
        assert_eq!(doc["session_index"].as_array().unwrap().len(), 5);
        // As of the first write: that write's page.
        let first = store.history("session:s").await.unwrap()[0].tx_id;
        let doc = get_as_of(&store, "session:s", AsOf::TxId(first))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            doc["session_index"],
            serde_json::json!(["id0", "id1", "id2"])
        );
        // A head naming a page that was never written.
        let mut broken = old;
        broken.insert(
            PAGED_KEY.into(),
            serde_json::json!({"seq": 9, "parts": {"session_index": {"len": 40, "pages": 3}}}),
        );
        let e = materialise_latest(&store, broken).await.unwrap_err();
        assert_eq!(e.code(), "STORE_PROTOCOL", "{e}");
    }

    #[test]
    fn flattened_turns_regroup() {
        let items = vec![
            serde_json::json!({"role": "assistant", "fp": "a"}),
            serde_json::json!({"index": 1, "user": {"fp": "u"}}),
            serde_json::json!({"role": "toolResult", "fp": "b"}),
            serde_json::json!({"index": 2, "user": null}),
        ];
        let turns = regroup_turns(items);
        assert_eq!(turns.len(), 3);
        assert_eq!(turns[0]["messages"][0]["fp"], "a");
        assert_eq!(turns[1]["messages"][0]["fp"], "b");
        assert_eq!(turns[2]["messages"], serde_json::json!([]));
    }
}
