//! The session side of [`Layout::Cache`](crate::context::Layout):
//! feeds [`CacheLayout`] what ingest sees (items, aliases, sizes, identical
//! re-reads, activation content), runs epochs and folds before rendering,
//! persists and restores its state, and rebuilds past calls.
//!
//! Aliases are kept in both layouts (the agent operations accept them);
//! epochs, folds and rendering only run in the cache layout.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::{Known, OpResult, Session};
use crate::context::aliases::{file_alias, Alias, AliasMiss};
use crate::context::cache_layout::{
    activation_text, CacheStats, DocLookup, Env, FoldPlan, HostFold, PASSTHROUGH_ROLES,
};
use crate::context::epochs::{utf16_len, CachePolicy, CopyAt, Dedupe, Shown};
use crate::context::ingest::fingerprint;
pub(super) use crate::context::notices::Seen;
use crate::context::notices::{self, Now};
use crate::context::tool_args::{path_arg, read_of};
use crate::context::working;
use crate::context::Layout;
use crate::error::Error;
use crate::model::ObjectType;
use crate::store::Document;

/// Tools whose result shows the objects named by their `id`/`ids` argument.
const SHOWING_TOOLS: [&str; 3] = ["activate", "pin", "expand"];

/// The objects the session knows as a [`DocLookup`].
struct Objects<'a>(&'a HashMap<String, Known>);

impl DocLookup for Objects<'_> {
    fn get_doc(&self, id: &str) -> Option<&Document> {
        self.0.get(id).map(|c| &c.doc)
    }
}

/// Whether ingest keeps the message itself (rendered by the cache layout,
/// or a host compaction it may honour).
pub(super) fn keeps_raw(role: &str) -> bool {
    PASSTHROUGH_ROLES.contains(&role) || role == "compactionSummary"
}

/// The ids an activate/pin call names.
fn target_ids(args: &Value) -> Vec<String> {
    let mut out: Vec<String> = args
        .get("id")
        .and_then(Value::as_str)
        .map(str::to_string)
        .into_iter()
        .collect();
    for id in args
        .get("ids")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(s) = id.as_str() {
            out.push(s.to_string());
        }
    }
    out
}

impl Session {
    fn cache_on(&self) -> bool {
        self.options.layout == Layout::Cache
    }

    /// Resolves an alias (`t12`, `f3`); None when `t` is not one.
    pub(super) fn resolve_alias(&self, t: &str) -> Option<std::result::Result<String, OpResult>> {
        let alias = Alias::parse(t)?;
        match self.cache.aliases.resolve(alias) {
            Ok(id) if self.sets.index.contains(id) => Some(Ok(id.to_string())),
            // A file named by a tool call the session has not indexed.
            Ok(id) => Some(Err(OpResult::failure(
                &Error::UnknownObject(format!(
                    "{t}: this file is not in the session yet; read it first"
                )),
                Some(id.to_string()),
            ))),
            Err(AliasMiss::NoResult) => Some(Err(OpResult::failure(
                &Error::UnknownObject(format!("{t}: this tool call has no result to show")),
                None,
            ))),
            // Not assigned: maybe a file of that name.
            Err(AliasMiss::Unknown) => None,
        }
    }

    /// A file entered the session (read, written, discovered): its alias.
    pub(super) fn cache_file_entered(&mut self, id: &str) {
        let Some(c) = self.objects.get(id) else {
            return;
        };
        if c.object_type() != Some(ObjectType::File) || self.cache.aliases.of_object(id).is_some() {
            return;
        }
        let path = c
            .source()
            .map(|s| self.resolver().display_path(&s))
            .unwrap_or_default();
        self.cache.file(id, || path);
    }

    pub(super) fn cache_user(&mut self, turn: usize) {
        self.cache.items.push_user(turn);
    }

    /// A consumed message the spec layout skips: rendered as it came when
    /// the cache layout passes its kind through.
    pub(super) fn cache_skipped(&mut self, turn: usize, msg: usize) {
        let e = &self.chat.turns[turn].messages[msg];
        if e.raw.is_some() && PASSTHROUGH_ROLES.contains(&e.role.as_str()) {
            self.cache.items.push_passthrough(turn, msg);
        }
    }

    /// A host compaction summary (pi's `compactionSummary`) was ingested;
    /// `next` is the message after it in the array (the first one kept).
    pub(super) fn cache_host_compaction(&mut self, msg: &Value, next: Option<&Value>) {
        if !self.cache_on() || !self.options.cache.honour_host_compaction {
            return;
        }
        let Some(summary) = msg.get("summary").and_then(Value::as_str) else {
            return;
        };
        self.cache.host_fold = Some(HostFold {
            summary: summary.to_string(),
            first_kept_fp: next.map(fingerprint),
            items_at: self.cache.items.len() as u32,
        });
    }

    /// An assistant message at (turn, msg): aliases for its calls and the
    /// files they name.
    pub(super) fn cache_assistant(&mut self, turn: usize, msg: usize) {
        let calls: Vec<(String, Value)> = self.chat.turns[turn].messages[msg]
            .tool_calls
            .iter()
            .flatten()
            .map(|c| (c.name.clone(), c.arguments.clone().unwrap_or(Value::Null)))
            .collect();
        self.cache_assistant_calls(turn, msg, &calls);
    }

    /// Aliases for an assistant message's calls `(tool, args)` and the files
    /// they name, then its item.
    pub(super) fn cache_assistant_calls(
        &mut self,
        turn: usize,
        msg: usize,
        calls: &[(String, Value)],
    ) {
        let first = self.cache.aliases.calls() as u32;
        for (tool, args) in calls {
            // A `bash` that only prints a file is a read of it here
            // (context/shell_read.rs).
            if let Some(r) = read_of(tool, args) {
                let file = self.file_of_path(&r.path);
                self.cache.push_call("read", args, file, Some(&r));
                continue;
            }
            let file = matches!(tool.as_str(), "write" | "edit")
                .then(|| path_arg(args))
                .flatten()
                .and_then(|p| self.file_of_path(p));
            self.cache.push_call(tool, args, file, None);
        }
        self.cache
            .items
            .push_assistant(turn, msg, first, calls.len() as u32);
    }

    /// The layout's index of the file a call names by `path`.
    fn file_of_path(&mut self, path: &str) -> Option<u32> {
        let resolved = self.resolver().resolve_read(path).ok()?;
        let id = resolved.source.file_object_id();
        let shown = match self.objects.get(&id).and_then(Known::source) {
            Some(src) => self.resolver().display_path(&src),
            None => self.resolver().display_path(&resolved.source),
        };
        Some(self.cache.file(&id, || shown))
    }

    /// The result at (turn, msg) of call (assistant turn, msg, position),
    /// stored as toolcall `id`.
    pub(super) fn cache_result(
        &mut self,
        turn: usize,
        msg: usize,
        matched: Option<(usize, usize, usize)>,
        id: &str,
    ) {
        let Some(call) = matched.and_then(|(t, m, k)| self.cache.items.call_of(t, m, k)) else {
            return; // unmatched results are not rendered
        };
        let Some(doc) = self.objects.get(id).map(|c| c.doc.clone()) else {
            return;
        };
        let s = |k: &str| doc.get(k).and_then(Value::as_str).unwrap_or_default();
        let (tool, content) = (s("tool"), s("content"));
        let is_error = s("status") == "fail";
        let args = doc.get("args").cloned().unwrap_or(Value::Null);
        let (shows, points_to, copy) = if SHOWING_TOOLS.contains(&tool) && !is_error {
            let targets = if tool == "expand" {
                // expand names the note; what it activated is in its result.
                crate::memory::expand::expanded_ids(content)
            } else {
                target_ids(&args)
            };
            // An activation or pin of one file may point at its working
            // copy: the pointer keeps the copy while it is kept (a pinned
            // one for as long as the pin holds).
            let to_copy = matches!(tool, "activate" | "pin") && targets.len() == 1;
            let set_op = matches!(tool, "activate" | "pin");
            self.shows_for(targets, to_copy, set_op)
        } else {
            (Vec::new(), None, None)
        };
        let result_chars = if shows.is_empty() {
            utf16_len(content)
        } else {
            let display = self.display_path_fn();
            utf16_len(&activation_text(&shows, &self.cache.frozen, &display))
        };
        let dedupe = (self.options.cache.dedupe_reads && !is_error)
            .then(|| {
                self.cache
                    .find_dedupe(call, &args, content, &Objects(&self.objects))
            })
            .flatten()
            .or(copy.map(Dedupe::Copy));
        // Each object shown, with the version shown (an activation's frozen
        // one may be older than the object's current version).
        let shown: Vec<(String, String)> = shows
            .iter()
            .filter(|s| !s.note)
            .map(|s| (s.id.clone(), s.object_hash.clone()))
            .collect();
        for (id, _) in &shown {
            // Recorded with the call, so reconstruction finds the version.
            self.records.dirty_versions.insert(id.clone());
        }
        self.cache.bind_result(
            call,
            id,
            result_chars,
            is_error,
            &args,
            shows,
            dedupe,
            points_to,
        );
        self.cache.items.push_result(turn, msg, call);
        if tool == "edit" {
            if !is_error {
                self.settle_edit(call, &args);
            }
            self.note_recall(call, &args, is_error);
        } else if tool == "write" && !is_error {
            self.note_written(call);
        } else if !is_error {
            self.note_slice(call);
        }
        // What the model now knows of each file: the version this call read,
        // wrote, edited or showed.
        if !is_error {
            // The text a `read` tool returned, or a `bash` that only printed
            // a file (a shell read: whole or a slice, as the layout takes it).
            let read_text = matches!(tool, "read" | "bash").then_some(content);
            // As the layout takes the call: a shell read is a read.
            let tool = self.cache.state.calls[call as usize].tool.clone();
            let tool = tool.as_str();
            let file = self.cache.state.calls[call as usize]
                .file
                .filter(|_| matches!(tool, "read" | "write" | "edit"))
                .and_then(|f| self.cache.aliases.f.get(f as usize).cloned());
            let c = &self.cache.state.calls[call as usize];
            // Its output is not the file's text (a slice, numbered lines)…
            let ranged = c.ranged;
            // …and of those a slice shows part of the file; every line
            // numbered (`cat -n F`) is a whole read of its version.
            let part = c.ranged && !c.numbered;
            let shown = shown.into_iter().map(|(id, hash)| (id, Some(hash)));
            for (id, hash) in file.into_iter().map(|id| (id, None)).chain(shown) {
                // A file indexed from the transcript: what its calls show.
                if hash.is_none() && self.cache.seen.is_from_transcript(&id) {
                    let text = match tool {
                        "write" => args.get("content").and_then(Value::as_str),
                        "read" if !ranged => read_text,
                        _ => None,
                    };
                    self.seen_in_transcript(&id, tool, text, &args);
                    continue;
                }
                // Its own edit: the version that edit made (and what changed
                // outside it before, told at this call).
                if tool == "edit" && self.seen_edit(&id, &args) {
                    continue;
                }
                // A slice shows part of the file: it does not make a newer
                // version seen (only a first sight of the file).
                if part && self.cache.seen.get(&id).is_some() {
                    continue;
                }
                // A whole read of a version older than the current one (the
                // file changed between the read and this call): the model
                // saw that one, and the change since is told at this call.
                if tool == "read" && !part {
                    let now = self.objects.get(&id).map(|c| c.object_hash().to_string());
                    if let Some(read) = now.and_then(|h| self.cache.seen.read_seen(&id, &h)) {
                        // It may have shown a change not yet told, and the
                        // model's own edit follow it (no diff then): told,
                        // naming the read (random seed 148).
                        self.cache.seen.shown_while_changed(
                            &id,
                            &read.object_hash,
                            &crate::context::aliases::call_alias(call),
                        );
                        self.set_seen(&id, read);
                        self.cache.seen.new_version(&id);
                        continue;
                    }
                }
                // An activation that showed an older version than the
                // current one (a later tool of its message changed the file):
                // the model saw that one — and the change it showed, if not
                // yet told, is told naming it, as a read's is (random seed
                // 74: a pin, then the model's edit).
                let frozen = hash
                    .filter(|h| self.objects.get(&id).is_some_and(|c| c.object_hash() != h))
                    .and_then(|h| self.cache.frozen.get(&(id.clone(), h)));
                if let Some(doc) = frozen {
                    let seen = Seen::of(doc);
                    self.cache.seen.shown_while_changed(
                        &id,
                        &seen.object_hash,
                        &crate::context::aliases::call_alias(call),
                    );
                    self.set_seen(&id, seen);
                    continue;
                }
                // A write: the model knows the text it wrote, not a change
                // made after it.
                if tool == "write" {
                    let written = args.get("content").and_then(Value::as_str);
                    if let (Some(text), Some(now)) = (written, self.current_seen(&id)) {
                        self.cache.seen.write_seen(&id, text, &now);
                    }
                }
                // A read or an activation (an edit's result or a write says
                // what the model did, not what changed outside it).
                if tool != "write" && tool != "edit" {
                    if let Some(c) = self.objects.get(&id) {
                        self.cache.seen.shown_while_changed(
                            &id,
                            c.object_hash(),
                            &crate::context::aliases::call_alias(call),
                        );
                    }
                }
                self.mark_seen(&id);
            }
        }
    }

    /// A successful edit's result arrived: its `oldText` shows as a ref
    /// from the call's first showing when the text it replaced is gone from
    /// the file ([`crate::context::tool_args::replaced_text_gone`]). The
    /// file's text after the edit: the version indexed for it, else its
    /// current text (the store's, or what the session's calls show) if it
    /// holds every `newText`; not known, the `oldText` stays.
    fn settle_edit(&mut self, call: u32, args: &Value) {
        let Some(f) = self.cache.state.calls[call as usize].file else {
            return;
        };
        let indexed = self.cache.aliases.f.get(f as usize).and_then(|id| {
            self.cache
                .seen
                .pending_edit(id)
                .and_then(|s| s.content.clone())
        });
        let after = indexed
            .or_else(|| self.cache.current_text(f, &Objects(&self.objects)))
            .filter(|t| {
                crate::context::tool_args::edit_bodies(args)
                    .filter_map(|e| e.get("newText").and_then(Value::as_str))
                    .all(|n| t.contains(n))
            });
        if crate::context::tool_args::replaced_text_gone(args, after.as_deref()) {
            self.cache.settle_edit(call);
        }
    }

    /// The model's whole read of a file was indexed (see
    /// [`crate::context::notices::SeenFiles::read_indexed`]).
    pub(super) fn note_read_indexed(&mut self, plan: &crate::fs::indexer::VersionPlan) {
        if self.options.layout != crate::context::Layout::Cache {
            return;
        }
        let read = Seen::of(&plan.doc);
        let shows = self.cache.state.read_shows.entry(plan.object_id.clone());
        shows.or_default().push(read.object_hash.clone());
        self.cache.seen.read_indexed(&plan.object_id, read);
        self.writes.pending.chat = true;
    }

    /// The model's edit of a file was indexed (see
    /// [`crate::context::notices::SeenFiles::edit_indexed`]).
    pub(super) fn note_edit_indexed(&mut self, plan: &crate::fs::indexer::VersionPlan) {
        let seen = Seen::of;
        if let Some(base) = &plan.base {
            let (base, after) = (seen(base), seen(&plan.doc));
            let hashes = (base.object_hash.clone(), after.object_hash.clone());
            if self.cache.seen.edit_indexed(&plan.object_id, base, after) {
                let shows = self.cache.state.edit_shows.entry(plan.object_id.clone());
                shows.or_default().push(hashes);
                self.writes.pending.chat = true;
            }
        }
    }

    /// The result of the model's edit of `id` arrived (see
    /// [`crate::context::notices::SeenFiles::edit_seen`]; with no indexed
    /// edit known, [`crate::context::notices::SeenFiles::edit_unknown`]).
    fn seen_edit(&mut self, id: &str, args: &Value) -> bool {
        // The seen text with this edit applied (pi's exact match) is the
        // version the edit was applied to: the watcher saw the model's own
        // write first, nothing happened outside it.
        let own = |seen: &Seen, base: &Seen| {
            let after = seen
                .content
                .as_deref()
                .and_then(|t| crate::context::tool_args::apply_edit(t, args));
            after.is_some() && after.as_deref() == base.content.as_deref()
        };
        let known = self.cache.seen.edit_seen(id, own);
        if known {
            if let Some(q) = self.cache.state.edit_shows.get_mut(id) {
                if !q.is_empty() {
                    q.remove(0);
                }
                if q.is_empty() {
                    self.cache.state.edit_shows.remove(id);
                }
            }
            if let Some(h) = self.cache.seen.get(id).map(|s| s.object_hash.clone()) {
                // A change made after the edit (before this call) is still
                // to tell (a later edit of the same message explains it
                // when its result arrives).
                if self.objects.get(id).is_some_and(|c| c.object_hash() != h) {
                    self.cache.seen.new_version(id);
                }
                self.cache.state.seen.insert(id.to_string(), h);
            }
        } else if let Some(now) = self.current_seen(id) {
            self.cache.seen.edit_unknown(id, &now, own);
        }
        known
    }

    /// What the model saw of `id`, a file indexed from the transcript
    /// (`session/named_files.rs`), after a call of it: a whole read's text
    /// (a shell read's output: `cat F`) or a write's (`text`), the text it
    /// had seen with an edit applied. A text that is not the file's now is
    /// told at this call (its diff; the same text up to a final newline is
    /// the same: a shell may print it without); a slice or a read pi cut
    /// short shows part of the file: the current version is taken at a
    /// first sight only, as a slice is in any session.
    fn seen_in_transcript(&mut self, id: &str, tool: &str, text: Option<&str>, args: &Value) {
        let text = match (tool, text) {
            (_, Some(t)) if !crate::context::tool_args::cut_short(t) => Some(t.to_string()),
            ("edit", _) => match self.cache.seen.get(id).map(|s| s.content.as_deref()) {
                // Its first sight: the edit's result says the file holds it.
                None => None,
                Some(seen) => {
                    match seen.and_then(|t| crate::context::tool_args::apply_edit(t, args)) {
                        Some(after) => Some(after),
                        // Not on the text it saw: the diff from that text tells.
                        None => return,
                    }
                }
            },
            _ => None,
        };
        let Some(now) = self.current_seen(id) else {
            return;
        };
        // Held as metadata only (withheld, binary, too large): the result is
        // a line saying so, not a text of it.
        let text = text.filter(|_| now.content.is_some());
        match text {
            Some(t) if now.content.as_deref().map(str::trim_end) != Some(t.trim_end()) => {
                let seen = Seen {
                    object_hash: String::new(),
                    content: Some(t),
                };
                self.set_seen(id, seen);
                self.cache.seen.new_version(id);
            }
            Some(_) => self.set_seen(id, now),
            None if self.cache.seen.get(id).is_none() => self.set_seen(id, now),
            None => {}
        }
    }

    /// The model saw a text of `id` that is gone now (a transcript's file,
    /// [`Session::index_gone_files`]): told at the next call.
    pub(super) fn seen_gone(&mut self, id: &str) {
        let seen = Seen {
            object_hash: String::new(),
            content: None,
        };
        self.set_seen(id, seen);
        self.cache.seen.new_version(id);
    }

    /// `id`'s current version, as a [`Seen`] (file objects only).
    fn current_seen(&self, id: &str) -> Option<Seen> {
        let c = self.objects.get(id)?;
        (c.object_type() == Some(ObjectType::File)).then(|| Seen::of(&c.doc))
    }

    /// The model has seen `id`'s current version.
    pub(super) fn mark_seen(&mut self, id: &str) {
        if let Some(seen) = self.current_seen(id) {
            self.set_seen(id, seen);
        }
    }

    /// Records the version the model last saw of `id`: its text for the
    /// next diff, its hash in the persisted layout state (resume).
    fn set_seen(&mut self, id: &str, seen: Seen) {
        self.cache
            .state
            .seen
            .insert(id.to_string(), seen.object_hash.clone());
        self.cache.seen.saw(id, seen);
    }

    /// The newest call that touched file `id` (None: none did).
    fn last_touched(&self, id: &str) -> Option<u32> {
        match self.cache.aliases.of_object(id) {
            Some(Alias::File(f)) => self.cache.file_calls.of(f).last().copied(),
            _ => None,
        }
    }

    /// Change notices (see [`crate::context::notices`]): files the model
    /// has in view whose version changed since it saw them, other than by
    /// its own edit/write, are told in one message after the last one.
    pub(super) fn notify_changes(&mut self) {
        let mut outside = self.cache.seen.take_outside();
        let mut ids = self.cache.seen.take_changed();
        // A change under a write or edit that a later result of its message
        // showed from the same text (a read of what the write wrote): the
        // one notice from that text to now tells it (random seed 307: the
        // same diff twice).
        let same_start = |a: &Seen, b: &Seen| {
            a.content.as_deref().map(str::trim_end) == b.content.as_deref().map(str::trim_end)
        };
        outside.retain(|(id, seen, _)| {
            !(ids.contains(id) && self.cache.seen.get(id).is_some_and(|s| same_start(s, seen)))
        });
        // The room for diffs goes first to the files worked on last (a
        // burst: the file the agent is in the middle of gets its diff).
        ids.sort_by_key(|id| std::cmp::Reverse(self.last_touched(id)));
        let shown = self.cache.seen.take_shown();
        if ids.is_empty() && outside.is_empty() && shown.is_empty() {
            return;
        }
        let mut parts = Vec::new();
        // What is left of the message's room for diffs.
        let mut left = crate::context::notices::MAX_NOTICE_CHARS;
        let mut tell = |parts: &mut Vec<String>, head: String, seen: &Seen, now: Now<'_>| {
            let part = crate::context::notices::notice(&head, seen, now, left);
            left = left.saturating_sub(part.len());
            parts.push(part);
        };
        for (id, by) in shown {
            if let Some(Alias::File(f)) = self.cache.aliases.of_object(&id) {
                parts.push(crate::context::notices::shown_notice(
                    &self.notice_head(f),
                    &by,
                ));
            }
        }
        let shown_parts = parts.len();
        // What changed under the model's own edits: the version it had seen
        // against the one its edit was applied to.
        for (id, seen, base) in outside {
            let Some(Alias::File(f)) = self.cache.aliases.of_object(&id) else {
                continue;
            };
            if !self.cache.file_in_view(f) {
                continue;
            }
            tell(
                &mut parts,
                self.notice_head(f),
                &seen,
                Now::of(base.content.as_deref(), None, None),
            );
        }
        for id in ids {
            let Some(c) = self.objects.get(&id) else {
                continue;
            };
            let now_hash = c.str("object_hash").unwrap_or_default().to_string();
            // (Taken whether or not it is told: a file out of view needs none.)
            let moved = c
                .str("renamed_to")
                .and_then(|_| self.cache.seen.take_moved(&id));
            let Some(seen) = self.cache.seen.get(&id) else {
                continue;
            };
            if seen.object_hash == now_hash {
                continue;
            }
            let Some(Alias::File(f)) = self.cache.aliases.of_object(&id) else {
                continue;
            };
            // A file no longer in view needs no notice: showing it again
            // shows its current version.
            if !self.cache.file_in_view(f) {
                continue;
            }
            let now = c.str("content").map(str::to_string);
            let current = Now::of(now.as_deref(), moved.as_deref(), c.str("content_omitted"));
            tell(&mut parts, self.notice_head(f), seen, current);
            self.set_seen(
                &id,
                Seen {
                    object_hash: now_hash,
                    content: now,
                },
            );
        }
        // A change a read showed and one since (a diff): the diff names the
        // file, one notice each.
        let rest = parts.split_off(shown_parts);
        let diffed: HashSet<&str> = rest.iter().filter_map(|p| notices::names(p)).collect();
        parts.retain(|p| notices::names(p).is_none_or(|f| !diffed.contains(f)));
        parts.extend(rest);
        if !parts.is_empty() {
            self.cache
                .push_notice(self.records.model_calls.len() as u32, parts.join("\n\n"));
            self.writes.pending.chat = true;
        }
    }

    /// How a notice names file `f`: `f3 src/app.ts`.
    fn notice_head(&self, f: u32) -> String {
        let path = self
            .cache
            .state
            .files
            .get(f as usize)
            .map_or("", |e| e.path.as_str());
        format!("{} {path}", file_alias(f))
    }

    /// What an activate/pin call shows: each target's current version,
    /// frozen, or a note when its content is already live in view (a
    /// call's output, or — `to_copy` — the file's working copy, returned).
    /// `set_op` (activate, pin): the version the operation ran on, when
    /// that is older (`CacheState::op_shows`).
    fn shows_for(
        &mut self,
        targets: Vec<String>,
        to_copy: bool,
        set_op: bool,
    ) -> (Vec<Shown>, Option<u32>, Option<CopyAt>) {
        let mut out = Vec::new();
        let mut points_to = None;
        let mut copy = None;
        for target in targets {
            let Ok(id) = self.resolve_target(&target) else {
                continue;
            };
            let Some(current) = self.objects.get(&id).map(|c| c.doc.clone()) else {
                continue;
            };
            // The version the operation ran on, when a later tool of the
            // same message changed the object since (parallel calls): the
            // result shows that one, and no pointer stands in for it.
            let at_op = set_op
                .then(|| self.cache.state.op_shows.get_mut(&id))
                .flatten()
                .filter(|q| !q.is_empty())
                .map(|q| q.remove(0))
                .filter(|h| current.get("object_hash").and_then(Value::as_str) != Some(h))
                .and_then(|h| self.cache.frozen.get(&(id.clone(), h)).cloned());
            let moved = at_op.is_some();
            let doc = at_op.unwrap_or(current);
            let alias = self
                .cache
                .aliases
                .of_object(&id)
                .map(Alias::text)
                .unwrap_or_else(|| id.clone());
            let in_view = (!moved)
                .then(|| self.live_in_view(&id).or_else(|| self.edit_in_view(&id)))
                .flatten();
            let to_copy = to_copy && in_view.is_none() && !moved;
            // Nor may anything but such an activation or pin point at a
            // slice that covers the whole file (random seed 13 showed the
            // text twice); the slice is then the file's newest showing, which
            // a pin keeps (see `CacheLayout::note_show`).
            let in_view = in_view.or_else(|| to_copy.then(|| self.slice_in_view(&id)).flatten());
            let in_copy = (to_copy && in_view.is_none())
                .then(|| self.copy_in_view(&id))
                .flatten();
            if in_view.is_some() || in_copy.is_some() {
                points_to = in_view;
                copy = in_copy;
                out.push(Shown {
                    id,
                    object_hash: String::new(),
                    head: format!("[{alias} is shown above]"),
                    note: true,
                    links: None,
                });
                continue;
            }
            let head = match doc.get("type").and_then(Value::as_str) {
                Some("toolcall") => format!(
                    "{alias} {} {}",
                    doc.get("tool").and_then(Value::as_str).unwrap_or_default(),
                    doc.get("args_display")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                ),
                _ => {
                    let path = Known {
                        doc: doc.clone(),
                        tx: None,
                    }
                    .source()
                    .map(|s| self.resolver().display_path(&s))
                    .unwrap_or_default();
                    format!("{alias} {path}")
                }
            };
            let hash = doc
                .get("object_hash")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let links = crate::memory::links::link_lines(
                &doc,
                &|t| self.known_doc(t),
                &self.pins,
                &self.display_path_fn(),
            );
            self.cache.frozen.insert((id.clone(), hash.clone()), doc);
            out.push(Shown {
                id,
                object_hash: hash,
                head: head.trim_end().to_string(),
                note: false,
                links,
            });
        }
        (out, points_to, copy)
    }

    /// File object `id`'s alias index and current text (none for a stub).
    fn current_file_text(&self, id: &str) -> Option<(u32, &str)> {
        let Some(Alias::File(f)) = self.cache.aliases.of_object(id) else {
            return None;
        };
        let doc = &self.objects.get(id)?.doc;
        if doc.get("state").and_then(Value::as_str) == Some("stub") {
            return None;
        }
        Some((f, doc.get("content").and_then(Value::as_str)?))
    }

    /// The live working copy showing file object `id`'s current version.
    fn copy_in_view(&self, id: &str) -> Option<CopyAt> {
        let (f, text) = self.current_file_text(id)?;
        self.cache.copy_showing(f, text)
    }

    /// An edit in view whose one `newText` is file object `id`'s current
    /// text whole (see [`CacheLayout::edit_showing`]).
    fn edit_in_view(&self, id: &str) -> Option<u32> {
        let (f, text) = self.current_file_text(id)?;
        let cut = self.cache.fold_cut();
        self.cache
            .edit_showing(f, text, cut, &Objects(&self.objects))
    }

    /// A ranged read in view showing file object `id`'s current text whole.
    fn slice_in_view(&self, id: &str) -> Option<u32> {
        let (f, text) = self.current_file_text(id)?;
        self.cache.slice_showing(f, text, &Objects(&self.objects))
    }

    /// The call showing an object's content live in the current view (its
    /// own result, or the newest call showing it, if that shows the
    /// object's current version), if any.
    fn live_in_view(&self, id: &str) -> Option<u32> {
        let live = |c: u32| {
            let st = &self.cache.state.calls[c as usize];
            // A re-read pointing at a working copy shows it through the copy
            // (kept while the copy is, see `CacheLayout::run_epoch`).
            self.cache.shows_now(c) && st.dedupe().is_none() && !st.is_error
        };
        if let Some(c) = self.cache.aliases.call_of(id) {
            return live(c).then_some(c);
        }
        let current = &self.objects.get(id)?.doc;
        self.cache
            .latest_show
            .get(id)
            .copied()
            .filter(|&c| live(c) && self.shows_version(c, id, current))
    }

    /// Whether call `c` shows `current`, the object's cached version. An
    /// edit, a write or an outside change since leaves it showing an older
    /// one: an activation shows the exact version it froze, a read the
    /// text it returned (a partial read never matches the whole file).
    fn shows_version(&self, c: u32, id: &str, current: &Document) -> bool {
        let field = |d: &Document, k: &str| d.get(k).and_then(Value::as_str).map(str::to_string);
        let st = &self.cache.state.calls[c as usize];
        if let Some(s) = st.shows.iter().find(|s| s.id == id && !s.note) {
            return field(current, "object_hash").as_deref() == Some(s.object_hash.as_str());
        }
        let read = self.cache.aliases.t[c as usize]
            .as_deref()
            .and_then(|t| self.objects.get(t));
        if st.tool == "write" {
            // What it wrote: no hash of it is stored, the text is compared.
            let objects = Objects(&self.objects);
            let written = st.file.and_then(|f| self.cache.shown_text(c, f, &objects));
            return written.is_some() && written == current.get("content").and_then(Value::as_str);
        }
        let shown = read.and_then(|r| field(&r.doc, "content_hash"));
        shown.is_some() && shown == field(current, "content_hash")
    }

    /// deactivate: the target's live calls collapse at the next epoch.
    /// Returns how many were scheduled (0 in the spec layout).
    pub(super) fn cache_deactivate(&mut self, id: &str) -> usize {
        if !self.cache_on() {
            return 0;
        }
        let calls = self.cache.live_calls_of(id);
        let n = calls.len();
        for c in calls {
            if !self.cache.state.deactivated.contains(&c) {
                self.cache.state.deactivated.push(c);
            }
        }
        if n > 0 {
            self.writes.pending.chat = true;
        }
        n
    }

    /// activate/pin: a pending deactivation of the target is cancelled.
    pub(super) fn cache_undeactivate(&mut self, id: &str) {
        if self.cache.state.deactivated.is_empty() {
            return;
        }
        let calls = self.cache.live_calls_of(id);
        let before = self.cache.state.deactivated.len();
        self.cache.state.deactivated.retain(|c| !calls.contains(c));
        // Stored like the deactivation was: a restart before the next call
        // must not bring it back (random seed 1708).
        if self.cache.state.deactivated.len() != before {
            self.writes.pending.chat = true;
        }
    }

    fn pinned_calls(&self) -> HashSet<usize> {
        self.cache.pinned_calls(self.sets.pinned.iter())
    }

    fn file_line(&self, i: u32) -> String {
        let id = &self.cache.aliases.f[i as usize];
        let entry = &self.cache.state.files[i as usize];
        let what = match self.objects.get(id) {
            Some(c) if c.is_stub() => "[unread]".to_string(),
            // (Not its last size: a fold's list would name it as present.)
            Some(c) if c.str("state") == Some("deleted") => "deleted".to_string(),
            Some(c) if c.doc.get("content").is_some_and(Value::is_string) => {
                format!(
                    "{} chars",
                    c.doc
                        .get("char_count")
                        .and_then(Value::as_u64)
                        .unwrap_or(entry.chars)
                )
            }
            _ => format!("{} chars", entry.chars),
        };
        format!("{} {} ({what})", file_alias(i), entry.path)
    }

    /// The file-list lines of files `from..`, rendered again only where the
    /// file's version ([`Session::put_object`] forgets its line) or listed
    /// size changed: a fold lists every file, and looking each object up
    /// again costs ≈ 1 µs a file (cold memory).
    fn file_lines(&mut self, from: u32) -> Vec<String> {
        let n = self.cache.state.files.len();
        self.cache.file_lines.resize(n, None);
        let mut out = Vec::with_capacity(n.saturating_sub(from as usize));
        for i in from as usize..n {
            let chars = self.cache.state.files[i].chars;
            match &self.cache.file_lines[i] {
                Some((c, line)) if *c == chars => out.push(line.clone()),
                _ => {
                    let line = self.file_line(i as u32);
                    out.push(line.clone());
                    self.cache.file_lines[i] = Some((chars, line));
                }
            }
        }
        out
    }

    /// A new version of `id`: its file-list line renders again.
    pub(super) fn forget_file_line(&mut self, id: &str) {
        if let Some(Alias::File(f)) = self.cache.aliases.of_object(id) {
            if let Some(slot) = self.cache.file_lines.get_mut(f as usize) {
                *slot = None;
            }
        }
    }

    /// The cache policy as configured, its sizes at the scale this
    /// session's reads give them (see [`crate::context::scale`]).
    pub(super) fn cache_policy(&self) -> CachePolicy {
        self.cache.scaled(&self.options.cache)
    }

    fn run_epoch(&mut self, pinned: &HashSet<usize>, force: bool) {
        let p = self.cache_policy();
        let call = self.records.model_calls.len() as u32;
        // The delta lists only the files first seen since the last one.
        let from = self.cache.state.files_listed;
        let lines = self.file_lines(from);
        let changed = self.cache.run_epoch(
            &p,
            call,
            pinned,
            &|i| lines[(i - from) as usize].clone(),
            force,
            &Objects(&self.objects),
        );
        self.saw_new_copies();
        // The active set follows what is shown: collapsed toolcalls leave it.
        let number = self.cache.state.epochs.len() as u32;
        for c in changed {
            if self.cache.state.calls[c as usize].collapsed != Some(number) {
                continue;
            }
            if let Some(id) = self.cache.aliases.t[c as usize].clone() {
                if self.sets.active.remove(&id) {
                    self.writes.pending.session = true;
                }
            }
        }
        self.writes.pending.chat = true;
    }

    /// After a resume: what the model was shown at the last call, rendered
    /// again from the restored state, for the next call's edit check (an
    /// edit whose result arrives first thing after a resume was made from
    /// that context; see `Session::note_recall`).
    pub(super) fn restore_last_view(&mut self) {
        if self.options.layout == crate::context::Layout::Cache
            && !self.records.model_calls.is_empty()
        {
            self.handover.whole = Some(self.render_cache());
        }
    }

    fn render_cache(&mut self) -> String {
        let p = self.cache_policy();
        let system = self
            .options
            .render
            .emit_system_message
            .then(|| self.system_prompt())
            .flatten()
            .map(str::to_string);
        let resolver = self.indexer.resolver.clone();
        let display = move |s: &crate::model::FilesystemSource| resolver.display_path(s);
        let objects = Objects(&self.objects);
        let buf = self.handover.previous.take_spare();
        self.cache.render_json(
            &self.chat.turns,
            &p,
            &objects,
            &display,
            system.as_deref(),
            buf,
        )
    }

    fn apply_fold(&mut self, plan: FoldPlan, text: &str, host: bool, keep: &HashSet<usize>) {
        let p = self.cache_policy();
        let resolver = self.indexer.resolver.clone();
        let display = move |s: &crate::model::FilesystemSource| resolver.display_path(s);
        let mut keep = keep.clone();
        // A "[f1 is shown above]" note the fold keeps needs its target above:
        // in the fold's block, labelled with the file.
        keep.extend(self.cache.note_targets_before(plan.cut));
        let pinned = self.pinned_calls();
        let again =
            self.cache
                .fold_copies(plan.cut, &mut keep, &pinned, &p, &Objects(&self.objects));
        let block = self.cache.pinned_block(
            &self.chat.turns,
            plan.cut,
            &keep,
            &p,
            &Objects(&self.objects),
            &display,
        );
        // What the block shows counts as in view (change notices).
        let shown: Vec<u32> = match block {
            Some(_) => self
                .cache
                .block_calls(plan.cut, &keep)
                .into_iter()
                .map(|c| c as u32)
                .collect(),
            None => Vec::new(),
        };
        let lines = self.file_lines(0);
        self.cache.apply_fold(
            plan,
            text,
            (block, shown),
            host,
            &|i| lines[i as usize].clone(),
            again,
        );
        self.saw_new_copies();
    }

    /// Where a host compaction cuts: the item of the first message it kept.
    fn host_cut(&self, h: &HostFold) -> u32 {
        let items = &self.cache.items.list[..h.items_at as usize];
        let fp_of = |it: &crate::context::cache_layout::Item| -> &str {
            let turn = &self.chat.turns[it.turn as usize];
            match it.kind {
                crate::context::cache_layout::ItemKind::User => {
                    turn.user.as_ref().map_or("", |u| u.fp.as_str())
                }
                _ => turn.messages[it.msg as usize].fp.as_str(),
            }
        };
        h.first_kept_fp
            .as_deref()
            .and_then(|fp| items.iter().rposition(|it| fp_of(it) == fp))
            .map_or(h.items_at, |i| i as u32)
    }

    /// Cache layout assembly: host fold, epoch if due, render, engine fold
    /// if due (then render again); last, the copies an edit from memory calls for
    /// (after any fold: a fold rewrites the last record, and its working
    /// area may show the file already).
    pub(super) fn assemble_cache(&mut self) -> String {
        let out = self.assemble_cache_folded();
        let recalled = std::mem::take(&mut self.cache.from_memory);
        self.cache.from_memory = recalled
            .into_iter()
            .filter(|&f| self.may_copy(f, false))
            .collect();
        let slices = std::mem::take(&mut self.cache.slices);
        self.cache.slices = slices
            .into_iter()
            .filter(|&f| self.may_copy(f, true))
            .collect();
        let p = self.cache_policy();
        let call = self.records.model_calls.len() as u32;
        if !self
            .cache
            .from_memory_copies(call, &p, &Objects(&self.objects))
        {
            return out;
        }
        self.saw_new_copies();
        self.writes.pending.chat = true;
        self.render_cache()
    }

    /// Whether file `f` may get a copy appended at this call. Not when a
    /// live call shows its current text: after an edit from memory, the
    /// model misquoted what it can see (a slice covering the whole file
    /// counts); at a slice (`slice`), the file is in view already. Nor at a
    /// slice of a file in view whole (a read and the edits after it) or
    /// shown by a live copy.
    fn may_copy(&self, f: u32, slice: bool) -> bool {
        let Some(id) = self.cache.aliases.f.get(f as usize) else {
            return false;
        };
        if self.live_in_view(id).is_some() {
            return false;
        }
        if slice {
            !self.cache.whole_in_view(f) && self.cache.copies_in_view().all(|(c, _)| c.file != f)
        } else {
            self.slice_in_view(id).is_none()
        }
    }

    fn assemble_cache_folded(&mut self) -> String {
        let p = self.cache_policy();
        let pinned = self.pinned_calls();
        if let Some(h) = self.cache.host_fold.take() {
            // Changes due are told here too, as before an engine fold: pi's
            // kept tail may show a file's old text.
            self.notify_changes();
            let cut = self.host_cut(&h).max(self.cache.fold_cut());
            self.run_epoch(&pinned, true);
            let user = self
                .cache
                .items
                .list
                .iter()
                .rposition(|it| it.kind == crate::context::cache_layout::ItemKind::User)
                .map(|u| u as u32)
                .filter(|&u| u < cut);
            let mut keep = pinned.clone();
            keep.extend(self.cache.working().iter().map(|&c| c as usize));
            self.apply_fold(FoldPlan { cut, user }, &h.summary, true, &keep);
            return self.render_cache();
        }
        self.notify_changes();
        let forced = p.deactivate_epoch > 0
            && self.cache.deactivated_units(&p) > u64::from(p.deactivate_epoch);
        // What the last epoch kept for the working files does not count
        // towards the next one (it would run again at once).
        // Unseen output does count: an epoch at its arrival keeps it (see
        // `CacheLayout::run_epoch`) and it then stays live until the next
        // epoch. Waiting a call instead collapsed it right after its first
        // showing, before the edits that quote it (87 vs 91 of 120 supported
        // edits on the recorded session, docs/design.md §5).
        let mut exempt = pinned.clone();
        exempt.extend(self.cache.working().iter().map(|&c| c as usize));
        let epoch = forced || self.cache.live_units_now(&p, &exempt) > u64::from(p.high);
        if epoch {
            self.run_epoch(&pinned, forced);
        }
        let out = self.render_cache();
        let Some(plan) = self.cache.fold_plan.take().filter(|_| epoch) else {
            return out;
        };
        if plan.cut as usize >= self.cache.items.len() || plan.cut == self.cache.fold_cut() {
            return out;
        }
        let live = {
            let resolver = self.indexer.resolver.clone();
            let display = move |s: &crate::model::FilesystemSource| resolver.display_path(s);
            let objects = Objects(&self.objects);
            let env = Env {
                turns: &self.chat.turns,
                items: &self.cache.items,
                aliases: &self.cache.aliases,
                state: &self.cache.state,
                policy: &p,
                doc: &objects,
                frozen: &self.cache.frozen,
                display: &display,
                epochs: self.cache.state.epochs.len() as u32,
                limit: self.cache.items.len(),
            };
            env.live_chars()
        };
        let skeleton = self.cache.rendered_chars.saturating_sub(live);
        if skeleton.div_ceil(4) <= u64::from(p.fold) {
            return out;
        }
        let text = self
            .cache
            .summary(&self.chat.turns, plan.cut, plan.user, &p);
        // Working files' views whose place is folded go in the block too,
        // and the slices being edited from (`working::fold_slices`).
        let mut keep = pinned.clone();
        keep.extend(self.cache.working().iter().map(|&c| c as usize));
        let slices =
            working::fold_slices(&self.cache.state.calls, &self.cache.file_calls, &p, &keep);
        keep.extend(slices);
        self.apply_fold(plan, &text, false, &keep);
        self.render_cache()
    }

    /// Epochs done (recorded with each model call).
    pub(super) fn cache_epochs(&self) -> u32 {
        self.cache.state.epochs.len() as u32
    }

    /// Counters of the cache layout (tests, benchmarks).
    pub fn cache_stats(&self) -> CacheStats {
        self.cache.stats(&self.cache_policy(), &self.pinned_calls())
    }

    /// The alias of an object (`t12`, `f3`), if it has one.
    pub fn alias_of(&self, object_id: &str) -> Option<String> {
        self.cache.aliases.of_object(object_id).map(Alias::text)
    }

    /// The object an alias names.
    pub fn resolve_alias_id(&self, alias: &str) -> Option<String> {
        Alias::parse(alias).and_then(|a| self.cache.aliases.resolve(a).ok().map(str::to_string))
    }

    /// The unpaged form: `(aliases, layout state)` as the chat document
    /// held them before paging (tests compare the materialised document).
    #[cfg(test)]
    pub(super) fn cache_persisted(&self) -> (Value, Value) {
        (
            serde_json::to_value(&self.cache.aliases).unwrap_or(Value::Null),
            serde_json::to_value(&self.cache.state).unwrap_or(Value::Null),
        )
    }
}
