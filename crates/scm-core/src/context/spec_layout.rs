//! The spec layout: session state → the pi-ai messages the model sees.
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

use serde_json::Value;

use super::{Layout, RenderOptions};
use crate::context::chat::ChatJson;
use crate::model::{char_count_of, FilesystemSource};
use crate::store::Document;

pub const POOL_HEADER: &str = "METADATA_POOL";
pub const ACTIVE_HEADER: &str = "ACTIVE_CONTENT";

/// One active object, ready to render.
#[derive(Debug, Clone, PartialEq)]
pub struct ActiveBlock<'a> {
    pub id: &'a str,
    pub content_hash: Option<&'a str>,
    pub body: Cow<'a, str>,
    /// The JSON-escaped `ACTIVE_CONTENT id=…\n<body>` text if the caller has
    /// it cached (escaping a large file on every call is avoidable work).
    pub escaped: Option<&'a str>,
}

/// Everything assembly reads.
#[derive(Debug, Clone)]
pub struct AssemblyInput<'a> {
    pub system_prompt: Option<&'a str>,
    /// Pool lines, each JSON-escaped ([`escape`]), in pool order.
    pub pool_lines: &'a [String],
    /// Rendered chat messages, serialised.
    pub chat: &'a ChatJson,
    /// Missing tool results (serialised) to insert before a chat position.
    pub missing: &'a [(usize, String)],
    pub active: &'a [ActiveBlock<'a>],
}

/// The inside of a JSON string literal for `s` (no quotes). Escaping is
/// per character, so escaped pieces concatenate into the escaped whole.
pub fn escape(s: &str) -> String {
    let quoted = serde_json::to_string(s).expect("a str always serialises");
    quoted[1..quoted.len() - 1].to_string()
}

/// The escaped text of an active block: `ACTIVE_CONTENT id=<id>\n<body>`.
pub fn escaped_active_block(id: &str, body: &str) -> String {
    let mut s = String::with_capacity(ACTIVE_HEADER.len() + id.len() + body.len() + 8);
    s.push_str(ACTIVE_HEADER);
    s.push_str(" id=");
    s.push_str(&escape(id));
    s.push_str("\\n");
    s.push_str(&escape(body));
    s
}

/// The assembled context as a JSON array of pi-ai messages. The live path:
/// every part is pre-serialised, so this is mostly copying.
pub fn assemble_json(layout: Layout, opts: &RenderOptions, input: &AssemblyInput<'_>) -> String {
    match layout {
        // The cache layout needs the session's item state (see Layout::Cache).
        Layout::Spec | Layout::Cache => assemble_spec(opts, input),
    }
}

/// The assembled context as values (parses [`spec_layout::assemble_json`]: one layout
/// implementation for both forms).
pub fn assemble(layout: Layout, opts: &RenderOptions, input: &AssemblyInput<'_>) -> Vec<Value> {
    serde_json::from_str(&assemble_json(layout, opts, input)).expect("assembly emits valid JSON")
}

// Keys in serde_json's order ("content" before "role"), as every other
// message is serialised: the context is the same bytes whether it is handed
// over as this string or rebuilt as values (`reconstructCall`).
fn user_message(out: &mut String, escaped_content_parts: &[&str]) {
    out.push_str("{\"content\":\"");
    for p in escaped_content_parts {
        out.push_str(p);
    }
    out.push_str("\",\"role\":\"user\"}");
}

fn assemble_spec(opts: &RenderOptions, input: &AssemblyInput<'_>) -> String {
    let pool_bytes: usize = input.pool_lines.iter().map(|l| l.len() + 2).sum();
    let active_bytes: usize = input
        .active
        .iter()
        .map(|b| b.escaped.map_or(b.body.len() + 64, str::len) + 40)
        .sum();
    let mut out = String::with_capacity(
        input.chat.bytes + input.chat.len() + pool_bytes + active_bytes + 256,
    );
    out.push('[');
    if opts.emit_system_message {
        if let Some(sp) = input.system_prompt {
            out.push_str("{\"content\":\"");
            out.push_str(&escape(sp));
            out.push_str("\",\"role\":\"system\"},");
        }
    }
    // 2. metadata pool
    out.push_str("{\"content\":\"");
    out.push_str(POOL_HEADER);
    if input.pool_lines.is_empty() {
        out.push_str("\\n(empty)");
    }
    for line in input.pool_lines {
        out.push_str("\\n");
        out.push_str(line);
    }
    out.push_str("\",\"role\":\"user\"}");
    // 3. chat, with missing results in place
    let mut missing = input.missing.iter().peekable();
    for (i, m) in input.chat.messages.iter().enumerate() {
        while let Some((_, v)) = missing.next_if(|(at, _)| *at <= i) {
            out.push(',');
            out.push_str(v);
        }
        out.push(',');
        out.push_str(m);
    }
    for (_, v) in missing {
        out.push(',');
        out.push_str(v);
    }
    // 4. active content, each text once
    let mut shown: HashMap<&str, &str> = HashMap::new();
    for block in input.active {
        out.push(',');
        let first = block.content_hash.and_then(|h| match shown.get(h) {
            Some(first) => Some(*first),
            None => {
                shown.insert(h, block.id);
                None
            }
        });
        match (first, block.escaped) {
            (Some(first), _) => {
                let body = format!("[same content as id={first}]");
                user_message(&mut out, &[&escaped_active_block(block.id, &body)]);
            }
            (None, Some(escaped)) => user_message(&mut out, &[escaped]),
            (None, None) => user_message(&mut out, &[&escaped_active_block(block.id, &block.body)]),
        }
    }
    out.push(']');
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
            (_, Some(reason @ ("secret" | "outside_workspace"))) => format!(
                "[withheld: {reason}] file path={path} size_bytes={}: its content is not stored or shown because {}",
                doc.get("size_bytes").and_then(Value::as_u64).unwrap_or(0),
                if reason == "secret" {
                    "it matches the secret list"
                } else {
                    "it is outside the workspace and the configured mounts"
                }
            ),
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
