//! Context assembly: session state → the pi-ai messages the model sees.
//!
//! Assembly reads an immutable [`AssemblyInput`] (built by the live session
//! from its caches, or by reconstruction from stored versions), so layout
//! variants can sit side by side. [`Layout::Spec`] is the drop-in contract
//! (SSOT §4.1–4.2, memory-system-v0 §21.2):
//!
//! 1. `{role:"system"}` with the system prompt (omitted if none, or if
//!    `RenderOptions::emit_system_message` is false);
//! 2. one `user` message `METADATA_POOL` with one line per pool object, in
//!    pool insertion order (append-only → stable prefix);
//! 3. the chat: user and assistant messages as sent, every tool result as a
//!    `toolcall_ref`;
//! 4. one `user` message `ACTIVE_CONTENT id=…` per active object, in
//!    activation order.
//!
//! The same text never appears twice: an active object whose content equals
//! an earlier active object's (same `content_hash`) renders as a pointer.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::model::{char_count_of, FilesystemSource};
use crate::store::Document;

pub const POOL_HEADER: &str = "METADATA_POOL";
pub const ACTIVE_HEADER: &str = "ACTIVE_CONTENT";

/// Which arrangement of the four parts to produce.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    /// System, pool, chat, active content (the spec's order).
    #[default]
    Spec,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RenderOptions {
    /// Put the system prompt in the output as a `system` message. pi 1.x's
    /// `context` hook prepends its own system prompt: turn this off there.
    pub emit_system_message: bool,
}

impl Default for RenderOptions {
    fn default() -> Self {
        Self {
            emit_system_message: true,
        }
    }
}

/// One active object, ready to render.
#[derive(Debug, Clone, PartialEq)]
pub struct ActiveBlock<'a> {
    pub id: &'a str,
    pub content_hash: Option<&'a str>,
    pub body: Cow<'a, str>,
}

/// Everything assembly reads.
#[derive(Debug, Clone)]
pub struct AssemblyInput<'a> {
    pub system_prompt: Option<&'a str>,
    /// Pool lines joined with `\n` (no trailing newline).
    pub pool_lines: &'a str,
    pub chat: &'a [Value],
    /// Missing tool results to insert before the given chat position.
    pub missing: &'a [(usize, Value)],
    pub active: &'a [ActiveBlock<'a>],
}

pub fn assemble(layout: Layout, opts: &RenderOptions, input: &AssemblyInput<'_>) -> Vec<Value> {
    match layout {
        Layout::Spec => assemble_spec(opts, input),
    }
}

fn assemble_spec(opts: &RenderOptions, input: &AssemblyInput<'_>) -> Vec<Value> {
    let mut out = Vec::with_capacity(input.chat.len() + input.active.len() + 2);
    if opts.emit_system_message {
        if let Some(sp) = input.system_prompt {
            out.push(json!({"role": "system", "content": sp}));
        }
    }
    let pool = if input.pool_lines.is_empty() {
        format!("{POOL_HEADER}\n(empty)")
    } else {
        let mut s = String::with_capacity(POOL_HEADER.len() + 1 + input.pool_lines.len());
        s.push_str(POOL_HEADER);
        s.push('\n');
        s.push_str(input.pool_lines);
        s
    };
    out.push(json!({"role": "user", "content": pool}));
    let mut from = 0;
    for (at, msg) in input.missing {
        let at = (*at).min(input.chat.len());
        out.extend_from_slice(&input.chat[from..at]);
        out.push(msg.clone());
        from = at;
    }
    out.extend_from_slice(&input.chat[from..]);
    let mut shown: HashMap<&str, &str> = HashMap::new();
    for block in input.active {
        let body: Cow<'_, str> = match block.content_hash {
            Some(h) => match shown.get(h) {
                Some(first) => Cow::Owned(format!("[same content as id={first}]")),
                None => {
                    shown.insert(h, block.id);
                    Cow::Borrowed(&block.body)
                }
            },
            None => Cow::Borrowed(&block.body),
        };
        let mut s = String::with_capacity(ACTIVE_HEADER.len() + block.id.len() + body.len() + 6);
        s.push_str(ACTIVE_HEADER);
        s.push_str(" id=");
        s.push_str(block.id);
        s.push('\n');
        s.push_str(&body);
        out.push(json!({"role": "user", "content": s}));
    }
    out
}

fn str_field<'a>(doc: &'a Document, k: &str) -> Option<&'a str> {
    doc.get(k).and_then(Value::as_str)
}

fn source_of(doc: &Document) -> Option<FilesystemSource> {
    doc.get("source").and_then(FilesystemSource::from_json)
}

/// The metadata pool line of a content object.
pub fn pool_line(doc: &Document, display_path: &dyn Fn(&FilesystemSource) -> String) -> String {
    let id = str_field(doc, "xt/id").unwrap_or_default();
    match str_field(doc, "type") {
        Some("file") => {
            let path = source_of(doc).map(|s| display_path(&s)).unwrap_or_default();
            let mut line = format!(
                "- id={id} file path={path} type={} chars={}",
                str_field(doc, "file_type").unwrap_or_default(),
                doc.get("char_count").and_then(Value::as_u64).unwrap_or(0)
            );
            match str_field(doc, "state") {
                Some("stub") => line.push_str(" [unread]"),
                Some("present") | None => {}
                Some(other) => {
                    line.push_str(" [");
                    line.push_str(other);
                    line.push(']');
                }
            }
            if let Some(reason) = str_field(doc, "content_omitted") {
                line.push_str(" [");
                line.push_str(reason);
                line.push(']');
            }
            line
        }
        _ => format!(
            "- id={id} toolcall tool={} args={} status={} chars={}",
            str_field(doc, "tool").unwrap_or_default(),
            str_field(doc, "args_display").unwrap_or_default(),
            str_field(doc, "status").unwrap_or_default(),
            char_count_of(str_field(doc, "content"))
        ),
    }
}

/// What an active object shows: its content, or a one-line note when it has
/// none (deleted, unread, binary, too large …).
pub fn active_body<'a>(
    doc: &'a Document,
    display_path: &dyn Fn(&FilesystemSource) -> String,
) -> Cow<'a, str> {
    if let Some(c) = str_field(doc, "content") {
        return Cow::Borrowed(c);
    }
    if str_field(doc, "type") != Some("file") {
        return Cow::Borrowed("");
    }
    let path = source_of(doc).map(|s| display_path(&s)).unwrap_or_default();
    Cow::Owned(
        match (str_field(doc, "state"), str_field(doc, "content_omitted")) {
            (Some("deleted"), _) => format!("[deleted] file path={path} no longer exists"),
            (Some("stub"), _) => format!("[unread] file path={path} has not been read"),
            (_, Some(reason)) => format!(
                "[{reason}] file path={path} size_bytes={}: content not shown",
                doc.get("size_bytes").and_then(Value::as_u64).unwrap_or(0)
            ),
            (state, None) => format!(
                "[{}] file path={path}: no content",
                state.unwrap_or("unknown")
            ),
        },
    )
}
