//! Rendering: a chat item, a collapsed ref, an activation's text and the
//! whole context as pi-ai JSON, from the persisted state ([`Env`] reads the
//! live session's caches or documents fetched for reconstruction).

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use super::items::{Item, ItemKind, Items};
use super::records::{CacheState, FoldRecord};
use crate::context::aliases::{call_alias, file_alias, Aliases};
use crate::context::chat::{MessageEntry, Turn};
use crate::context::epochs::{utf16_len, CachePolicy, Shown};
use crate::context::spec_layout::active_body;
use crate::context::tool_args::edit_bodies;
use crate::model::FilesystemSource;
use crate::store::Document;

/// The constant header (second message): explains ids and refs once. Its
/// text lives with the layout's other words (`context/words.rs`).
pub use crate::context::words::HEADER;

/// `[t12 · 340 lines]`
pub fn ref_text(call: u32, text: &str) -> String {
    format!("[{} · {} lines]", call_alias(call), line_count(text))
}

/// Lines of a text: `\n` count + 1, 0 for empty (as the prototype counts).
pub fn line_count(s: &str) -> usize {
    if s.is_empty() {
        0
    } else {
        s.bytes().filter(|&b| b == b'\n').count() + 1
    }
}

/// Collapsible-argument chars of a call (edit old+new, write content, bash command).
pub fn arg_chars(tool: &str, args: &Value) -> u64 {
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map_or(0, utf16_len);
    match tool {
        "edit" => edit_bodies(args)
            .map(|e| s(e, "oldText") + s(e, "newText"))
            .sum(),
        "write" => s(args, "content"),
        "bash" => s(args, "command"),
        _ => 0,
    }
}

/// First line of a command, cut to 79 UTF-16 units plus `…` when longer than 80.
fn first_line_cut(command: &str) -> String {
    let first = command.split('\n').next().unwrap_or_default();
    if utf16_len(first) <= 80 {
        return first.to_string();
    }
    let mut out = String::new();
    let mut n = 0;
    for ch in first.chars() {
        n += ch.len_utf16();
        if n > 79 {
            break;
        }
        out.push(ch);
    }
    out.push('…');
    out
}

/// Arguments with their bodies replaced by refs; keys kept so the call
/// still matches the tool's schema.
pub fn collapse_args(tool: &str, call: u32, args: &Value) -> Value {
    let mut a = args.clone();
    let refs = |obj: &mut Map<String, Value>, keys: &[&str]| {
        for k in keys {
            if let Some(Value::String(s)) = obj.get(*k) {
                let r = ref_text(call, s);
                obj.insert((*k).to_string(), Value::String(r));
            }
        }
    };
    let Some(obj) = a.as_object_mut() else {
        return a;
    };
    match tool {
        "edit" => {
            refs(obj, &["oldText", "newText"]);
            if let Some(Value::Array(edits)) = obj.get_mut("edits") {
                for e in edits.iter_mut().filter_map(Value::as_object_mut) {
                    refs(e, &["oldText", "newText"]);
                }
            }
        }
        "write" => refs(obj, &["content"]),
        "bash" => {
            if let Some(Value::String(cmd)) = obj.get("command") {
                let short = format!("{} … {}", first_line_cut(cmd), ref_text(call, cmd));
                obj.insert("command".into(), Value::String(short));
            }
        }
        _ => {}
    }
    a
}

/// A settled edit's arguments (`ToolCallState::old_ref`): each `oldText`
/// as a ref where that is shorter; `newText` and the path as written.
pub fn replaced_as_refs(call: u32, args: &Value) -> Value {
    let mut a = args.clone();
    let settle = |obj: &mut Map<String, Value>| {
        if let Some(Value::String(old)) = obj.get("oldText") {
            let r = ref_text(call, old);
            if r.len() < old.len() {
                obj.insert("oldText".into(), Value::String(r));
            }
        }
    };
    if let Some(obj) = a.as_object_mut() {
        settle(obj);
        if let Some(Value::Array(edits)) = obj.get_mut("edits") {
            edits
                .iter_mut()
                .filter_map(Value::as_object_mut)
                .for_each(settle);
        }
    }
    a
}

/// Exact versions shown by activations: (id, object_hash) → document.
pub type Frozen = HashMap<(String, String), Document>;

/// Documents by id (the live session's cache, or fetched ones).
pub trait DocLookup {
    fn get_doc(&self, id: &str) -> Option<&Document>;
}

impl DocLookup for HashMap<String, Document> {
    fn get_doc(&self, id: &str) -> Option<&Document> {
        self.get(id)
    }
}

/// What an activate/pin result shows: per target its head line and content
/// (a note when the target was already live).
pub fn activation_text(
    shows: &[Shown],
    frozen: &Frozen,
    display: &dyn Fn(&FilesystemSource) -> String,
) -> String {
    let mut parts = Vec::with_capacity(shows.len());
    for s in shows {
        if s.note {
            parts.push(s.head.clone());
            continue;
        }
        let body = match frozen.get(&(s.id.clone(), s.object_hash.clone())) {
            Some(d) => shown_body(d, display),
            None => "[this version is no longer available]".to_string(),
        };
        match &s.links {
            Some(links) => parts.push(format!("{}\n{body}\n\n{links}", s.head)),
            None => parts.push(format!("{}\n{body}", s.head)),
        }
    }
    parts.join("\n\n")
}

/// A shown object's content: a toolcall's body arguments and output, a
/// file's text (or a note for a file without content).
pub fn shown_body(d: &Document, display: &dyn Fn(&FilesystemSource) -> String) -> String {
    if d.get("type").and_then(Value::as_str) == Some("toolcall") {
        let tool = d.get("tool").and_then(Value::as_str).unwrap_or_default();
        let content = d.get("content").and_then(Value::as_str).unwrap_or_default();
        let args = d.get("args").cloned().unwrap_or(Value::Null);
        return if arg_chars(tool, &args) > 0 {
            format!(
                "{}\n{content}",
                serde_json::to_string(&args).unwrap_or_default()
            )
        } else {
            content.to_string()
        };
    }
    active_body(d, display).into_owned()
}

/// `{"role":"user","content":<text>}`
pub fn text_message(text: &str) -> String {
    serde_json::to_string(&json!({"role": "user", "content": text})).expect("serialisable")
}

/// The state's text messages serialised (epoch deltas, fold texts), with
/// their sizes: rendered once, not on every call (a full `FILES` list can be
/// tens of KiB).
#[derive(Debug, Default)]
pub struct TextJson {
    header: Option<String>,
    /// Per epoch: its delta message and chars (None: no delta).
    deltas: Vec<Option<(String, u64)>>,
    /// Per epoch: its working copies, whole and collapsed.
    copies: Vec<Vec<CopyJson>>,
    /// Per fold: its text message and its pinned block's message.
    folds: Vec<(String, Option<String>)>,
    /// Per fold: its working area's messages.
    areas: Vec<Vec<String>>,
}

impl TextJson {
    /// Serialises what `state` added since the last fill.
    pub fn fill(&mut self, state: &CacheState) {
        self.header.get_or_insert_with(|| text_message(HEADER));
        for e in &state.epochs[self.deltas.len().min(state.epochs.len())..] {
            let d = e.delta.as_deref();
            self.deltas.push(d.map(|d| (text_message(d), utf16_len(d))));
            self.copies.push(
                e.copies
                    .iter()
                    .map(|c| CopyJson {
                        whole: (text_message(&c.text), utf16_len(&c.text)),
                        collapsed: (text_message(&c.ref_text), utf16_len(&c.ref_text)),
                    })
                    .collect(),
            );
        }
        for f in &state.folds[self.folds.len().min(state.folds.len())..] {
            self.folds
                .push((text_message(&f.text), f.pinned.as_deref().map(text_message)));
            self.areas
                .push(f.copies.iter().map(|c| text_message(&c.text)).collect());
        }
    }

    /// Epoch `k`'s delta changed (a fold lists every file in it).
    pub(super) fn forget_epoch(&mut self, k: usize) {
        self.deltas.truncate(k);
        self.copies.truncate(k);
    }

    pub(super) fn delta(&self, k: usize) -> Option<&(String, u64)> {
        self.deltas.get(k).and_then(Option::as_ref)
    }

    /// Epoch `k`'s working copies as a call that had done `epochs` epochs
    /// shows them (whole, or collapsed from their epoch on).
    pub(super) fn copies<'s>(
        &'s self,
        state: &'s CacheState,
        k: usize,
        epochs: u32,
    ) -> impl Iterator<Item = &'s (String, u64)> + 's {
        let records = state.epochs.get(k).map_or(&[][..], |e| &e.copies[..]);
        records
            .iter()
            .zip(self.copies.get(k).map_or(&[][..], Vec::as_slice))
            .map(move |(c, j)| {
                if c.live_at(epochs) {
                    &j.whole
                } else {
                    &j.collapsed
                }
            })
    }
}

/// One working copy's two renderings (message JSON, chars).
#[derive(Debug)]
struct CopyJson {
    whole: (String, u64),
    collapsed: (String, u64),
}

/// Everything rendering reads. Built over the live session's caches, or
/// over documents fetched for reconstruction.
pub struct Env<'a, T> {
    pub turns: &'a [T],
    pub items: &'a Items,
    pub aliases: &'a Aliases,
    pub state: &'a CacheState,
    pub policy: &'a CachePolicy,
    /// Toolcall documents by id (content, args).
    pub doc: &'a dyn DocLookup,
    /// The exact versions activations showed.
    pub frozen: &'a Frozen,
    pub display: &'a dyn Fn(&FilesystemSource) -> String,
    /// Epochs done at the rendered call.
    pub epochs: u32,
    /// Items that existed at the rendered call.
    pub limit: usize,
}

impl<'a, T: AsRef<Turn>> Env<'a, T> {
    fn entry(&self, it: &Item) -> &'a MessageEntry {
        &self.turns[it.turn as usize].as_ref().messages[it.msg as usize]
    }

    pub fn fold(&self) -> Option<&'a FoldRecord> {
        self.state
            .folds
            .iter()
            .rev()
            .find(|f| f.epoch <= self.epochs)
    }

    fn thinking_before(&self) -> u32 {
        match self.epochs {
            0 => 0,
            k => self.state.epochs[k as usize - 1].thinking_before,
        }
    }

    /// The id the model sees for a provider tool-call id.
    fn call_id(&self, provider_id: &str, call: u32) -> String {
        if self.policy.rewrite_call_ids && !provider_id.contains('|') {
            call_alias(call)
        } else {
            provider_id.to_string()
        }
    }

    pub(super) fn call_doc(&self, call: u32) -> Option<&'a Document> {
        let id = self.aliases.t.get(call as usize)?.as_deref()?;
        self.doc.get_doc(id)
    }

    /// What a call's result shows while live.
    pub fn live_text(&self, call: u32) -> String {
        let c = &self.state.calls[call as usize];
        if !c.shows.is_empty() {
            return activation_text(&c.shows, self.frozen, self.display);
        }
        self.call_doc(call)
            .and_then(|d| d.get("content"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    }

    fn result_text(&self, call: u32) -> String {
        let c = &self.state.calls[call as usize];
        // (A note collapses with its target, whatever its size.)
        if (c.result_collapsible(self.policy) || c.is_note()) && !c.result_live_at(self.epochs) {
            return ref_text(call, &self.live_text(call));
        }
        if let Some(d) = c.dedupe_at(self.epochs) {
            return format!(
                "[{}: identical to {} above]",
                call_alias(call),
                call_alias(d)
            );
        }
        if let (Some(_), Some(f)) = (c.copy_dedupe_at(self.epochs), c.file) {
            return format!(
                "[{}: identical to FILE {} above]",
                call_alias(call),
                file_alias(f)
            );
        }
        self.live_text(call)
    }

    fn args_of(&self, call: u32, e: &MessageEntry, k: usize) -> Value {
        let stored = e.tool_calls.as_ref().and_then(|c| c.get(k));
        let args = match stored.and_then(|c| c.toolcall_id.as_deref()) {
            Some(id) => self.doc.get_doc(id).and_then(|d| d.get("args")).cloned(),
            None => stored.and_then(|c| c.arguments.clone()),
        };
        let args = args.unwrap_or_else(|| Value::Object(Map::new()));
        let c = &self.state.calls[call as usize];
        if c.args_collapsible(self.policy) && !c.args_live_at(self.epochs) {
            collapse_args(&c.tool, call, &args)
        } else if c.old_ref {
            replaced_as_refs(call, &args)
        } else {
            args
        }
    }

    /// One chat item as pi-ai JSON.
    pub fn render_item(&self, i: usize) -> String {
        self.render_item_counted(i).0
    }

    /// One chat item as pi-ai JSON, with its size as the fold trigger counts
    /// it (see [`rendered_chars`]).
    pub fn render_item_counted(&self, i: usize) -> (String, u64) {
        let it = &self.items.list[i];
        let v = match it.kind {
            ItemKind::User => {
                let u = self.turns[it.turn as usize].as_ref().user.as_ref();
                u.map(crate::context::chat::render_user)
                    .unwrap_or(Value::Null)
            }
            ItemKind::Passthrough => self.entry(it).raw.clone().unwrap_or(Value::Null),
            ItemKind::Assistant => self.assistant(i, it),
            ItemKind::ToolResult => self.tool_result(it),
        };
        let chars = rendered_chars(std::slice::from_ref(&v));
        (serde_json::to_string(&v).expect("serialisable"), chars)
    }

    /// Whether item `i` is an assistant message with thinking.
    pub(super) fn has_thinking(&self, i: usize) -> bool {
        let it = &self.items.list[i];
        it.kind == ItemKind::Assistant
            && self
                .entry(it)
                .content
                .iter()
                .flatten()
                .any(|part| part.get("type").and_then(Value::as_str) == Some("thinking"))
    }

    fn assistant(&self, i: usize, it: &Item) -> Value {
        let e = self.entry(it);
        let drop_thinking = (i as u32) < self.thinking_before();
        let mut k = 0usize;
        let mut content = Vec::new();
        for part in e.content.iter().flatten() {
            match part.get("type").and_then(Value::as_str) {
                Some("thinking") if drop_thinking => {}
                Some("toolCall") => {
                    let call = it.call + k as u32;
                    let mut p = part.clone();
                    if let Some(obj) = p.as_object_mut() {
                        obj.insert("arguments".into(), self.args_of(call, e, k));
                        let provider = part.get("id").and_then(Value::as_str).unwrap_or_default();
                        obj.insert("id".into(), Value::String(self.call_id(provider, call)));
                    }
                    k += 1;
                    content.push(p);
                }
                _ => content.push(part.clone()),
            }
        }
        let mut m = Map::new();
        m.insert("role".into(), "assistant".into());
        m.insert("content".into(), Value::Array(content));
        for (key, v) in e.meta.iter().flatten() {
            m.insert(key.clone(), v.clone());
        }
        if !e.timestamp.is_null() {
            m.insert("timestamp".into(), e.timestamp.clone());
        }
        Value::Object(m)
    }

    fn tool_result(&self, it: &Item) -> Value {
        let e = self.entry(it);
        let provider = e.call_id.as_deref().unwrap_or_default();
        let mut m = Map::new();
        m.insert("role".into(), "toolResult".into());
        m.insert("toolCallId".into(), self.call_id(provider, it.call).into());
        m.insert("toolName".into(), e.tool.clone().unwrap_or_default().into());
        let mut content = vec![json!({"type": "text", "text": self.result_text(it.call)})];
        // Image parts pass through while the result shows live (see context::images).
        let c = &self.state.calls[it.call as usize];
        let collapsed = c.result_collapsible(self.policy) && !c.result_live_at(self.epochs);
        if c.shows.is_empty() && !c.is_dedupe_at(self.epochs) && !collapsed {
            content.extend_from_slice(crate::context::images::of_doc(self.call_doc(it.call)));
        }
        m.insert("content".into(), Value::Array(content));
        m.insert("isError".into(), e.is_error.unwrap_or(false).into());
        if !e.timestamp.is_null() {
            m.insert("timestamp".into(), e.timestamp.clone());
        }
        Value::Object(m)
    }

    /// Synthetic results for calls of assistant item `i` whose result had not
    /// arrived at this call (aborted and errored messages are dropped by
    /// pi-ai with their calls, so they get none).
    fn missing(&self, i: usize) -> Vec<String> {
        let it = &self.items.list[i];
        let arrived = |call: u32| {
            self.items.result_item[call as usize].is_some_and(|r| (r as usize) < self.limit)
        };
        // Nearly always: every result is there (checked before reading the message).
        if (it.call..it.call + it.calls).all(arrived) {
            return Vec::new();
        }
        let e = self.entry(it);
        if crate::context::chat::dropped_by_provider(e) {
            return Vec::new();
        }
        let mut out = Vec::new();
        for k in 0..it.calls {
            let call = it.call + k;
            if arrived(call) {
                continue;
            }
            let tc = e.tool_calls.as_ref().and_then(|c| c.get(k as usize));
            let provider = tc.map_or("", |c| c.call_id.as_str());
            let v = json!({
                "role": "toolResult",
                "toolCallId": self.call_id(provider, call),
                "toolName": tc.map_or("", |c| c.name.as_str()),
                "content": [{"type": "text", "text": format!("no result was recorded for tool call {}", call_alias(call))}],
                "isError": true,
            });
            out.push(serde_json::to_string(&v).expect("serialisable"));
        }
        out
    }

    /// The first item shown (the fold cut, or 0).
    pub fn view_start(&self) -> usize {
        self.fold().map_or(0, |f| f.cut as usize)
    }

    /// The context as a JSON array. `item_json(i)` must return item i's
    /// rendering (cached or fresh) for every item in view and the fold's
    /// user item.
    pub fn assemble<'j>(
        &self,
        item_json: &dyn Fn(usize) -> &'j str,
        system: Option<&str>,
    ) -> String {
        let mut texts = TextJson::default();
        texts.fill(self.state);
        self.assemble_with(item_json, system, &texts, String::new(), 0)
    }

    /// [`Env::assemble`] with the text messages serialised already
    /// (`texts` filled from this state), written into `buf` (cleared; a
    /// reused buffer saves allocating and faulting in a fresh one per call)
    /// with room for `capacity` bytes.
    pub fn assemble_with<'j>(
        &self,
        item_json: &dyn Fn(usize) -> &'j str,
        system: Option<&str>,
        texts: &TextJson,
        mut buf: String,
        capacity: usize,
    ) -> String {
        buf.clear();
        buf.reserve(capacity);
        let mut out = JsonArray { s: buf };
        if let Some(sp) = system {
            out.push(
                &serde_json::to_string(&json!({"role": "system", "content": sp}))
                    .expect("serialisable"),
            );
        }
        match &texts.header {
            Some(h) => out.push(h),
            None => out.push(&text_message(HEADER)),
        }
        let start = self.view_start();
        let fold = self
            .state
            .folds
            .iter()
            .rposition(|f| f.epoch <= self.epochs);
        if let Some(k) = fold {
            let f = &self.state.folds[k];
            let (text, pinned) = &texts.folds[k];
            for c in &texts.areas[k] {
                out.push(c);
            }
            // The block before the summary (it stays cached when the next
            // fold keeps it); a fold stored before that, as it was sent.
            let (before, after) = match f.block_first {
                true => (pinned.as_ref(), None),
                false => (None, pinned.as_ref()),
            };
            if let Some(p) = before {
                out.push(p);
            }
            out.push(text);
            if let Some(u) = f.user {
                out.push(item_json(u as usize));
            }
            if let Some(p) = after {
                out.push(p);
            }
        }
        let mut deltas = self.state.epochs[..self.epochs as usize]
            .iter()
            .enumerate()
            .filter(|(_, e)| {
                e.delta.is_some()
                    && (e.anchor as usize) >= start
                    && (e.anchor as usize) < self.limit
            })
            .peekable();
        // Working copies by the item they follow (an epoch's copies may sit
        // before an earlier epoch's).
        let mut copies: Vec<(usize, usize)> = self.state.epochs[..self.epochs as usize]
            .iter()
            .enumerate()
            .filter(|(_, e)| !e.copies.is_empty())
            .map(|(k, e)| (e.copies_before() as usize, k))
            .filter(|&(b, _)| b >= start && b <= self.limit)
            .collect();
        copies.sort_unstable();
        let mut copies = copies.into_iter().peekable();
        let mut pending: Vec<String> = Vec::new();
        for i in start..self.limit {
            self.push_copies(&mut out, &mut copies, &mut pending, texts, i);
            let it = &self.items.list[i];
            if it.kind == ItemKind::ToolResult {
                // A result whose call was folded away would be an orphan.
                if (self.items.assistant_item[it.call as usize] as usize) < start {
                    continue;
                }
            } else {
                for m in pending.drain(..) {
                    out.push(&m);
                }
            }
            out.push(item_json(i));
            if it.kind == ItemKind::Assistant {
                pending = self.missing(i);
            }
            while let Some((k, _)) = deltas.next_if(|(_, e)| e.anchor as usize == i) {
                for m in pending.drain(..) {
                    out.push(&m);
                }
                match texts.delta(k) {
                    Some((json, _)) => out.push(json),
                    None => out.push(&text_message("")),
                }
            }
        }
        self.push_copies(&mut out, &mut copies, &mut pending, texts, self.limit);
        for m in pending.drain(..) {
            out.push(&m);
        }
        out.finish()
    }

    /// The working copies that precede item `i`.
    fn push_copies(
        &self,
        out: &mut JsonArray,
        copies: &mut std::iter::Peekable<std::vec::IntoIter<(usize, usize)>>,
        pending: &mut Vec<String>,
        texts: &TextJson,
        i: usize,
    ) {
        while let Some((_, k)) = copies.next_if(|&(b, _)| b == i) {
            for m in pending.drain(..) {
                out.push(&m);
            }
            for (json, _) in texts.copies(self.state, k, self.epochs) {
                out.push(json);
            }
        }
    }

    /// Chars of the collapsible content that is live in view, plus pinned
    /// content shown in the fold's block: what a fold does not remove.
    pub fn live_chars(&self) -> u64 {
        let start = self.view_start();
        let mut n = 0;
        for it in &self.items.list[start..self.limit] {
            match it.kind {
                ItemKind::ToolResult => {
                    let c = &self.state.calls[it.call as usize];
                    if c.result_collapsible(self.policy)
                        && c.result_live_at(self.epochs)
                        && !c.is_dedupe_at(self.epochs)
                    {
                        n += c.result_chars;
                    }
                }
                ItemKind::Assistant => {
                    for call in it.call..it.call + it.calls {
                        let c = &self.state.calls[call as usize];
                        if c.args_collapsible(self.policy) && c.args_live_at(self.epochs) {
                            n += c.arg_chars;
                        }
                    }
                }
                _ => {}
            }
        }
        if let Some(f) = self.fold() {
            n += f.pinned.as_deref().map_or(0, utf16_len);
            n += f.copies.iter().map(|c| utf16_len(&c.text)).sum::<u64>();
        }
        // Live working copies are content, not skeleton.
        for e in &self.state.epochs[..self.epochs as usize] {
            let b = e.copies_before() as usize;
            if b < start || b > self.limit {
                continue;
            }
            for c in e.copies.iter().filter(|c| c.live_at(self.epochs)) {
                n += utf16_len(&c.text);
            }
        }
        n
    }
}

#[derive(Default)]
struct JsonArray {
    s: String,
}

impl JsonArray {
    fn push(&mut self, json: &str) {
        self.s.push(if self.s.is_empty() { '[' } else { ',' });
        self.s.push_str(json);
    }

    fn finish(mut self) -> String {
        if self.s.is_empty() {
            self.s.push('[');
        }
        self.s.push(']');
        self.s
    }
}

/// Rendered chars of a context as the fold trigger counts them: texts,
/// kept thinking, `JSON(args) + 40` per tool call, refs. System excluded.
pub fn rendered_chars(messages: &[Value]) -> u64 {
    let text = |c: &Value| utf16_len(&content_text(c));
    let mut n = 0;
    for m in messages {
        match m["role"].as_str() {
            Some("system") => {}
            Some("assistant") => {
                for p in m["content"].as_array().into_iter().flatten() {
                    n += match p["type"].as_str() {
                        Some("text") => p["text"].as_str().map_or(0, utf16_len),
                        Some("thinking") => p["thinking"].as_str().map_or(0, utf16_len),
                        Some("toolCall") => {
                            utf16_len(&serde_json::to_string(&p["arguments"]).unwrap_or_default())
                                + 40
                        }
                        _ => 0,
                    };
                }
            }
            _ => n += text(&m["content"]),
        }
    }
    n
}

/// The text parts of a message `content` (string or parts), joined.
pub fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter(|p| p["type"] == "text")
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}
