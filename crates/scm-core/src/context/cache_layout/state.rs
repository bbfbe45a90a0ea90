//! The cache layout's state machine: calls, files and results arrive,
//! epochs collapse, folds cut; rendered items are cached per epoch.
//!
//! (One state machine whose steps share private caches: its epochs (`epoch.rs`), records, items, rendering,
//! folds, pointers and working copies are siblings that add methods to [`CacheLayout`].)

use std::collections::{BTreeSet, HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::items::Items;
use super::records::{CacheState, EpochRecord, FileEntry, WorkingCopy};
use super::render::{arg_chars, DocLookup, Env, Frozen, TextJson, HEADER};
use crate::context::aliases::{Alias, Aliases};
use crate::context::chat::Turn;
use crate::context::epochs::{self, utf16_len, CachePolicy, Dedupe, Shown, ToolCallState};
use crate::context::scale::ReadSizes;
use crate::context::tool_args::{edit_bodies, ReadOf};
use crate::context::working::{self, FileCalls};
use crate::model::FilesystemSource;

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
    /// Working copies made (see [`working`]).
    #[serde(default)]
    pub copies: usize,
    pub live_units: u64,
    pub items: usize,
    /// The scale the session's reads put on the policy's sizes, in
    /// thousandths (see [`crate::context::scale`]).
    #[serde(default)]
    pub size_scale_permille: u64,
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
pub(super) struct Rendered {
    json: String,
    chars: u64,
    /// An assistant message with thinking (an epoch that drops thinking
    /// before it renders it again).
    pub(super) thinking: bool,
}

/// The cache layout of one session: persisted state plus derived caches.
#[derive(Debug, Default)]
pub struct CacheLayout {
    pub aliases: Aliases,
    /// Per file, the version the model last saw (change notices).
    pub seen: crate::context::notices::SeenFiles,
    /// `FILES +k` lines by file index, with the listed size they were
    /// rendered from.
    pub file_lines: Vec<Option<(u64, String)>>,
    pub state: CacheState,
    /// What changed in place since the last flush took it.
    pub changed: Changed,
    pub items: Items,
    /// Rendered items; an epoch invalidates the ones it changed.
    pub(super) json: Vec<Option<Rendered>>,
    /// Calls an epoch could still collapse ([`ToolCallState::open`]), of the
    /// first `open_looked`; bind_result re-adds a call it changed.
    pub(super) open: Vec<u32>,
    pub(super) open_looked: usize,
    /// The state's text messages, serialised.
    pub(super) texts: TextJson,
    /// Length of the last rendered context (sizes the next one).
    out_len: usize,
    /// Calls whose live units may not be 0 (of the first `looked`).
    pub(super) unsettled: Vec<u32>,
    pub(super) looked: usize,
    /// Size of the last rendered context as the fold trigger counts it.
    pub rendered_chars: u64,
    /// Exact versions shown by activations (and to be shown: those of
    /// `CacheState::op_shows`).
    pub frozen: Frozen,
    /// Object id → the newest call that shows its content (read, write,
    /// activation), for pins and deactivation.
    pub latest_show: HashMap<String, u32>,
    pub host_fold: Option<HostFold>,
    pub fold_plan: Option<FoldPlan>,
    /// Per file, the calls that touched it (working files).
    pub(crate) file_calls: FileCalls,
    /// Calls whose result arrived since the last render: the model has not
    /// seen them, so no epoch collapses them.
    pub(super) fresh: Vec<u32>,
    /// Calls there were at the last render (after a resume: all the state
    /// holds): the model has been shown every one of them.
    rendered_calls: usize,
    /// The working copies the last epoch kept (a fold in the same call
    /// carries those of its working area over).
    pub(super) kept_copies: Vec<working::CopyAt>,
    /// Files whose edit, its result arrived at this call, quoted text the
    /// model did not have in view ([`CacheLayout::from_memory_copies`]).
    pub from_memory: Vec<u32>,
    /// Small files being edited, a slice of which arrived at this call
    /// ([`working::slice_of_edited`], [`CacheLayout::from_memory_copies`]).
    pub slices: Vec<u32>,
    /// Calls pointing at a working copy, not voided (see
    /// [`ToolCallState::copy_dedupe`]); derived from `state.calls`.
    pub(super) copy_pointers: Vec<u32>,
    /// The sizes of the session's read outputs: the policy's sizes scale
    /// with them ([`crate::context::scale`]); derived from `state.calls`.
    pub read_sizes: ReadSizes,
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
        self.rendered_calls = self.state.calls.len();
        self.from_memory.clear();
        self.slices.clear();
        self.read_sizes.clear();
        self.copy_pointers.clear();
        for i in 0..self.state.calls.len() {
            if self.state.calls[i].copy_dedupe().is_some() {
                self.copy_pointers.push(i as u32);
            }
            self.note_show(i as u32, self.state.calls[i].clone());
            self.note_file_calls(i as u32);
            self.note_read_size(i as u32);
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
        if self.copies_in_view().any(|(c, _)| c.file == f) {
            return true;
        }
        // The current fold's PINNED block shows its calls as they were.
        if self.fold_block().iter().any(|&k| {
            let c = &self.state.calls[k as usize];
            c.file == Some(f) || shows_files(&self.aliases, c).contains(&f)
        }) {
            return true;
        }
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
                _ => result_in_view && c.result_live_at(epochs) && !c.is_dedupe(),
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
        self.push_appended(call_index, Some(text), Vec::new());
    }

    /// A record that collapses nothing: `delta` and `copies` after the last
    /// item (see [`EpochRecord::notice`]).
    pub(super) fn push_appended(
        &mut self,
        call_index: u32,
        delta: Option<String>,
        copies: Vec<WorkingCopy>,
    ) {
        let (thinking_before, working) = self
            .state
            .epochs
            .last()
            .map_or((0, Vec::new()), |e| (e.thinking_before, e.working.clone()));
        self.state.epochs.push(EpochRecord {
            call: call_index,
            thinking_before,
            anchor: self.items.len().saturating_sub(1) as u32,
            delta,
            working,
            notice: true,
            copies,
            copy_before: None,
        });
    }

    fn note_show(&mut self, call: u32, c: ToolCallState) {
        if !c.has_result || c.is_error {
            return;
        }
        // An identical re-read of a call shows nothing itself: its original
        // stays the newest showing call — unless that is a slice (one
        // covering the file, as the texts are the same), which never became
        // it: the slice does now (random deletion seed 213: a pin went on
        // keeping an older text and the edits since). One of a working copy
        // shows the text through the copy: a pin of the file keeps it, and
        // it keeps the copy. Nor does a slice show the object: a pin or
        // deactivation of the file is about its whole text.
        // So does an edit that replaced the whole file, which never became
        // it either: a pin keeps the edit.
        if matches!(c.tool.as_str(), "read" | "write") && !c.ranged {
            let shown_by = match c.dedupe() {
                None => Some(call),
                Some(k) => self.shows_through(k).then_some(k),
            };
            if let (Some(k), Some(id)) = (
                shown_by,
                c.file.and_then(|f| self.aliases.f.get(f as usize)),
            ) {
                self.latest_show.insert(id.clone(), k);
            }
        }
        // An activation or pin pointing at a working copy shows the file
        // through the copy, as such a re-read does.
        let through_copy = c.copy_dedupe().is_some();
        for s in c.shows.iter().filter(|s| !s.note || through_copy) {
            self.latest_show.insert(s.id.clone(), call);
        }
        // One pointing at a slice that covers the whole file shows it
        // through that slice: a pin of the file keeps the slice (random seed
        // 164: a pin showed the text again beside it). So for an edit that
        // replaced the whole file (seed 319). Never over a newer showing: a
        // re-read that pointed at the slice when the activation came and
        // shows its text since (its pointer voided) is newer, and a resume
        // replays the calls with their pointers as they are now (random
        // seed 1508: the file copied beside the re-read in the fold's block).
        let through = c.points_to.filter(|&k| self.shows_through(k));
        if let Some(k) = through {
            for s in c.shows.iter().filter(|s| s.note) {
                if self.latest_show.get(&s.id).is_none_or(|&l| l <= k) {
                    self.latest_show.insert(s.id.clone(), k);
                }
            }
        }
    }

    /// Whether a pointer at call `k` shows the file through `k`, which is
    /// not the file's newest showing by itself: a slice covering the whole
    /// file, or an edit whose body is the whole file.
    fn shows_through(&self, k: u32) -> bool {
        self.state
            .calls
            .get(k as usize)
            .is_some_and(|t| t.ranged || t.tool == "edit")
    }

    /// A new tool-call block: `tool` as the layout treats it (a shell read
    /// is a `read`), the file it names, and for a read what it shows of it.
    pub fn push_call(
        &mut self,
        tool: &str,
        args: &Value,
        file: Option<u32>,
        read: Option<&ReadOf>,
    ) -> u32 {
        let i = self.aliases.push_call();
        self.state.calls.push(ToolCallState {
            tool: tool.to_string(),
            arg_chars: arg_chars(tool, args),
            file,
            ranged: read.is_some_and(|r| r.ranged),
            numbered: read.is_some_and(|r| r.numbered),
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
        dedupe: Option<Dedupe>,
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
        (c.dedupe_of, c.dedupe_copy) = match dedupe {
            Some(Dedupe::Call(j)) => (Some(j), None),
            Some(Dedupe::Copy(at)) => (None, Some(at)),
            None => (None, None),
        };
        if c.dedupe_copy.is_some() {
            self.copy_pointers.push(call);
        }
        c.points_to = points_to;
        // File sizes as the calls show them (the prototype's rule).
        if let (Some(f), false) = (c.file, is_error) {
            if let Some(fe) = self.state.files.get_mut(f as usize) {
                self.changed.files.insert(f);
                match c.tool.as_str() {
                    "read" => fe.chars = fe.chars.max(result_chars),
                    "write" => fe.chars = c.arg_chars,
                    "edit" => {
                        let s = |e: &Value, k: &str| {
                            e.get(k).and_then(Value::as_str).map_or(0, utf16_len) as i64
                        };
                        let change: i64 = edit_bodies(args)
                            .map(|e| s(e, "newText") - s(e, "oldText"))
                            .sum();
                        fe.chars = (fe.chars as i64 + change).max(0) as u64;
                    }
                    _ => {}
                }
            }
        }
        let c = c.clone();
        self.note_show(call, c);
        self.note_file_calls(call);
        self.note_read_size(call);
        self.fresh.push(call);
    }

    /// Edit `call` succeeded and the text it replaced is gone from the file:
    /// its `oldText` shows as a ref — unless the model has already been
    /// shown the call (a host handed it over before its result, in this
    /// process or before a resume), which must not change.
    pub fn settle_edit(&mut self, call: u32) {
        if (call as usize) < self.rendered_calls {
            return;
        }
        if let Some(c) = self.state.calls.get_mut(call as usize) {
            c.old_ref = true;
            self.changed.calls.insert(call);
        }
    }

    /// A read's output size counts towards the scale of the policy's sizes
    /// (a failed read or an identical re-read says nothing new).
    fn note_read_size(&mut self, call: u32) {
        let c = &self.state.calls[call as usize];
        if c.tool == "read"
            && c.has_result
            && !c.is_error
            && c.dedupe_of.is_none()
            && c.dedupe_copy.is_none()
        {
            self.read_sizes.insert(c.result_chars);
        }
    }

    /// `p` at the scale the session's reads give it (see [`crate::context::scale`]).
    pub fn scaled(&self, p: &CachePolicy) -> CachePolicy {
        p.at_scale(self.read_sizes.permille(p.scale_above))
    }

    /// The current fold's `PINNED` block: the calls it shows (ascending).
    pub fn fold_block(&self) -> &[u32] {
        self.state
            .folds
            .last()
            .map_or(&[][..], |f| f.block.as_slice())
    }

    /// Whether call `k`'s text is in view now: its showing item after the
    /// fold cut and not collapsed (a write's arguments, another call's
    /// result), or the fold's block shows it (as it was, until the next
    /// fold, whatever epochs collapse since).
    pub fn shows_now(&self, k: u32) -> bool {
        let Some(c) = self.state.calls.get(k as usize) else {
            return false;
        };
        let epochs = self.state.epochs.len() as u32;
        let live = if c.tool == "write" {
            c.args_live_at(epochs)
        } else {
            c.result_live_at(epochs)
        };
        self.fold_block().contains(&k)
            || (live && self.showing_item(k).is_some_and(|r| r >= self.fold_cut()))
    }

    /// Whether the model has file `f` whole in view: its view
    /// ([`working::whole_view`]: a call showing it whole and every call after
    /// it) is in view now, an edit by its body. A working copy is not looked
    /// at here.
    pub fn whole_in_view(&self, f: u32) -> bool {
        let epochs = self.state.epochs.len() as u32;
        let Some(view) = working::whole_view(f, &self.state.calls, &self.file_calls) else {
            return false;
        };
        view.into_iter().all(|k| {
            let c = &self.state.calls[k as usize];
            if c.tool != "edit" {
                return self.shows_now(k);
            }
            c.args_live_at(epochs)
                && (self.fold_block().contains(&k)
                    || self
                        .items
                        .assistant_item
                        .get(k as usize)
                        .is_some_and(|&r| r >= self.fold_cut()))
        })
    }

    /// The text of file `f` call `k` shows whole, as it is in view: a
    /// read's output (a slice for a ranged read), what a write wrote, the
    /// version an activation froze.
    pub fn shown_text<'d>(&'d self, k: u32, f: u32, doc: &'d dyn DocLookup) -> Option<&'d str> {
        let c = self.state.calls.get(k as usize)?;
        if let Some(s) = c
            .shows
            .iter()
            .find(|s| !s.note && self.aliases.of_object(&s.id) == Some(Alias::File(f)))
        {
            let key = (s.id.clone(), s.object_hash.clone());
            return self.frozen.get(&key)?.get("content")?.as_str();
        }
        if c.file != Some(f) {
            return None;
        }
        let d = self
            .aliases
            .t
            .get(k as usize)?
            .as_deref()
            .and_then(|id| doc.get_doc(id))?;
        match c.tool.as_str() {
            "write" => d.get("args")?.get("content")?.as_str(),
            "read" => d.get("content")?.as_str(),
            _ => None,
        }
    }

    /// The newest successful edit of file `f` whose body shows `text`
    /// whole in the chat after item `cut`: its one `newText` is that text
    /// (an edit that replaced all of a small file) and its arguments are not
    /// collapsed. An edit's body is otherwise a part of the file, never its
    /// view; this one shows the file as a write does, so no working copy of
    /// the same text goes beside it (random seed 3362: a fold's copy beside
    /// such an edit, the file's text twice).
    pub fn edit_showing(&self, f: u32, text: &str, cut: u32, doc: &dyn DocLookup) -> Option<u32> {
        self.file_calls
            .of(f)
            .iter()
            .rev()
            .copied()
            .find(|&k| self.edit_shows(k, text, cut, doc))
    }

    /// Whether call `k` is such an edit (see [`CacheLayout::edit_showing`]):
    /// successful, its one `newText` is `text`, its arguments live and in
    /// the chat after item `cut`.
    pub fn edit_shows(&self, k: u32, text: &str, cut: u32, doc: &dyn DocLookup) -> bool {
        let epochs = self.state.epochs.len() as u32;
        let Some(c) = self.state.calls.get(k as usize) else {
            return false;
        };
        if c.tool != "edit" || c.is_error || !c.args_live_at(epochs) {
            return false;
        }
        if self
            .items
            .assistant_item
            .get(k as usize)
            .is_none_or(|&a| a < cut)
        {
            return false;
        }
        let Some(d) = self
            .aliases
            .t
            .get(k as usize)
            .and_then(Option::as_deref)
            .and_then(|id| doc.get_doc(id))
        else {
            return false;
        };
        let mut bodies = d.get("args").into_iter().flat_map(edit_bodies);
        match (bodies.next(), bodies.next()) {
            (Some(e), None) => e.get("newText").and_then(Value::as_str) == Some(text),
            _ => false,
        }
    }

    /// The item that shows call `k`'s text: a write's arguments (what it
    /// wrote), any other call's result.
    pub fn showing_item(&self, k: u32) -> Option<u32> {
        let c = self.state.calls.get(k as usize)?;
        if c.tool == "write" {
            self.items.assistant_item.get(k as usize).copied()
        } else {
            self.items.result_item.get(k as usize).copied().flatten()
        }
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
        if let Some(Alias::File(f)) = self.aliases.of_object(object_id) {
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

    /// `FILES +k` with the files first seen since the last delta (all of
    /// them when `all`).
    pub(super) fn delta(&mut self, file_line: &dyn Fn(u32) -> String, all: bool) -> Option<String> {
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
            chars += f.copies.iter().map(|c| utf16_len(&c.text)).sum::<u64>();
        }
        for (k, e) in state.epochs.iter().enumerate() {
            if e.anchor as usize >= start {
                chars += texts.delta(k).map_or(0, |(_, n)| *n);
            }
            if e.copies_before() as usize >= start {
                chars += texts.copies(state, k, epochs).map(|(_, n)| *n).sum::<u64>();
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
        self.rendered_calls = self.state.calls.len();
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
            dedupes: calls.iter().filter(|c| c.is_dedupe()).count(),
            // Distinct copies made: a fold carries some over unchanged.
            copies: {
                let chat = self.state.epochs.iter().flat_map(|e| &e.copies);
                let area = self.state.folds.iter().flat_map(|f| &f.copies);
                let made: BTreeSet<(u32, u32)> =
                    chat.chain(area).map(|c| (c.file, c.after)).collect();
                made.len()
            },
            live_units: self.live_units(p, pinned),
            items: self.items.len(),
            size_scale_permille: self.read_sizes.permille(p.scale_above),
        }
    }
}

/// The files (alias indices) a call's activation shows.
pub fn shows_files(aliases: &Aliases, c: &ToolCallState) -> Vec<u32> {
    c.shows
        .iter()
        .filter(|s| !s.note)
        .filter_map(|s| match aliases.of_object(&s.id) {
            Some(Alias::File(f)) => Some(f),
            _ => None,
        })
        .collect()
}
