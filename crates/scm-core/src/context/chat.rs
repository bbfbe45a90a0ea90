//! The chat object's turns and how they render back into pi-ai messages.
//!
//! Tool-call *arguments* live in the toolcall objects (`args`), not in the
//! chat document; a call whose result has not arrived yet keeps its arguments
//! here until it does. Assistant content parts are kept in order with their
//! provider fields (thinking signatures must round-trip), minus `arguments`.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// One turn: a user message and every model call until the next one.
/// Messages before the first user message form turn 0 with `user: None`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    pub index: usize,
    pub user: Option<UserEntry>,
    pub messages: Vec<MessageEntry>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserEntry {
    /// As the harness sent it (string or parts).
    pub content: Value,
    #[serde(default)]
    pub timestamp: Value,
    pub fp: String,
}

/// A tool call of an assistant message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallEntry {
    pub call_id: String,
    pub name: String,
    /// The toolcall object holding its result (and `args`); None until the
    /// result arrives.
    pub toolcall_id: Option<String>,
    /// Only while `toolcall_id` is None.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
}

/// A non-user message of a turn. Which fields are set depends on `role`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MessageEntry {
    pub role: String,
    pub fp: String,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub timestamp: Value,
    /// assistant: content parts (toolCall parts without `arguments`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCallEntry>>,
    /// assistant: api, provider, model, usage, stopReason and any other field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// toolResult fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toolcall_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// A result with no matching tool call: kept as an object, not rendered
    /// (a provider rejects a tool result without its call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmatched: Option<bool>,
    /// Consumed but not rendered (bashExecution, custom, summaries, system,
    /// unknown roles).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<bool>,
    /// The message as sent, for the kinds the cache layout passes through
    /// (bashExecution, custom, branchSummary) and host compaction summaries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<Value>,
}

/// The text that stands in for a tool result in the chat.
pub fn toolcall_ref_text(toolcall_id: &str, tool: &str, is_error: bool) -> String {
    format!(
        "toolcall_ref id={toolcall_id} tool={tool} status={}",
        if is_error { "fail" } else { "ok" }
    )
}

pub fn render_user(u: &UserEntry) -> Value {
    let mut m = Map::new();
    m.insert("role".into(), "user".into());
    m.insert("content".into(), u.content.clone());
    if !u.timestamp.is_null() {
        m.insert("timestamp".into(), u.timestamp.clone());
    }
    Value::Object(m)
}

/// An assistant message with its tool calls' arguments restored by `args`.
pub fn render_assistant(entry: &MessageEntry, args: impl Fn(&ToolCallEntry) -> Value) -> Value {
    let calls = entry.tool_calls.as_deref().unwrap_or_default();
    let mut k = 0;
    let content: Vec<Value> = entry
        .content
        .as_deref()
        .unwrap_or_default()
        .iter()
        .map(|part| {
            if part.get("type").and_then(Value::as_str) != Some("toolCall") {
                return part.clone();
            }
            let mut p = part.clone();
            if let (Some(obj), Some(call)) = (p.as_object_mut(), calls.get(k)) {
                obj.insert("arguments".into(), args(call));
            }
            k += 1;
            p
        })
        .collect();
    let mut m = Map::new();
    m.insert("role".into(), "assistant".into());
    m.insert("content".into(), Value::Array(content));
    if let Some(meta) = &entry.meta {
        for (k, v) in meta {
            m.insert(k.clone(), v.clone());
        }
    }
    if !entry.timestamp.is_null() {
        m.insert("timestamp".into(), entry.timestamp.clone());
    }
    Value::Object(m)
}

/// A tool result as a `toolcall_ref`; None for unmatched results.
pub fn render_tool_result(entry: &MessageEntry) -> Option<Value> {
    if entry.unmatched == Some(true) {
        return None;
    }
    let id = entry.toolcall_id.as_deref()?;
    let tool = entry.tool.as_deref().unwrap_or_default();
    let is_error = entry.is_error.unwrap_or(false);
    let mut m = Map::new();
    m.insert("role".into(), "toolResult".into());
    m.insert("toolCallId".into(), entry.call_id.clone().into());
    m.insert("toolName".into(), tool.into());
    m.insert(
        "content".into(),
        json!([{"type": "text", "text": toolcall_ref_text(id, tool, is_error)}]),
    );
    m.insert("isError".into(), is_error.into());
    if !entry.timestamp.is_null() {
        m.insert("timestamp".into(), entry.timestamp.clone());
    }
    Some(Value::Object(m))
}

/// Whether pi's provider conversion drops this assistant message, tool
/// calls and all: it stopped on an error or an abort. Its calls get no
/// stand-in results (they would reach the provider without their calls).
pub fn dropped_by_provider(entry: &MessageEntry) -> bool {
    let stop = entry
        .meta
        .as_ref()
        .and_then(|m| m.get("stopReason"))
        .and_then(Value::as_str);
    matches!(stop, Some("aborted" | "error"))
}

/// The result that stands in for a tool call whose result never arrived, so
/// every tool call keeps a matching result (not for a message the provider
/// drops, see [`dropped_by_provider`]).
pub fn render_missing_result(call: &ToolCallEntry) -> Value {
    json!({
        "role": "toolResult",
        "toolCallId": call.call_id,
        "toolName": call.name,
        "content": [{"type": "text", "text": format!("no result was recorded for tool call {}", call.call_id)}],
        "isError": true,
    })
}

/// Rendered chat messages, each serialised once (assembly only copies them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChatJson {
    pub messages: Vec<String>,
    pub is_result: Vec<bool>,
    /// Total length of `messages`, to size the output once.
    pub bytes: usize,
}

impl ChatJson {
    pub fn push(&mut self, v: &Value) {
        let s = serde_json::to_string(v).expect("a Value always serialises");
        self.is_result.push(v["role"] == "toolResult");
        self.bytes += s.len();
        self.messages.push(s);
    }

    /// Holds message `len()`'s place without rendering it: the cache layout
    /// renders its own items and never reads these (a resume renders them
    /// again for the layout it opens with).
    pub fn push_unrendered(&mut self, is_result: bool) {
        self.is_result.push(is_result);
        self.messages.push(String::new());
    }

    pub fn len(&self) -> usize {
        self.messages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }
}

/// The rendered chat plus the missing results to insert (position in
/// `messages` before which they go, serialised).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RenderedChat {
    pub messages: ChatJson,
    pub missing: Vec<(usize, String)>,
}

/// Renders turns (used by reconstruction and resume; the live session
/// appends the same renderings incrementally). `args` yields a resolved
/// call's arguments. Also returns the assistant messages with unresolved
/// calls as (rendered index, turn, message index).
pub fn render_turns(
    turns: &[Turn],
    args: impl Fn(&ToolCallEntry) -> Value,
) -> (RenderedChat, Vec<(usize, usize, usize)>) {
    let mut out = RenderedChat::default();
    let mut open_at: Vec<(usize, usize, usize)> = Vec::new();
    let mut open: Vec<(usize, Vec<ToolCallEntry>)> = Vec::new();
    for (t, turn) in turns.iter().enumerate() {
        if let Some(u) = &turn.user {
            out.messages.push(&render_user(u));
        }
        for (m, e) in turn.messages.iter().enumerate() {
            match e.role.as_str() {
                "assistant" if e.skipped.is_none() => {
                    let unresolved: Vec<ToolCallEntry> = (!dropped_by_provider(e))
                        .then_some(e)
                        .into_iter()
                        .flat_map(|e| e.tool_calls.iter().flatten())
                        .filter(|c| c.toolcall_id.is_none())
                        .cloned()
                        .collect();
                    if !unresolved.is_empty() {
                        open_at.push((out.messages.len(), t, m));
                        open.push((out.messages.len(), unresolved));
                    }
                    out.messages.push(&render_assistant(e, &args));
                }
                "toolResult" => {
                    if let Some(v) = render_tool_result(e) {
                        out.messages.push(&v);
                    }
                }
                _ => {}
            }
        }
    }
    out.missing = missing_positions(&out.messages, &open);
    (out, open_at)
}

/// The turns as a call saw them when a later call's messages share its
/// transaction (write-behind coalesces writes): the shortest prefix of the
/// entries (each turn's user message, then its messages, in order) whose
/// chat renders `shown` messages. None if no prefix does.
pub fn turns_as_shown(
    turns: &[Turn],
    shown: usize,
    args: impl Fn(&ToolCallEntry) -> Value,
) -> Option<Vec<Turn>> {
    // Entry k of the flattened order is (turn, None) for a user message or
    // (turn, Some(m)) for message m.
    let mut order: Vec<(usize, Option<usize>)> = Vec::new();
    for (t, turn) in turns.iter().enumerate() {
        if turn.user.is_some() {
            order.push((t, None));
        }
        order.extend((0..turn.messages.len()).map(|m| (t, Some(m))));
    }
    let prefix = |p: usize| -> Vec<Turn> {
        let Some(&(last_t, last_m)) = p.checked_sub(1).and_then(|k| order.get(k)) else {
            return Vec::new();
        };
        let mut out: Vec<Turn> = turns[..last_t].to_vec();
        let t = &turns[last_t];
        out.push(Turn {
            index: t.index,
            user: t.user.clone(),
            messages: last_m.map_or(Vec::new(), |m| t.messages[..=m].to_vec()),
        });
        out
    };
    let count = |p: usize| render_turns(&prefix(p), &args).0.messages.len();
    // Rendered messages never decrease as entries are added.
    let (mut lo, mut hi) = (0, order.len());
    while lo < hi {
        let mid = (lo + hi) / 2;
        if count(mid) < shown {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    (count(lo) == shown).then(|| prefix(lo))
}

/// Where the missing results of `open` assistant messages go: after the run
/// of tool results that follows each of them.
pub fn missing_positions(
    chat: &ChatJson,
    open: &[(usize, Vec<ToolCallEntry>)],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (at, calls) in open {
        let mut p = at + 1;
        while p < chat.len() && chat.is_result[p] {
            p += 1;
        }
        out.extend(calls.iter().map(|c| {
            (
                p,
                serde_json::to_string(&render_missing_result(c)).expect("serialisable"),
            )
        }));
    }
    out.sort_by_key(|(p, _)| *p);
    out
}
