//! [`Layout::Cache`](super::assembly::Layout::Cache): the prompt-cache
//! friendly layout measured in docs/notes/layout-experiments.md (§6, "REC").
//!
//! Rendered, in order: the system prompt (optional), a constant header,
//! the fold (summary, the current turn's prompt if the cut fell inside it,
//! pinned content whose place was folded), then the chat from the fold
//! point. Tool output stays **inline where it happened**; collapsed it is a
//! ref `[t12 · 340 lines]` (edit/write bodies and long bash commands
//! likewise). Collapsing, thinking removal and file-pool deltas happen only
//! at **epochs** ([`super::epochs`]); between epochs call n+1's context is
//! call n's plus the new messages, byte for byte.
//!
//! Every rendering decision is stamped with the epoch that made it, so any
//! past call renders again exactly from the persisted state plus its
//! epoch count (static references, reconstruction).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::aliases::{call_alias, file_alias, Aliases};
use super::assembly::active_body;
use super::chat::{MessageEntry, Turn};
use super::epochs::{self, utf16_len, CachePolicy, CallState, Shown};
use super::fold::{self, FOLD_LINE};
use super::working::{self, FileCalls};
use crate::model::FilesystemSource;
use crate::store::Document;

/// The constant header (second message): explains ids and refs once. Its
/// text lives with the layout's other words (`context/words.rs`).
pub use super::words::HEADER;

/// Roles rendered as they came (pi's `convertToLlm` turns them into user text).
pub const PASSTHROUGH_ROLES: [&str; 3] = ["bashExecution", "custom", "branchSummary"];

impl AsRef<Turn> for Turn {
    fn as_ref(&self) -> &Turn {
        self
    }
}

// ------------------------------------------------------------ persisted

/// A file alias's listing facts (`f<index+1>`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    #[serde(rename = "p")]
    pub path: String,
    /// Size as the tool calls showed it (a cached file object's
    /// `char_count` wins when listing).
    #[serde(rename = "c", default)]
    pub chars: u64,
}

/// One epoch (numbered from 1 by position).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EpochRecord {
    /// The model call that ran it.
    #[serde(rename = "k")]
    pub call: u32,
    /// Assistant items before this index render without thinking (running max).
    #[serde(rename = "t")]
    pub thinking_before: u32,
    /// The item the file-pool delta follows.
    #[serde(rename = "a")]
    pub anchor: u32,
    #[serde(rename = "d", default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<String>,
    /// Calls kept for the working files (see [`super::working`]); until the
    /// next epoch their live units do not trigger one.
    #[serde(rename = "w", default, skip_serializing_if = "Vec::is_empty")]
    pub working: Vec<u32>,
    /// Not an epoch: a record that collapses nothing, only appends its text
    /// (in `delta`): `CHANGED` notices, or a `FILES` list due when an epoch
    /// had nothing to collapse yet.
    #[serde(rename = "n", default, skip_serializing_if = "std::ops::Not::not")]
    pub notice: bool,
}

/// A fold: items before `cut` are replaced by `text`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FoldRecord {
    /// The epoch it came with (visible from that epoch on).
    #[serde(rename = "e")]
    pub epoch: u32,
    #[serde(rename = "c")]
    pub cut: u32,
    /// The current turn's user item, repeated after the summary.
    #[serde(rename = "u", default, skip_serializing_if = "Option::is_none")]
    pub user: Option<u32>,
    #[serde(rename = "s")]
    pub text: String,
    /// `PINNED` block: pinned content whose place was folded.
    #[serde(rename = "p", default, skip_serializing_if = "Option::is_none")]
    pub pinned: Option<String>,
    /// From a host compaction (pi's summary) rather than the engine.
    #[serde(rename = "h", default, skip_serializing_if = "std::ops::Not::not")]
    pub host: bool,
}

/// Everything the cache layout decided, persisted in the chat object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheState {
    /// Per tool-call block, parallel to `Aliases::t`.
    #[serde(default)]
    pub calls: Vec<CallState>,
    /// Per file, parallel to `Aliases::f`.
    #[serde(default)]
    pub files: Vec<FileEntry>,
    #[serde(default)]
    pub epochs: Vec<EpochRecord>,
    #[serde(default)]
    pub folds: Vec<FoldRecord>,
    /// Files listed by deltas so far.
    #[serde(default)]
    pub files_listed: u32,
    /// Calls to collapse at the next epoch (deactivated).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deactivated: Vec<u32>,
    /// Per file object id, the `object_hash` of the version the model last
    /// saw (change notices; persisted so a resume still notices a change
    /// made while no session ran).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub seen: BTreeMap<String, String>,
}

// -------------------------------------------------------------- items

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemKind {
    User,
    Assistant,
    ToolResult,
    Passthrough,
}

/// One rendered chat message, derived from the turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Item {
    pub kind: ItemKind,
    pub turn: u32,
    /// Index in the turn's messages (unused for users).
    pub msg: u32,
    /// Assistant: its first call; tool result: its call.
    pub call: u32,
    /// Assistant: number of calls.
    pub calls: u32,
}

/// Items and the call ↔ item links (derived, never persisted).
#[derive(Debug, Clone, Default)]
pub struct Items {
    pub list: Vec<Item>,
    /// Call → its result item.
    pub result_item: Vec<Option<u32>>,
    /// Call → its assistant item.
    pub assistant_item: Vec<u32>,
    /// (turn, msg) of an assistant → its first call.
    first_call: HashMap<(u32, u32), u32>,
}

impl Items {
    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub fn push_user(&mut self, turn: usize) {
        self.list.push(Item {
            kind: ItemKind::User,
            turn: turn as u32,
            msg: u32::MAX,
            call: 0,
            calls: 0,
        });
    }

    pub fn push_passthrough(&mut self, turn: usize, msg: usize) {
        self.list.push(Item {
            kind: ItemKind::Passthrough,
            turn: turn as u32,
            msg: msg as u32,
            call: 0,
            calls: 0,
        });
    }

    /// An assistant message whose calls are `first..first + calls`.
    pub fn push_assistant(&mut self, turn: usize, msg: usize, first: u32, calls: u32) {
        let at = self.list.len() as u32;
        self.list.push(Item {
            kind: ItemKind::Assistant,
            turn: turn as u32,
            msg: msg as u32,
            call: first,
            calls,
        });
        for c in first..first + calls {
            let c = c as usize;
            if self.assistant_item.len() <= c {
                self.assistant_item.resize(c + 1, 0);
                self.result_item.resize(c + 1, None);
            }
            self.assistant_item[c] = at;
        }
        self.first_call.insert((turn as u32, msg as u32), first);
    }

    pub fn push_result(&mut self, turn: usize, msg: usize, call: u32) {
        let at = self.list.len() as u32;
        self.list.push(Item {
            kind: ItemKind::ToolResult,
            turn: turn as u32,
            msg: msg as u32,
            call,
            calls: 0,
        });
        if let Some(slot) = self.result_item.get_mut(call as usize) {
            *slot = Some(at);
        }
    }

    /// The call index of the `k`-th call of the assistant at (turn, msg).
    pub fn call_of(&self, turn: usize, msg: usize, k: usize) -> Option<u32> {
        self.first_call
            .get(&(turn as u32, msg as u32))
            .map(|f| f + k as u32)
    }

    /// Derives the items from stored turns (resume, reconstruction).
    pub fn from_turns<T: AsRef<Turn>>(turns: &[T], aliases: &Aliases) -> Items {
        let mut items = Items::default();
        let mut next_call = 0u32;
        for (t, turn) in turns.iter().enumerate() {
            let turn = turn.as_ref();
            if turn.user.is_some() {
                items.push_user(t);
            }
            for (m, e) in turn.messages.iter().enumerate() {
                match e.role.as_str() {
                    "assistant" if e.skipped.is_none() => {
                        let n = e.tool_calls.as_ref().map_or(0, Vec::len) as u32;
                        items.push_assistant(t, m, next_call, n);
                        next_call += n;
                    }
                    "toolResult" if e.unmatched.is_none() => {
                        if let Some(c) = e.toolcall_id.as_deref().and_then(|id| aliases.call_of(id))
                        {
                            items.push_result(t, m, c);
                        }
                    }
                    r if e.raw.is_some() && PASSTHROUGH_ROLES.contains(&r) => {
                        items.push_passthrough(t, m)
                    }
                    _ => {}
                }
            }
        }
        items
    }
}

// ----------------------------------------------------------- rendering

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
        "edit" => {
            let mut n = s(args, "oldText") + s(args, "newText");
            for e in args
                .get("edits")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                n += s(e, "oldText") + s(e, "newText");
            }
            n
        }
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
    /// Per fold: its text message and its pinned block's message.
    folds: Vec<(String, Option<String>)>,
}

impl TextJson {
    /// Serialises what `state` added since the last fill.
    pub fn fill(&mut self, state: &CacheState) {
        self.header.get_or_insert_with(|| text_message(HEADER));
        for e in &state.epochs[self.deltas.len().min(state.epochs.len())..] {
            let d = e.delta.as_deref();
            self.deltas.push(d.map(|d| (text_message(d), utf16_len(d))));
        }
        for f in &state.folds[self.folds.len().min(state.folds.len())..] {
            self.folds
                .push((text_message(&f.text), f.pinned.as_deref().map(text_message)));
        }
    }

    /// Epoch `k`'s delta changed (a fold lists every file in it).
    fn forget_epoch(&mut self, k: usize) {
        self.deltas.truncate(k);
    }

    fn delta(&self, k: usize) -> Option<&(String, u64)> {
        self.deltas.get(k).and_then(Option::as_ref)
    }
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

    fn call_doc(&self, call: u32) -> Option<&'a Document> {
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
        if c.result_collapsible(self.policy) && !c.result_live_at(self.epochs) {
            return ref_text(call, &self.live_text(call));
        }
        if let Some(d) = c.dedupe_of {
            return format!(
                "[{}: identical to {} above]",
                call_alias(call),
                call_alias(d)
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
                u.map(super::chat::render_user).unwrap_or(Value::Null)
            }
            ItemKind::Passthrough => self.entry(it).raw.clone().unwrap_or(Value::Null),
            ItemKind::Assistant => self.assistant(i, it),
            ItemKind::ToolResult => self.tool_result(it),
        };
        let chars = rendered_chars(std::slice::from_ref(&v));
        (serde_json::to_string(&v).expect("serialisable"), chars)
    }

    /// Whether item `i` is an assistant message with thinking.
    fn has_thinking(&self, i: usize) -> bool {
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
        if c.shows.is_empty() && c.dedupe_of.is_none() && !collapsed {
            content.extend_from_slice(super::images::of_doc(self.call_doc(it.call)));
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
        let stop = e
            .meta
            .as_ref()
            .and_then(|m| m.get("stopReason"))
            .and_then(Value::as_str);
        if matches!(stop, Some("aborted" | "error")) {
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
            out.push(text);
            if let Some(u) = f.user {
                out.push(item_json(u as usize));
            }
            if let Some(p) = pinned {
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
        let mut pending: Vec<String> = Vec::new();
        for i in start..self.limit {
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
        for m in pending.drain(..) {
            out.push(&m);
        }
        out.finish()
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
                        && c.dedupe_of.is_none()
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
        if let Some(p) = self.fold().and_then(|f| f.pinned.as_ref()) {
            n += utf16_len(p);
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
    let text = |c: &Value| utf16_len(&fold::content_text(c));
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

// -------------------------------------------------------------- state

/// A host compaction seen at ingest, applied at the next assembly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostFold {
    pub summary: String,
    /// Fingerprint of the first message the host kept (if it kept any).
    pub first_kept_fp: Option<String>,
    /// Items that existed when the summary arrived (cut if nothing was kept).
    pub items_at: u32,
}

/// A fold the last epoch proposed; applied if the skeleton is over budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FoldPlan {
    pub cut: u32,
    pub user: Option<u32>,
}

/// Counters for tests and benchmarks.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheStats {
    pub epochs: usize,
    /// Change notices (files the model saw that changed).
    #[serde(default)]
    pub notices: usize,
    pub folds: usize,
    pub host_folds: usize,
    pub collapsed_results: usize,
    pub collapsed_args: usize,
    pub dedupes: usize,
    pub live_units: u64,
    pub items: usize,
}

/// Items of the persisted lists (`aliases.t`, `state.calls`, `state.files`,
/// `state.epochs`) changed in place since the writer last took them, so a
/// flush pages only those instead of comparing every list with what it
/// wrote (O(history) per flush). Appends need no entry: the writer sees the
/// lengths; `aliases.f` and `state.folds` only grow.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Changed {
    pub alias_t: BTreeSet<u32>,
    pub calls: BTreeSet<u32>,
    pub files: BTreeSet<u32>,
    pub epochs: BTreeSet<u32>,
    /// Everything may differ from what was written (the state was derived
    /// again from the turns).
    pub all: bool,
}

/// One chat item as rendered, with its size as the fold trigger counts it.
#[derive(Debug, Clone)]
struct Rendered {
    json: String,
    chars: u64,
    /// An assistant message with thinking (an epoch that drops thinking
    /// before it renders it again).
    thinking: bool,
}

/// The cache layout of one session: persisted state plus derived caches.
#[derive(Debug, Default)]
pub struct CacheLayout {
    pub aliases: Aliases,
    pub state: CacheState,
    /// What changed in place since the last flush took it.
    pub changed: Changed,
    pub items: Items,
    /// Rendered items; an epoch invalidates the ones it changed.
    json: Vec<Option<Rendered>>,
    /// Calls an epoch could still collapse ([`CallState::open`]), of the
    /// first `open_looked`; bind_result re-adds a call it changed.
    open: Vec<u32>,
    open_looked: usize,
    /// The state's text messages, serialised.
    texts: TextJson,
    /// Length of the last rendered context (sizes the next one).
    out_len: usize,
    /// Calls whose live units may not be 0 (of the first `looked`).
    unsettled: Vec<u32>,
    looked: usize,
    /// Size of the last rendered context as the fold trigger counts it.
    pub rendered_chars: u64,
    /// Exact versions shown by activations.
    pub frozen: Frozen,
    /// Object id → the newest call that shows its content (read, write,
    /// activation), for pins and deactivation.
    pub latest_show: HashMap<String, u32>,
    pub host_fold: Option<HostFold>,
    pub fold_plan: Option<FoldPlan>,
    /// Per file, the calls that touched it (working files).
    file_calls: FileCalls,
    /// Calls whose result arrived since the last render: the model has not
    /// seen them, so no epoch collapses them.
    fresh: Vec<u32>,
}

impl CacheLayout {
    /// After restoring `aliases` and `state`: derive the items and links.
    pub fn rebuild<T: AsRef<Turn>>(&mut self, turns: &[T]) {
        self.aliases.reindex();
        self.items = Items::from_turns(turns, &self.aliases);
        self.json.clear();
        self.open.clear();
        self.open_looked = 0;
        self.texts = TextJson::default();
        self.unsettled.clear();
        self.looked = 0;
        self.latest_show.clear();
        self.file_calls.clear();
        self.fresh.clear();
        for i in 0..self.state.calls.len() {
            self.note_show(i as u32, self.state.calls[i].clone());
            self.note_file_calls(i as u32);
        }
    }

    /// Files of call `call` (its path's, its activation's) → `file_calls`.
    fn note_file_calls(&mut self, call: u32) {
        let c = &self.state.calls[call as usize];
        if let Some(f) = c.file {
            self.file_calls.note(f, call);
        }
        let shown: Vec<u32> = shows_files(&self.aliases, c);
        for f in shown {
            self.file_calls.note(f, call);
        }
    }

    /// Whether the model has file `f`'s content in view: a read, write or
    /// activation result of it live, or an edit body of it live, after the
    /// fold cut.
    pub fn file_in_view(&self, f: u32) -> bool {
        let epochs = self.state.epochs.len() as u32;
        let start = self.fold_cut();
        self.file_calls.of(f).iter().any(|&k| {
            let c = &self.state.calls[k as usize];
            let result_in_view = self.items.result_item[k as usize].is_some_and(|r| r >= start);
            let args_in_view = self
                .items
                .assistant_item
                .get(k as usize)
                .is_some_and(|&a| a >= start);
            match c.tool.as_str() {
                "edit" => args_in_view && c.args_live_at(epochs),
                "write" => args_in_view && c.args_live_at(epochs),
                _ => result_in_view && c.result_live_at(epochs) && c.dedupe_of.is_none(),
            }
        })
    }

    /// Calls whose result arrived since the last render (unseen).
    pub fn fresh(&self) -> &[u32] {
        &self.fresh
    }

    /// Calls kept at the last epoch for the working files.
    pub fn working(&self) -> &[u32] {
        self.state
            .epochs
            .iter()
            .rev()
            .find(|e| !e.notice)
            .map_or(&[], |e| e.working.as_slice())
    }

    /// Appends a text after the last item (see [`EpochRecord::notice`]): an
    /// epoch that collapses nothing.
    pub fn push_notice(&mut self, call_index: u32, text: String) {
        let (thinking_before, working) = self
            .state
            .epochs
            .last()
            .map_or((0, Vec::new()), |e| (e.thinking_before, e.working.clone()));
        self.state.epochs.push(EpochRecord {
            call: call_index,
            thinking_before,
            anchor: self.items.len().saturating_sub(1) as u32,
            delta: Some(text),
            working,
            notice: true,
        });
    }

    fn note_show(&mut self, call: u32, c: CallState) {
        if !c.has_result || c.is_error {
            return;
        }
        // An identical re-read shows nothing itself: its original stays the newest showing call.
        if matches!(c.tool.as_str(), "read" | "write") && c.dedupe_of.is_none() {
            if let Some(id) = c.file.and_then(|f| self.aliases.f.get(f as usize)) {
                self.latest_show.insert(id.clone(), call);
            }
        }
        for s in c.shows.iter().filter(|s| !s.note) {
            self.latest_show.insert(s.id.clone(), call);
        }
    }

    /// A new tool-call block.
    pub fn push_call(&mut self, tool: &str, args: &Value, file: Option<u32>) -> u32 {
        let i = self.aliases.push_call();
        let ranged = tool == "read"
            && ["offset", "limit"]
                .iter()
                .any(|k| args.get(*k).is_some_and(|v| !v.is_null()));
        self.state.calls.push(CallState {
            tool: tool.to_string(),
            arg_chars: arg_chars(tool, args),
            file,
            ranged,
            ..Default::default()
        });
        if let Some(f) = file {
            self.file_calls.note(f, i);
        }
        i
    }

    /// A file seen (by a tool call's path or by the session): its index.
    pub fn file(&mut self, object_id: &str, path: impl FnOnce() -> String) -> u32 {
        let (i, new) = self.aliases.file(object_id);
        if new {
            self.state.files.push(FileEntry {
                path: path(),
                chars: 0,
            });
        }
        i
    }

    /// The result of call `call` arrived as toolcall `object_id`.
    #[allow(clippy::too_many_arguments)]
    pub fn bind_result(
        &mut self,
        call: u32,
        object_id: &str,
        result_chars: u64,
        is_error: bool,
        args: &Value,
        shows: Vec<Shown>,
        dedupe_of: Option<u32>,
        points_to: Option<u32>,
    ) {
        self.aliases.bind_call(call, object_id);
        self.changed.alias_t.insert(call);
        if (call as usize) < self.open_looked {
            self.open.push(call);
        }
        let Some(c) = self.state.calls.get_mut(call as usize) else {
            return;
        };
        self.changed.calls.insert(call);
        c.has_result = true;
        c.is_error = is_error;
        c.result_chars = result_chars;
        c.shows = shows;
        c.dedupe_of = dedupe_of;
        c.points_to = points_to;
        // File sizes as the calls show them (the prototype's rule).
        if let (Some(f), false) = (c.file, is_error) {
            if let Some(fe) = self.state.files.get_mut(f as usize) {
                self.changed.files.insert(f);
                match c.tool.as_str() {
                    "read" => fe.chars = fe.chars.max(result_chars),
                    "write" => fe.chars = c.arg_chars,
                    "edit" => {
                        let s = |k: &str| {
                            args.get(k).and_then(Value::as_str).map_or(0, utf16_len) as i64
                        };
                        fe.chars = (fe.chars as i64 + s("newText") - s("oldText")).max(0) as u64;
                    }
                    _ => {}
                }
            }
        }
        let c = c.clone();
        self.note_show(call, c);
        self.note_file_calls(call);
        self.fresh.push(call);
    }

    /// The earlier call a new read is identical to: same file, same
    /// arguments, same text, no other tool on that file in between, and
    /// the earlier one still live.
    pub fn find_dedupe(
        &self,
        call: u32,
        args: &Value,
        text: &str,
        doc: &dyn DocLookup,
    ) -> Option<u32> {
        let c = self.state.calls.get(call as usize)?;
        if c.tool != "read" || c.file.is_none() {
            return None;
        }
        for j in (0..call).rev() {
            let p = &self.state.calls[j as usize];
            if p.file != c.file {
                continue;
            }
            if p.tool != "read" {
                return None;
            }
            let Some(d) = self.aliases.t[j as usize]
                .as_deref()
                .and_then(|id| doc.get_doc(id))
            else {
                continue;
            };
            if d.get("args") != Some(args) {
                continue;
            }
            let same = d.get("content").and_then(Value::as_str) == Some(text);
            return (same && !p.is_error && p.collapsed.is_none() && p.dedupe_of.is_none())
                .then_some(j);
        }
        None
    }

    /// Calls that never collapse: pinned toolcalls and the newest showing
    /// call of each pinned object.
    pub fn pinned_calls<'s>(&self, pinned: impl Iterator<Item = &'s String>) -> HashSet<usize> {
        let mut out = HashSet::new();
        for id in pinned {
            if let Some(c) = self.aliases.call_of(id) {
                out.insert(c as usize);
            }
            if let Some(&c) = self.latest_show.get(id) {
                out.insert(c as usize);
            }
        }
        out
    }

    pub fn live_units(&self, p: &CachePolicy, pinned: &HashSet<usize>) -> u64 {
        epochs::live_units(&self.state.calls, p, |i| pinned.contains(&i))
    }

    /// [`CacheLayout::live_units`] over the calls not settled yet (checked
    /// on every call: O(live calls), not O(calls)).
    pub fn live_units_now(&mut self, p: &CachePolicy, pinned: &HashSet<usize>) -> u64 {
        let calls = &self.state.calls;
        self.unsettled
            .extend(self.looked.min(calls.len()) as u32..calls.len() as u32);
        self.looked = calls.len();
        self.unsettled.retain(|&c| !calls[c as usize].settled(p));
        let n = self
            .unsettled
            .iter()
            .filter(|&&c| !pinned.contains(&(c as usize)))
            .map(|&c| calls[c as usize].live_units(p))
            .sum();
        debug_assert_eq!(n, self.live_units(p, pinned), "a settled call changed");
        n
    }

    /// Live units that pending deactivations would free.
    pub fn deactivated_units(&self, p: &CachePolicy) -> u64 {
        self.state
            .deactivated
            .iter()
            .filter_map(|&c| self.state.calls.get(c as usize))
            .map(|c| c.live_units(p))
            .sum()
    }

    /// Calls showing `object_id` that are still live (for deactivate).
    pub fn live_calls_of(&self, object_id: &str) -> Vec<u32> {
        let mut out = Vec::new();
        if let Some(c) = self.aliases.call_of(object_id) {
            out.push(c);
        }
        if let Some(crate::context::aliases::Alias::File(f)) = self.aliases.of_object(object_id) {
            for (i, c) in self.state.calls.iter().enumerate() {
                if c.file == Some(f)
                    && matches!(c.tool.as_str(), "read" | "write")
                    && c.collapsed.is_none()
                {
                    out.push(i as u32);
                }
            }
        }
        for (i, c) in self.state.calls.iter().enumerate() {
            if c.shows.iter().any(|s| s.id == object_id && !s.note) && c.collapsed.is_none() {
                out.push(i as u32);
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Runs an epoch (see [`super::epochs`]) at model call `call_index`;
    /// `file_line(i)` renders file i's delta line. Proposes a fold. Unless
    /// `force`d (a host fold needs its epoch), an epoch that would collapse
    /// nothing does not run. Returns
    /// the calls whose result or arguments it collapsed. O(calls still
    /// open + kept), not O(calls).
    pub fn run_epoch(
        &mut self,
        p: &CachePolicy,
        call_index: u32,
        pinned: &HashSet<usize>,
        file_line: &dyn Fn(u32) -> String,
        force: bool,
    ) -> Vec<u32> {
        let number = self.state.epochs.len() as u32 + 1;
        let deactivated: HashSet<usize> =
            self.state.deactivated.iter().map(|&c| c as usize).collect();
        let mut kept = epochs::kept_calls(&self.state.calls, p, |i| deactivated.contains(&i));
        // Never collapse what the model has not seen yet.
        kept.extend(
            self.fresh
                .iter()
                .map(|&c| c as usize)
                .filter(|i| !deactivated.contains(i)),
        );
        // Thinking is dropped before the oldest call kept for recency.
        let recent_oldest = kept.iter().min().copied();
        let aliases = &self.aliases;
        let prev = self.working().to_vec();
        let mut work = working::working_calls(
            &self.state.calls,
            &self.file_calls,
            p,
            &|c| shows_files(aliases, c),
            &prev,
        );
        work.retain(|i| !deactivated.contains(i));
        kept.extend(work.iter().copied());
        kept.sort_unstable();
        kept.dedup();
        let is_pinned = |i: usize| pinned.contains(&i) && !deactivated.contains(&i);
        let n = self.state.calls.len();
        self.open.extend(self.open_looked.min(n) as u32..n as u32);
        self.open_looked = n;
        self.open.sort_unstable();
        self.open.dedup();
        // Nothing to collapse (what is over `high` arrived with this call):
        // no epoch; the next call runs it, once the model has seen that.
        let collapsible = |c: &u32| {
            let i = *c as usize;
            let st = &self.state.calls[i];
            kept.binary_search(&i).is_err()
                && !is_pinned(i)
                && ((st.result_collapsible(p) && st.collapsed.is_none())
                    || (st.args_collapsible(p) && st.args_collapsed.is_none()))
        };
        if !force && !self.open.iter().any(collapsible) {
            self.fold_plan = None;
            // Files first seen are still listed, in a record that collapses
            // nothing (appended: the cached prefix stays).
            if let Some(delta) = self.delta(file_line, false) {
                self.push_notice(call_index, delta);
            }
            return Vec::new();
        }
        #[cfg(debug_assertions)]
        let mut every = self.state.calls.clone();
        let changed = epochs::collapse_all_but(
            &mut self.state.calls,
            &self.open,
            &kept,
            p,
            number,
            is_pinned,
        );
        #[cfg(debug_assertions)]
        {
            let all: Vec<u32> = (0..n as u32).collect();
            epochs::collapse_all_but(&mut every, &all, &kept, p, number, is_pinned);
            assert!(every == self.state.calls, "a closed call was not open");
        }
        let calls = &self.state.calls;
        self.open
            .retain(|&c| calls.get(c as usize).is_some_and(|st| st.open(p)));
        self.state.deactivated.clear();
        // Only what this epoch collapsed renders differently.
        for &c in &changed {
            self.changed.calls.insert(c);
            let st = &self.state.calls[c as usize];
            if st.collapsed == Some(number) {
                if let Some(Some(r)) = self.items.result_item.get(c as usize) {
                    self.json.get_mut(*r as usize).map(Option::take);
                }
            }
            if st.args_collapsed == Some(number) {
                if let Some(&a) = self.items.assistant_item.get(c as usize) {
                    self.json.get_mut(a as usize).map(Option::take);
                }
            }
        }

        // The assistant item holding the oldest kept call: thinking is
        // dropped before it, and a fold would cut there.
        let first_kept = kept
            .first()
            .map(|&oldest| self.first_assistant_from(oldest as u32));

        // Thinking: every assistant item before the first one holding a call
        // kept for recency (a working file's old read keeps no thinking).
        let prev = self.state.epochs.last().map_or(0, |e| e.thinking_before);
        let boundary = recent_oldest
            .map(|oldest| self.first_assistant_from(oldest as u32))
            .unwrap_or(prev);
        let thinking_before = if p.drop_thinking {
            prev.max(boundary)
        } else {
            prev
        };
        // Only items whose rendering has thinking change.
        for i in prev..thinking_before {
            if let Some(slot) = self.json.get_mut(i as usize) {
                if slot.as_ref().is_some_and(|r| r.thinking) {
                    *slot = None;
                }
            }
        }

        let delta = self.delta(file_line, false);
        let anchor = self.items.len().saturating_sub(1) as u32;
        self.state.epochs.push(EpochRecord {
            call: call_index,
            thinking_before,
            anchor,
            delta,
            working: work.iter().map(|&i| i as u32).collect(),
            notice: false,
        });

        // Fold proposal: cut at the first assistant holding a kept call, or
        // at the current turn's prompt if later.
        self.fold_plan = None;
        if p.fold > 0 {
            let mut cut = first_kept.unwrap_or(self.items.len() as u32);
            let user = self
                .items
                .list
                .iter()
                .rposition(|it| it.kind == ItemKind::User)
                .map(|u| u as u32);
            if let Some(u) = user {
                cut = cut.max(u);
            }
            self.fold_plan = Some(FoldPlan {
                cut,
                user: user.filter(|&u| u < cut),
            });
        }
        changed
    }

    /// The first assistant item holding a call ≥ `call` (the last item if
    /// it is an assistant without calls; else the item count). Calls are
    /// numbered in item order, so it is the item of `call` itself.
    fn first_assistant_from(&self, call: u32) -> u32 {
        let found = self
            .items
            .assistant_item
            .get(call as usize)
            .copied()
            .filter(|&a| {
                self.items.list.get(a as usize).is_some_and(|it| {
                    it.kind == ItemKind::Assistant && it.call <= call && call < it.call + it.calls
                })
            });
        let scan = || {
            let n = self.items.len();
            self.items
                .list
                .iter()
                .enumerate()
                .find(|(i, it)| {
                    it.kind == ItemKind::Assistant
                        && ((it.calls > 0 && it.call + it.calls > call)
                            || (it.calls == 0 && i + 1 == n))
                })
                .map_or(n as u32, |(i, _)| i as u32)
        };
        debug_assert!(found.is_none_or(|a| a == scan()), "calls out of item order");
        found.unwrap_or_else(scan)
    }

    /// `FILES +k` with the files first seen since the last delta (all of
    /// them when `all`).
    fn delta(&mut self, file_line: &dyn Fn(u32) -> String, all: bool) -> Option<String> {
        let from = if all { 0 } else { self.state.files_listed };
        let to = self.state.files.len() as u32;
        self.state.files_listed = to;
        if from >= to {
            return None;
        }
        let mut s = format!("FILES +{}", to - from);
        for i in from..to {
            s.push('\n');
            s.push_str(&file_line(i));
        }
        Some(s)
    }

    /// Applies a fold at `plan` with summary `text` (prefixed with the fold
    /// line); the epoch's delta becomes the full file list.
    pub fn apply_fold(
        &mut self,
        plan: FoldPlan,
        text: &str,
        pinned_block: Option<String>,
        host: bool,
        file_line: &dyn Fn(u32) -> String,
    ) {
        let epoch = self.state.epochs.len() as u32;
        let full = self.delta(file_line, true);
        if let Some(e) = self.state.epochs.last_mut() {
            e.delta = full;
            self.changed.epochs.insert(epoch - 1);
            self.texts.forget_epoch(epoch as usize - 1);
        }
        self.state.folds.push(FoldRecord {
            epoch,
            cut: plan.cut,
            user: plan.user,
            text: format!("{FOLD_LINE}\n{text}"),
            pinned: pinned_block,
            host,
        });
        self.fold_plan = None;
    }

    /// The current fold's cut (0 when unfolded).
    pub fn fold_cut(&self) -> u32 {
        self.state.folds.last().map_or(0, |f| f.cut)
    }

    /// Renders the current state: every item in view is rendered once per
    /// epoch and cached.
    pub fn render_json<T: AsRef<Turn>>(
        &mut self,
        turns: &[T],
        p: &CachePolicy,
        doc: &dyn DocLookup,
        display: &dyn Fn(&FilesystemSource) -> String,
        system: Option<&str>,
        buf: String,
    ) -> String {
        let epochs = self.state.epochs.len() as u32;
        let CacheLayout {
            aliases,
            state,
            items,
            json,
            texts,
            frozen,
            rendered_chars,
            out_len,
            ..
        } = self;
        texts.fill(state);
        let env = Env {
            turns,
            items,
            aliases,
            state,
            policy: p,
            doc,
            frozen,
            display,
            epochs,
            limit: items.len(),
        };
        json.resize(items.len(), None);
        let start = env.view_start();
        let fold = env.fold();
        let fold_user = fold.and_then(|f| f.user).map(|u| u as usize);
        let mut chars = utf16_len(HEADER);
        for i in (start..items.len()).chain(fold_user) {
            let r = json[i].get_or_insert_with(|| {
                let (json, chars) = env.render_item_counted(i);
                Rendered {
                    json,
                    chars,
                    thinking: env.has_thinking(i),
                }
            });
            chars += r.chars;
        }
        if let Some(f) = fold {
            chars += utf16_len(&f.text) + f.pinned.as_deref().map_or(0, utf16_len);
        }
        for (k, e) in state.epochs.iter().enumerate() {
            if e.anchor as usize >= start {
                chars += texts.delta(k).map_or(0, |(_, n)| *n);
            }
        }
        *rendered_chars = chars;
        let json: &Vec<Option<Rendered>> = json;
        // The last output's length plus room for the new messages: no regrowth.
        let out = env.assemble_with(
            &|i| json[i].as_ref().map_or("null", |r| r.json.as_str()),
            system,
            texts,
            buf,
            *out_len + *out_len / 8 + 4096,
        );
        *out_len = out.len();
        self.fresh.clear();
        out
    }

    pub fn stats(&self, p: &CachePolicy, pinned: &HashSet<usize>) -> CacheStats {
        let calls = &self.state.calls;
        CacheStats {
            epochs: self.state.epochs.iter().filter(|e| !e.notice).count(),
            notices: self
                .state
                .epochs
                .iter()
                .filter(|e| {
                    e.notice && e.delta.as_deref().is_some_and(|d| d.starts_with("CHANGED"))
                })
                .count(),
            folds: self.state.folds.len(),
            host_folds: self.state.folds.iter().filter(|f| f.host).count(),
            collapsed_results: calls.iter().filter(|c| c.collapsed.is_some()).count(),
            collapsed_args: calls.iter().filter(|c| c.args_collapsed.is_some()).count(),
            dedupes: calls.iter().filter(|c| c.dedupe_of.is_some()).count(),
            live_units: self.live_units(p, pinned),
            items: self.items.len(),
        }
    }

    /// The engine's fold summary for a cut (see [`fold`]).
    pub fn summary<T: AsRef<Turn>>(&self, turns: &[T], cut: u32, p: &CachePolicy) -> String {
        fold::extractive_summary(
            turns,
            &self.items.list,
            cut as usize,
            &self.state.calls,
            &self.state.files,
            p.summary_chars as usize,
        )
    }

    /// The `PINNED` block for pinned calls whose place is before `cut`.
    pub fn pinned_block<T: AsRef<Turn>>(
        &self,
        turns: &[T],
        cut: u32,
        pinned: &HashSet<usize>,
        p: &CachePolicy,
        doc: &dyn DocLookup,
        display: &dyn Fn(&FilesystemSource) -> String,
    ) -> Option<String> {
        let mut calls: Vec<usize> = pinned
            .iter()
            .copied()
            .filter(|&c| {
                self.items
                    .result_item
                    .get(c)
                    .copied()
                    .flatten()
                    .is_some_and(|r| r < cut)
            })
            .collect();
        if calls.is_empty() {
            return None;
        }
        calls.sort_unstable();
        let env = Env {
            turns,
            items: &self.items,
            aliases: &self.aliases,
            state: &self.state,
            policy: p,
            doc,
            frozen: &self.frozen,
            display,
            epochs: self.state.epochs.len() as u32,
            limit: self.items.len(),
        };
        let mut s = String::from("PINNED");
        for c in calls {
            let st = &self.state.calls[c];
            let text = if st.tool == "write" {
                env.call_doc(c as u32)
                    .and_then(|d| d.get("args"))
                    .and_then(|a| a.get("content"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            } else if st.tool == "edit" {
                // The edit's bodies: what a working file's view needs.
                env.call_doc(c as u32)
                    .and_then(|d| d.get("args"))
                    .map(|a| serde_json::to_string(a).unwrap_or_default())
                    .unwrap_or_default()
            } else {
                env.live_text(c as u32)
            };
            let head = match st.file.filter(|_| st.shows.is_empty()) {
                Some(f) => format!(
                    "--- file id={} path={} ({}{}) ---",
                    file_alias(f),
                    self.state
                        .files
                        .get(f as usize)
                        .map_or("", |e| e.path.as_str()),
                    call_alias(c as u32),
                    if st.tool == "edit" { " edit" } else { "" }
                ),
                None => format!("--- {} {} ---", call_alias(c as u32), st.tool),
            };
            s.push('\n');
            s.push_str(&head);
            s.push('\n');
            s.push_str(&text);
        }
        Some(s)
    }
}

/// The files (alias indices) a call's activation shows.
pub fn shows_files(aliases: &Aliases, c: &CallState) -> Vec<u32> {
    c.shows
        .iter()
        .filter(|s| !s.note)
        .filter_map(|s| match aliases.of_object(&s.id) {
            Some(super::aliases::Alias::File(f)) => Some(f),
            _ => None,
        })
        .collect()
}
