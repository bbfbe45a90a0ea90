//! Harness messages → chat turns, toolcall objects and set changes; then
//! auto-collapse, assembly and the static-reference record of the call.

use serde_json::{Map, Value};

use super::{discovery, Session};
use crate::context::chat::{self, MessageEntry, ToolCallEntry, Turn, UserEntry};
use crate::context::ingest::{classify, MessageKind, Selection};
use crate::context::output::OutputDelta;
use crate::context::static_refs::{ModelCallRecord, VersionRef};
use crate::context::tool_args::{path_arg, read_of, ReadOf};
use crate::context::words::one_line;
use crate::error::{Error, Result};
use crate::model::{toolcall_document, ContentOmitted, ObjectType, ToolcallFields};

/// Tools whose result is a file the session shows as a file object.
const FILE_TOOLS: [&str; 3] = ["read", "write", "edit"];
/// Bound on paths resolved to link a discovery result to its files.
const MAX_FILE_REFS: usize = 200;
const ARGS_DISPLAY_CHARS: usize = 120;

/// Redacts every string in `v` (see [`crate::model::redact`]).
fn redact_strings(v: &mut Value) {
    match v {
        Value::String(s) => {
            if let Some(r) = crate::model::redact::redact(s) {
                *s = r;
            }
        }
        Value::Array(xs) => xs.iter_mut().for_each(redact_strings),
        Value::Object(o) => o.values_mut().for_each(redact_strings),
        _ => {}
    }
}

/// Text of a tool result: text parts joined with `\n`, images as a note
/// (the parts are kept in the toolcall's `images`).
fn result_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .map(|p| match p.get("type").and_then(Value::as_str) {
                Some("text") => p
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                Some("image") => crate::context::images::note(p),
                Some(other) => format!("[{other}]"),
                None => String::new(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Short one-line summary of a call's arguments.
pub(super) fn args_display(tool: &str, args: &Value, context_tool: bool) -> String {
    let s = |k: &str| args.get(k).and_then(Value::as_str);
    let shown = match tool {
        "read" | "write" | "edit" | "ls" => path_arg(args).map(str::to_string),
        "bash" => s("command").map(str::to_string),
        "grep" | "find" => s("pattern").map(str::to_string),
        _ if context_tool => s("id").map(str::to_string).or_else(|| {
            args.get("ids").and_then(Value::as_array).map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(",")
            })
        }),
        _ => None,
    };
    let shown = shown.unwrap_or_else(|| match args {
        Value::Null => String::new(),
        Value::Object(m) if m.is_empty() => String::new(),
        v => crate::model::stable_json::stable_stringify(v),
    });
    one_line(&shown, ARGS_DISPLAY_CHARS)
}

/// Who keeps a call's output for the next call's edit check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Whole {
    /// The output is handed over whole: keep a copy.
    Keep,
    /// The previous output (what the next delta is against) is it.
    PreviousOutput,
}

impl Session {
    /// Ingests the harness transcript, assembles the context the model sees
    /// and queues the writes. `transform_context` = this + [`Session::flush`].
    ///
    /// A malformed new message → `INVALID_MESSAGE` and nothing changes.
    pub fn ingest_and_assemble(&mut self, messages: &[Value]) -> Result<Vec<Value>> {
        let json = self.ingest_and_assemble_json(messages)?;
        serde_json::from_str(&json).map_err(|e| Error::Internal(format!("assembly JSON: {e}")))
    }

    /// Same as [`Session::ingest_and_assemble`], the context as a JSON array
    /// string: the cheap form (every part is cached pre-serialised; this is
    /// mostly copying), and what a binding should hand to JavaScript.
    pub fn ingest_and_assemble_json(&mut self, messages: &[Value]) -> Result<String> {
        self.assemble_json(messages, Whole::Keep)
    }

    /// [`Session::ingest_and_assemble_json`]; `whole` says who keeps the
    /// output for the next call's edit check (working copies).
    pub(super) fn assemble_json(&mut self, messages: &[Value], whole: Whole) -> Result<String> {
        self.ensure_open()?;
        let sel = self.cursor.select(messages);
        self.assemble_selection(sel, messages, 0, whole)
    }

    /// One model call from a selection (`window` = the array from index
    /// `offset` on): ingest it, assemble, record the call.
    fn assemble_selection(
        &mut self,
        sel: Selection,
        window: &[Value],
        offset: usize,
        whole: Whole,
    ) -> Result<String> {
        self.drain_watch();
        self.ingest_selection(sel, window, offset)?;
        // Every operation's result has arrived (one without, aborted, shows
        // nothing later).
        let state = &mut self.cache.state;
        if !state.op_shows.is_empty()
            || !state.read_shows.is_empty()
            || !state.edit_shows.is_empty()
        {
            state.op_shows.clear();
            state.read_shows.clear();
            state.edit_shows.clear();
            self.writes.pending.chat = true;
        }
        self.cache.seen.forget_reads();
        let out = self.assemble_now();
        self.record_call();
        // The delta against the previous output counts the tokens of what is
        // new (`record_tokens` then); a whole hand-over counts them all.
        if whole == Whole::Keep {
            self.record_output(crate::context::output::context_tokens(&out), None);
        }
        // What the model saw, for the next call's edit check: the previous
        // output holds it on the binding's path; a whole hand-over keeps a
        // copy (cache layout only).
        self.handover.whole = (whole == Whole::Keep
            && self.options.layout == crate::context::Layout::Cache)
            .then(|| out.clone());
        Ok(out)
    }

    /// Ingest + assemble + one write. See [`Session::ingest_and_assemble`].
    /// A transient store failure still returns the context: the write stays
    /// queued (see [`Session::write_error`]).
    pub async fn transform_context(&mut self, messages: &[Value]) -> Result<Vec<Value>> {
        let out = self.ingest_and_assemble(messages)?;
        self.flush_tolerant().await?;
        Ok(out)
    }

    /// Ingest + assemble (as JSON) + one write.
    pub async fn transform_context_json(&mut self, messages: &[Value]) -> Result<String> {
        let out = self.ingest_and_assemble_json(messages)?;
        self.flush_tolerant().await?;
        Ok(out)
    }

    /// [`Session::ingest_and_assemble_json`] given only `messages[offset..total]`
    /// (`tail`; `offset` is the cursor, or the cursor − 1 with the last
    /// consumed message and `first`, the array's first message, to check, see
    /// [`crate::context::ingest::Cursor::select_tail`]): the binding then
    /// serialises only what is new. None (nothing changed) when the window
    /// does not continue what was consumed; hand over the whole array then.
    pub fn ingest_and_assemble_tail_json(
        &mut self,
        total: usize,
        offset: usize,
        tail: &[Value],
        first: Option<&Value>,
    ) -> Result<Option<String>> {
        self.assemble_tail_json(total, offset, tail, first, Whole::Keep)
    }

    pub(super) fn assemble_tail_json(
        &mut self,
        total: usize,
        offset: usize,
        tail: &[Value],
        first: Option<&Value>,
        whole: Whole,
    ) -> Result<Option<String>> {
        self.ensure_open()?;
        let Some(sel) = self.cursor.select_tail(total, offset, tail, first) else {
            return Ok(None);
        };
        self.assemble_selection(sel, tail, offset, whole).map(Some)
    }

    /// [`Session::ingest_and_assemble_json`] for an array in which messages
    /// consumed before may stand in by their fingerprint; None (nothing
    /// changed) if a stand-in would count as new.
    pub fn ingest_and_assemble_with_stand_ins_json(
        &mut self,
        messages: &[Value],
    ) -> Result<Option<String>> {
        self.assemble_with_stand_ins_json(messages, Whole::Keep)
    }

    pub(super) fn assemble_with_stand_ins_json(
        &mut self,
        messages: &[Value],
        whole: Whole,
    ) -> Result<Option<String>> {
        self.ensure_open()?;
        let sel = self.cursor.select(messages);
        let stand_in_new = sel
            .new
            .iter()
            .any(|(i, _)| crate::context::ingest::consumed_stand_in(&messages[*i]).is_some());
        if stand_in_new {
            return Ok(None);
        }
        self.assemble_selection(sel, messages, 0, whole).map(Some)
    }

    /// Ingests the harness transcript without assembling a context or
    /// recording a model call; the writes are queued ([`Session::flush`]).
    /// For messages that would otherwise reach the engine only with the next
    /// model call: pi's final answer of a run, which a `/tree`, fork, session
    /// switch or quit would leave unrecorded. Idempotent with the next
    /// [`Session::ingest_and_assemble`] (the cursor: nothing consumed is
    /// ingested again). Returns how many messages were new.
    ///
    /// A malformed new message → `INVALID_MESSAGE` and nothing changes.
    pub fn observe_messages(&mut self, messages: &[Value]) -> Result<usize> {
        self.ensure_open()?;
        self.drain_watch();
        let sel = self.cursor.select(messages);
        let n = sel.new.len();
        self.ingest_selection(sel, messages, 0)?;
        Ok(n)
    }

    /// [`Session::observe_messages`] given only `messages[offset..total]`, as
    /// [`Session::ingest_and_assemble_tail_json`]. None (nothing changed)
    /// when the window does not continue what was consumed.
    pub fn observe_messages_tail(
        &mut self,
        total: usize,
        offset: usize,
        tail: &[Value],
        first: Option<&Value>,
    ) -> Result<Option<usize>> {
        self.ensure_open()?;
        let Some(sel) = self.cursor.select_tail(total, offset, tail, first) else {
            return Ok(None);
        };
        self.drain_watch();
        let n = sel.new.len();
        self.ingest_selection(sel, tail, offset)?;
        Ok(Some(n))
    }

    /// The messages the last ingest consumed: (index in the array handed
    /// over, fingerprint). A caller keeps them to send stand-ins later
    /// ([`crate::context::ingest::STAND_IN_KEY`]).
    pub fn take_last_consumed(&mut self) -> Vec<(usize, String)> {
        std::mem::take(&mut self.handover.last_consumed)
    }

    /// Ingests a selection; `window` is the array from index `offset` on.
    fn ingest_selection(&mut self, sel: Selection, window: &[Value], offset: usize) -> Result<()> {
        let at = |i: usize| &window[i - offset];
        // Validate the whole new slice before touching anything.
        let kinds = sel
            .new
            .iter()
            .map(|(i, _)| classify(*i, at(*i)))
            .collect::<Result<Vec<_>>>()?;
        self.cache.seen.forget_transcript_files();
        for ((i, fp), kind) in sel.new.iter().zip(kinds) {
            self.ingest_one(at(*i), fp.clone(), kind);
            if at(*i)["role"] == "compactionSummary" {
                self.cache_host_compaction(at(*i), window.get(*i + 1 - offset));
            }
        }
        self.index_gone_files();
        let cursor_before = self.cursor.consumed;
        self.cursor.commit(&sel);
        let any_new = !sel.new.is_empty();
        let moved = any_new || self.cursor.consumed != cursor_before;
        self.handover.last_consumed = sel.new;
        if moved {
            self.writes.pending.chat = true;
        }
        // The cache layout collapses in epochs, at assembly.
        if any_new && self.options.layout == super::Layout::Spec {
            self.collapse();
        }
        Ok(())
    }

    fn ensure_turn(&mut self) -> usize {
        if self.chat.turns.is_empty() {
            self.chat.push_turn(Turn {
                index: 0,
                user: None,
                messages: Vec::new(),
            });
        }
        self.chat.turns.len() - 1
    }

    fn push_entry(&mut self, entry: MessageEntry) -> (usize, usize) {
        self.ensure_turn();
        self.chat.push_message(entry)
    }

    fn ingest_one(&mut self, msg: &Value, fp: String, kind: MessageKind) {
        let timestamp = msg.get("timestamp").cloned().unwrap_or(Value::Null);
        let role = msg["role"].as_str().unwrap_or_default().to_string();
        match kind {
            MessageKind::User => {
                let user = UserEntry {
                    content: msg["content"].clone(),
                    timestamp,
                    fp,
                };
                self.push_spec_chat(false, || chat::render_user(&user));
                let index = self.chat.turns.len();
                self.chat.push_turn(Turn {
                    index,
                    user: Some(user),
                    messages: Vec::new(),
                });
                self.cache_user(index);
            }
            MessageKind::System => {
                let prompt = match &msg["content"] {
                    Value::String(s) => s.clone(),
                    v => result_text(Some(v)),
                };
                self.set_system_prompt_doc(&prompt);
                self.push_entry(MessageEntry {
                    role,
                    fp,
                    timestamp,
                    skipped: Some(true),
                    ..Default::default()
                });
            }
            MessageKind::Skipped => {
                let mut raw = super::cache_feed::keeps_raw(&role).then(|| msg.clone());
                // A user's `!cmd` run: its output may print a secret too.
                if let Some(r) = raw
                    .as_mut()
                    .filter(|_| role == "bashExecution" && self.redacts())
                {
                    for k in ["command", "output"] {
                        if let Some(v) = r.get_mut(k) {
                            redact_strings(v);
                        }
                    }
                }
                let (t, m) = self.push_entry(MessageEntry {
                    role,
                    fp,
                    timestamp,
                    skipped: Some(true),
                    raw,
                    ..Default::default()
                });
                self.cache_skipped(t, m);
            }
            MessageKind::Assistant => self.ingest_assistant(msg, fp, timestamp),
            MessageKind::ToolResult => self.ingest_tool_result(msg, fp, timestamp),
        }
    }

    fn ingest_assistant(&mut self, msg: &Value, fp: String, timestamp: Value) {
        let mut parts = Vec::new();
        let mut calls = Vec::new();
        for part in msg["content"].as_array().into_iter().flatten() {
            if part["type"] == "toolCall" {
                let mut p = part.clone();
                let name = part["name"].as_str().unwrap_or_default().to_string();
                let arguments = p
                    .as_object_mut()
                    .and_then(|o| o.remove("arguments"))
                    .unwrap_or_else(|| Value::Object(Map::new()));
                let arguments = self.stored_args(&name, arguments);
                calls.push(ToolCallEntry {
                    call_id: part["id"].as_str().unwrap_or_default().to_string(),
                    name,
                    toolcall_id: None,
                    arguments: Some(arguments),
                });
                parts.push(p);
            } else {
                parts.push(part.clone());
            }
        }
        let meta: Map<String, Value> = msg
            .as_object()
            .map(|o| {
                o.iter()
                    .filter(|(k, _)| !matches!(k.as_str(), "role" | "content" | "timestamp"))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let has_calls = !calls.is_empty();
        let entry = MessageEntry {
            role: "assistant".into(),
            fp,
            timestamp,
            content: Some(parts),
            tool_calls: has_calls.then_some(calls),
            meta: Some(meta),
            ..Default::default()
        };
        let ridx = self.chat.rendered.len();
        self.push_spec_chat(false, || {
            chat::render_assistant(&entry, |c| {
                c.arguments
                    .clone()
                    .unwrap_or_else(|| Value::Object(Map::new()))
            })
        });
        let (t, m) = self.push_entry(entry);
        self.cache_assistant(t, m);
        if has_calls {
            // Calls still waiting for results (stand-ins until they arrive),
            // unless the provider drops the whole message.
            if !chat::dropped_by_provider(&self.chat.turns[t].messages[m]) {
                self.chat.open.push((ridx, t, m));
            }
            let calls = self.chat.turns[t].messages[m].tool_calls.as_ref().unwrap();
            for (k, c) in calls.iter().enumerate() {
                self.chat
                    .pending_calls
                    .entry(c.call_id.clone())
                    .or_default()
                    .push_back((t, m, k));
            }
        }
    }

    /// A fresh toolcall object id for harness call `call_id`.
    fn next_toolcall_id(&mut self, call_id: &str) -> String {
        let base = format!("toolcall:{}:{}", self.options.session_id, call_id);
        loop {
            let n = self
                .chat
                .call_counts
                .entry(call_id.to_string())
                .or_default();
            *n += 1;
            let id = if *n == 1 {
                base.clone()
            } else {
                format!("{base}:{n}")
            };
            // A harness id that itself ends in `:2` must not collide.
            if !self.objects.contains_key(&id) && !self.sets.index.contains(&id) {
                return id;
            }
        }
    }

    fn ingest_tool_result(&mut self, msg: &Value, fp: String, timestamp: Value) {
        let call_id = msg["toolCallId"].as_str().unwrap_or_default().to_string();
        let matched = self
            .chat
            .pending_calls
            .get_mut(&call_id)
            .and_then(|q| q.pop_front());
        if self
            .chat
            .pending_calls
            .get(&call_id)
            .is_some_and(|q| q.is_empty())
        {
            self.chat.pending_calls.remove(&call_id);
        }
        let call = matched.map(|(t, m, k)| {
            self.chat.turns[t].messages[m].tool_calls.as_ref().unwrap()[k].clone()
        });
        let tool = msg
            .get("toolName")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| call.as_ref().map(|c| c.name.clone()))
            .unwrap_or_else(|| "unknown".into());
        let args = call
            .as_ref()
            .and_then(|c| c.arguments.clone())
            .unwrap_or_else(|| Value::Object(Map::new()));
        let is_error = msg.get("isError").and_then(Value::as_bool).unwrap_or(false);
        let mut content = result_text(msg.get("content"));
        // A read of a withheld file (secret list, outside the workspace):
        // the harness's tool result is the file's bytes, so the toolcall
        // keeps one line saying why instead (stored and shown). A `bash`
        // that only prints a file is a read (context/shell_read.rs), withheld
        // for the secret list; a file outside the workspace it prints
        // (`cat /etc/os-release`) is a command's output like `uname -a`'s.
        let read_call = read_of(&tool, &args);
        let read = read_call.as_ref().filter(|_| !is_error);
        let redact = match read.and_then(|r| self.withheld_note(&r.path)) {
            Some((why, note)) if tool == "read" || why == ContentOmitted::Secret => {
                content = note;
                false
            }
            Some(_) => true,
            // A read's text is its file's, kept exact (an edit quotes it).
            None => read.is_none(),
        };
        if redact && self.redacts() {
            // Any other output may print a secret (`env`, `grep -r KEY`):
            // see model::redact.
            if let Some(r) = crate::model::redact::redact(&content) {
                content = r;
            }
        }
        let id = self.next_toolcall_id(&call_id);
        let context_tool = self.options.policy.is_context_tool(&tool);
        if !is_error {
            self.index_named_file(&tool, &args, read);
        }
        let file_refs = self.file_refs(&tool, &args, &content, read_call.as_ref());

        let mut doc = toolcall_document(
            &id,
            ToolcallFields {
                content,
                tool: tool.clone(),
                args_display: Some(args_display(&tool, &args, context_tool)),
                args,
                status: if is_error { "fail" } else { "ok" }.into(),
                chat_ref: self.ids.chat.clone(),
                file_refs: (!file_refs.is_empty()).then(|| file_refs.clone()),
            },
        );
        doc.insert("call_id".into(), Value::String(call_id.clone()));
        let images = crate::context::images::parts(msg.get("content"));
        if !images.is_empty() {
            doc.insert("images".into(), Value::Array(images));
        }
        self.put_object(doc, None, true);

        // No double injection: a read/write/edit whose file object is active
        // shows as a toolcall_ref only; the file is what is shown (and
        // listed: the toolcall stays out of the pool).
        let file_shown = (FILE_TOOLS.contains(&tool.as_str()) || read.is_some())
            && !is_error
            && file_refs.iter().any(|f| self.sets.active.contains(f));
        let activate = !context_tool && !file_shown;
        // Context-management results carry nothing new: index only.
        self.enter(&id, activate, activate);
        if activate {
            self.record_use(&id);
        }

        self.chat.toolcall_refs.push(id.clone());
        self.chat
            .by_call_id
            .entry(call_id.clone())
            .or_default()
            .push(id.clone());
        if let Some((t, m, k)) = matched {
            let calls = self.chat.message_mut(t, m).tool_calls.as_mut().unwrap();
            calls[k].toolcall_id = Some(id.clone());
            calls[k].arguments = None;
            if calls.iter().all(|c| c.toolcall_id.is_some()) {
                self.chat.open.retain(|&(_, ot, om)| (ot, om) != (t, m));
            }
        }
        let entry = MessageEntry {
            role: "toolResult".into(),
            fp,
            timestamp,
            call_id: Some(call_id),
            toolcall_id: Some(id),
            tool: Some(tool),
            is_error: Some(is_error),
            unmatched: matched.is_none().then_some(true),
            ..Default::default()
        };
        // What render_tool_result renders (a result without its call is kept, not rendered).
        if entry.unmatched.is_none() && entry.toolcall_id.is_some() {
            self.push_spec_chat(true, || {
                chat::render_tool_result(&entry).unwrap_or(Value::Null)
            });
        }
        let toolcall = entry.toolcall_id.clone().unwrap_or_default();
        let (t, m) = self.push_entry(entry);
        self.cache_result(t, m, matched, &toolcall);
    }

    /// Whether secrets in tool output are redacted (not when the user
    /// opted in to reading secret files).
    fn redacts(&self) -> bool {
        !self.indexer.options.secrets.read_secrets
    }

    /// A tool call's arguments as stored (and so shown): a write or edit of
    /// a file on the secret list keeps its path only; another tool's strings have
    /// their secrets redacted (`curl -H "Authorization: Bearer …"`). A file
    /// tool's texts are otherwise kept exactly: an edit quotes its file.
    fn stored_args(&self, tool: &str, mut args: Value) -> Value {
        if !self.redacts() {
            return args;
        }
        if FILE_TOOLS.contains(&tool) {
            let secret = path_arg(&args)
                .and_then(|p| self.resolver().resolve_read(p).ok())
                .and_then(|r| self.indexer.withheld(&r))
                == Some(crate::model::ContentOmitted::Secret);
            if tool != "read" && secret {
                if let Some(o) = args.as_object_mut() {
                    for (k, v) in o.iter_mut() {
                        if v.is_string() && !matches!(k.as_str(), "path" | "file_path") {
                            *v = Value::String("[withheld: secret]".into());
                        }
                    }
                    // pi 1.x: edits as a list of pairs.
                    if let Some(Value::Array(edits)) = o.get_mut("edits") {
                        for e in edits.iter_mut().filter_map(Value::as_object_mut) {
                            for v in e.values_mut() {
                                *v = Value::String("[withheld: secret]".into());
                            }
                        }
                    }
                }
            }
            return args;
        }
        redact_strings(&mut args);
        args
    }

    /// Why a read of `path` is withheld and the one line its result is
    /// replaced with.
    fn withheld_note(&self, path: &str) -> Option<(ContentOmitted, String)> {
        let resolved = self.resolver().resolve_read(path).ok()?;
        let reason = self.indexer.withheld(&resolved)?;
        // A name on the secret list is withheld wherever the file is; a
        // path outside the workspace only when it is a file here (a
        // replayed session from another machine names paths that are not).
        let here = resolved.host_path.as_deref().is_some_and(|h| h.is_file())
            || self
                .objects
                .get(&resolved.source.file_object_id())
                .is_some_and(|c| c.str("withheld").is_some());
        if reason != ContentOmitted::Secret && !here {
            return None;
        }
        let why = match reason {
            ContentOmitted::Secret => "it matches the secret list",
            _ => "it is outside the workspace and the configured mounts",
        };
        let note = format!(
            "[withheld: {}] file path={}: its content is not stored or shown because {why}",
            reason.as_str(),
            self.resolver().display_path(&resolved.source)
        );
        Some((reason, note))
    }

    /// File objects a tool call touched (resolved ids; discovery results are
    /// limited to files already in this session); `read`: what the call
    /// reads (`tool_args::read_of`).
    fn file_refs(
        &self,
        tool: &str,
        args: &Value,
        content: &str,
        read: Option<&ReadOf>,
    ) -> Vec<String> {
        let resolver = self.resolver();
        let id_of = |p: &str| resolver.resolve(p).ok().map(|r| r.source.file_object_id());
        let mut out: Vec<String> = Vec::new();
        match tool {
            // As pi resolved it (its fallbacks): the object the read indexed.
            "read" | "write" | "edit" => out.extend(
                path_arg(args)
                    .and_then(|p| resolver.resolve_read(p).ok())
                    .map(|r| r.source.file_object_id()),
            ),
            "ls" | "find" | "grep" | "bash" => {
                // The file a shell read prints, first.
                out.extend(
                    read.and_then(|r| resolver.resolve_read(&r.path).ok())
                        .map(|r| r.source.file_object_id())
                        .filter(|id| self.sets.index.contains(id)),
                );
                // What observe_discovery / observe_bash found in it (they run
                // on the tool's result, before this call), for `expand`.
                let (base, candidates) = if tool == "bash" {
                    let command = args.get("command").and_then(Value::as_str).unwrap_or("");
                    let root = resolver.workspace_root.to_string_lossy().into_owned();
                    (root, discovery::bash_tokens(command, content))
                } else {
                    let base = path_arg(args).unwrap_or(".").to_owned();
                    (base, discovery::extract_paths(tool, content))
                };
                for p in candidates.into_iter().take(MAX_FILE_REFS) {
                    let full = if p.starts_with('/') {
                        p
                    } else {
                        format!("{}/{}", base.trim_end_matches('/'), p)
                    };
                    if let Some(id) = id_of(&full).filter(|id| self.sets.index.contains(id)) {
                        if !out.contains(&id) {
                            out.push(id);
                        }
                    }
                }
            }
            _ => {}
        }
        out
    }

    fn is_collapsible(&self, id: &str) -> bool {
        match self.objects.get(id).and_then(|c| c.object_type()) {
            Some(ObjectType::Toolcall) => true,
            Some(ObjectType::File) => self.options.policy.collapse_files,
            _ => false,
        }
    }

    /// Auto-collapse (see [`super::policy`]).
    fn collapse(&mut self) {
        let turn = self.current_turn();
        let drop: Vec<String> = {
            let counts = |id: &str| self.is_collapsible(id) && !self.sets.pinned.contains(id);
            let kept = self.uses.kept(turn, &self.options.policy, counts);
            self.sets
                .active
                .iter()
                .filter(|id| counts(id) && !kept.contains(id.as_str()))
                .cloned()
                .collect()
        };
        for id in drop {
            self.sets.active.remove(&id);
            self.writes.pending.session = true;
        }
    }

    /// Appends the static-reference record of the context just assembled.
    /// The spec layout's rendering of the next chat message; only its place
    /// in the cache layout, which renders its own items (a 100 KiB write's
    /// arguments are not cloned and serialised for nothing).
    fn push_spec_chat(&mut self, is_result: bool, render: impl FnOnce() -> Value) {
        if self.options.layout == super::Layout::Spec {
            self.chat.rendered.push(&render());
        } else {
            self.chat.rendered.push_unrendered(is_result);
        }
    }

    /// What the last record keeps of the context it is for: its estimated
    /// `tokens`, plus the system prompt when the harness sends it (what the
    /// model received heads with it, as the rebuilt call does); with the
    /// previous output's comparison (`delta`, the binding's hand-over) also
    /// its message count and cached estimate.
    pub(super) fn record_output(&mut self, tokens: u64, delta: Option<&OutputDelta>) {
        let system = match &self.system_prompt {
            Some(sp) if !self.options.render.emit_system_message => {
                let content = sp.str("content").unwrap_or_default();
                let hash = sp.object_hash();
                let n = match &self.records.system_message_tokens {
                    Some((h, n)) if h == hash => *n,
                    _ => {
                        let message = serde_json::json!({"role": "system", "content": content});
                        let n = super::inspect::message_tokens(&message);
                        self.records.system_message_tokens = Some((hash.to_string(), n));
                        n
                    }
                };
                // Compared with the previous call's by content (its hash).
                Some((sp.str("content_hash").unwrap_or(content), n))
            }
            _ => None,
        };
        let Some(r) = self.records.model_calls.last_mut() else {
            return;
        };
        r.tokens = Some(tokens + system.map_or(0, |(_, n)| n));
        // The previous call's output is the one compared against only when
        // this session handed over both (not after a resume or a whole
        // hand-over); a system message heads both or neither, the same.
        let previous = self.records.last_output.take();
        let follows = previous
            .as_ref()
            .is_some_and(|p| p.call + 1 == r.call_index);
        if let Some(d) = delta {
            r.messages = Some(d.messages + usize::from(system.is_some()));
            r.cached_tokens = match (r.call_index, d.cached_tokens) {
                (0, _) => Some(0),
                (_, Some(c)) if follows => {
                    let before = previous.as_ref().and_then(|p| p.system.as_deref());
                    match (system, before) {
                        (None, None) => Some(c),
                        (Some((now, n)), Some(then)) if now == then => Some(c + n),
                        _ => Some(0),
                    }
                }
                _ => None,
            };
            self.records.last_output = Some(super::parts::LastOutput {
                call: r.call_index,
                system: system.map(|(key, _)| key.to_string()),
            });
        }
    }

    fn record_call(&mut self) {
        let cache = self.options.layout == super::Layout::Cache;
        let mut versions = Vec::new();
        for id in std::mem::take(&mut self.records.dirty_versions).iter() {
            let cached = if *id == self.ids.system_prompt {
                self.system_prompt.as_ref()
            } else {
                self.objects.get(id)
            };
            let Some(c) = cached else { continue };
            let hash = c.object_hash().to_string();
            if self.records.recorded.get(id) == Some(&hash) {
                continue;
            }
            versions.push(VersionRef {
                id: id.clone(),
                tx_id: c.tx,
                object_hash: hash.clone(),
                content_hash: c.str("content_hash").map(str::to_string),
            });
            self.records.recorded.insert(id.clone(), hash);
        }
        // Recomputed only when the active set or the pool changed: O(active
        // set) hash lookups per call otherwise.
        let key = (self.sets.active.version(), self.sets.pool.version());
        if self.records.active_positions.0 != key || key == (0, 0) {
            let pool = &self.sets.pool;
            let positions = self.sets.active.iter().filter_map(|id| pool.position(id));
            self.records.active_positions = (key, positions.collect());
        }
        let active = self.records.active_positions.1.clone();
        self.records.model_calls.push(ModelCallRecord {
            call_index: self.records.model_calls.len(),
            messages_consumed: self.cursor.consumed,
            chat_messages: if cache {
                self.cache.items.len()
            } else {
                self.chat.rendered.len()
            },
            pool_len: self.sets.pool.len(),
            active,
            versions,
            basis_tx: None,
            epochs: cache.then(|| self.cache_epochs()),
            tokens: None,
            messages: None,
            cached_tokens: None,
        });
        self.writes.pending.chat = true;
    }
}
