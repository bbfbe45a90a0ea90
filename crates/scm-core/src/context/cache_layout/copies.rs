//! Working copies of the cache layout (see [`crate::context::working`]):
//! where an epoch's copies go, which are shown, what a file's current text
//! is, and what a fold keeps of them in its working area.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::items::ItemKind;
use super::records::WorkingCopy;
use super::render::DocLookup;
use super::state::CacheLayout;
use crate::context::aliases::{call_alias, file_alias};
use crate::context::epochs::{self, utf16_len, CachePolicy};
use crate::context::notices;
use crate::context::words;
use crate::context::working::{self, CopyAt};

impl CacheLayout {
    /// Where an epoch's new working copies go: before the first item the
    /// epoch rewrote (every item in view was rendered at the last call;
    /// what the epoch changed, and what is new, is not) or, when epochs
    /// drop thinking, the first that still has it (the next epoch drops
    /// it), whichever is first; at a message boundary (never between a tool
    /// call and its result), not before the fold cut.
    pub(super) fn copy_before(&self, thinking_before: Option<u32>) -> Option<u32> {
        let start = self.fold_cut() as usize;
        let changed =
            (start..self.items.len()).find(|&i| self.json.get(i).is_none_or(Option::is_none))?;
        let mut at = match thinking_before {
            Some(t) => changed.min((t as usize).max(start)),
            None => changed,
        };
        // Back to the start of a message that is not a tool result.
        while at > start && self.items.list[at].kind == ItemKind::ToolResult {
            at -= 1;
        }
        Some(at as u32)
    }

    /// Working copies shown whole now: the current fold's working area,
    /// and the chat's copies after the fold cut, not collapsed.
    pub fn live_copies(&self) -> Vec<working::LiveCopy> {
        self.copies_in_view()
            .map(|(c, at)| working::LiveCopy {
                file: c.file,
                after: c.after,
                units: epochs::units(utf16_len(&c.text)),
                at,
            })
            .collect()
    }

    /// The working copies shown whole now and where they are, without their
    /// sizes (a copy is tens of kB: most callers only ask which files).
    pub fn copies_in_view(&self) -> impl Iterator<Item = (&WorkingCopy, working::CopyAt)> {
        let start = self.fold_cut();
        let area = self
            .state
            .folds
            .len()
            .checked_sub(1)
            .into_iter()
            .flat_map(move |k| {
                self.state.folds[k]
                    .copies
                    .iter()
                    .enumerate()
                    .map(move |(j, c)| (c, working::CopyAt::Area(k as u32, j as u32)))
            });
        let chat = self
            .state
            .epochs
            .iter()
            .enumerate()
            .filter(move |(_, e)| !e.copies.is_empty() && e.copies_before() >= start)
            .flat_map(|(k, e)| {
                e.copies
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| c.collapsed.is_none())
                    .map(move |(j, c)| (c, working::CopyAt::Epoch(k as u32, j as u32)))
            });
        area.chain(chat)
    }

    /// File `f`'s live working copies as they are in the context's JSON.
    pub fn copy_texts(&self, f: u32) -> Vec<String> {
        self.copies_in_view()
            .filter(|(c, _)| c.file == f)
            .filter_map(|(c, _)| serde_json::to_string(&c.text).ok())
            .collect()
    }

    /// The working copy at `at` (live or not).
    pub(super) fn copy(&self, at: CopyAt) -> Option<&WorkingCopy> {
        match at {
            CopyAt::Area(k, j) => self.state.folds.get(k as usize)?.copies.get(j as usize),
            CopyAt::Epoch(k, j) => self.state.epochs.get(k as usize)?.copies.get(j as usize),
        }
    }

    /// Collapses the working copy at `at` from epoch `number` on. A copy in
    /// the working area stays until the next fold (collapsing it would send
    /// everything after it again); its label says which version it is.
    pub(super) fn collapse_copy(&mut self, at: working::CopyAt, number: u32) {
        let working::CopyAt::Epoch(k, j) = at else {
            return;
        };
        if let Some(c) = self
            .state
            .epochs
            .get_mut(k as usize)
            .and_then(|e| e.copies.get_mut(j as usize))
        {
            c.collapsed.get_or_insert(number);
            self.changed.epochs.insert(k);
        }
    }

    /// File `f`'s current text: the store's version when it has one, else
    /// the text its calls in this session show (see
    /// [`working::text_from_calls`]).
    pub(crate) fn current_text(&self, f: u32, doc: &dyn DocLookup) -> Option<String> {
        let id = self.aliases.f.get(f as usize)?;
        if let Some(d) = doc.get_doc(id) {
            let state = d.get("state").and_then(Value::as_str);
            // Gone, binary or too large: nothing to show (its calls' text
            // would be a file that is not there).
            if state == Some("deleted") || d.get("content_omitted").is_some_and(|v| !v.is_null()) {
                return None;
            }
            if let (false, Some(t)) = (
                state == Some("stub"),
                d.get("content").and_then(Value::as_str),
            ) {
                return Some(t.to_string());
            }
        }
        let aliases = &self.aliases;
        working::text_from_calls(f, &self.state.calls, &self.file_calls, &|k| {
            let d = aliases
                .t
                .get(k as usize)?
                .as_deref()
                .and_then(|id| doc.get_doc(id))?;
            let args = d.get("args").cloned().unwrap_or(Value::Null);
            let content = d
                .get("content")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            Some((args, content))
        })
    }

    /// Files whose edit just quoted text the model did not have in view get
    /// their current version appended at this call, rather than at the next
    /// epoch: the agent works on them from memory. After a failed edit it
    /// would otherwise read the file again before its next try; after a
    /// successful one its next edits of the file quote more of what it
    /// cannot see (on a real session played through pi, 10 of 105 edits,
    /// docs/benchmarks.md "Session 32").
    /// So do small files a slice of which arrived at this call while the
    /// agent edits them (`slices`, see [`working::slice_of_edited`]).
    /// Appended after the last message, so the cached prefix stays; the next
    /// epoch keeps or collapses it like any working copy. A file too large
    /// for the copies' budget (for a slice's file: larger than a small
    /// copy), or whose current text a live copy (an epoch or a fold at this
    /// call made it) or a slice in view already shows, gets none. Whether
    /// one was appended.
    pub fn from_memory_copies(
        &mut self,
        call_index: u32,
        p: &CachePolicy,
        doc: &dyn DocLookup,
    ) -> bool {
        let small = working::small_copy_units(p);
        let mut files: Vec<(u32, u64)> = std::mem::take(&mut self.from_memory)
            .into_iter()
            .map(|f| (f, u64::from(p.working_copy_units)))
            .chain(
                std::mem::take(&mut self.slices)
                    .into_iter()
                    .map(|f| (f, small)),
            )
            .collect();
        // One copy per file, under the larger bound.
        files.sort_unstable_by_key(|&(f, max)| (f, std::cmp::Reverse(max)));
        files.dedup_by_key(|&mut (f, _)| f);
        if files.is_empty() || p.working_copy_units == 0 {
            return false;
        }
        let mut made = Vec::new();
        for (f, max) in files {
            let Some(text) = self.current_text(f, doc) else {
                continue;
            };
            if epochs::units(utf16_len(&text)) > max {
                continue;
            }
            // A slice in view may cover the whole file, and so may an edit
            // whose body is the whole text.
            if self.copy_showing(f, &text).is_none()
                && self.slice_showing(f, &text, doc).is_none()
                && self.edit_showing(f, &text, self.fold_cut(), doc).is_none()
            {
                made.push(self.working_copy(f, &text));
            }
        }
        if made.is_empty() {
            return false;
        }
        self.push_appended(call_index, None, made);
        true
    }

    /// Whether a change notice about an area copy's file, told since the
    /// fold that made the copy, goes with the fold at `cut`: carried over,
    /// the copy would show a version the model was told is gone, and the
    /// news would be gone (random seeds 23, 343: check 6b). Made anew, it
    /// shows the file as it is now.
    fn told_changed_since(&self, copy: &WorkingCopy, cut: u32) -> bool {
        let made = self.state.folds.iter().find(|f| {
            f.copies
                .iter()
                .any(|c| c.file == copy.file && c.after == copy.after)
        });
        let Some(made) = made else {
            return false;
        };
        let alias = file_alias(copy.file);
        self.notices_before(cut, made.epoch as usize)
            .any(|(_, part)| notices::names(part) == Some(alias.as_str()))
    }

    /// Whether file `f` is at a version the model has not seen: one it saw
    /// is recorded, and the current one is another (changed outside; the
    /// agent's own edits and writes move the seen version with them).
    fn changed_unseen(&self, f: u32, doc: &dyn DocLookup) -> bool {
        let Some(id) = self.aliases.f.get(f as usize) else {
            return false;
        };
        let now = doc
            .get_doc(id)
            .and_then(|d| d.get("object_hash")?.as_str().map(str::to_string));
        self.state
            .seen
            .get(id)
            .is_some_and(|seen| now.is_some_and(|n| &n != seen))
    }

    /// A new working copy of file `f` showing `text`.
    pub(super) fn working_copy(&self, f: u32, text: &str) -> WorkingCopy {
        let alias = file_alias(f);
        let path = self
            .state
            .files
            .get(f as usize)
            .map_or("", |e| e.path.as_str());
        let after = self.state.calls.len() as u32;
        let as_of = (after > 0).then(|| call_alias(after - 1));
        WorkingCopy {
            file: f,
            after,
            text: words::working_copy(&alias, path, as_of.as_deref(), text),
            ref_text: words::working_copy_ref(&alias, text),
            collapsed: None,
        }
    }

    /// The working area of a fold at `cut`, decided before its block is
    /// rendered: the current area's copies the last epoch kept, carried over
    /// verbatim (in the cached prefix); the chat's copies the fold cuts
    /// away, made again from the files as they are now; and a copy for each
    /// working file whose folded view parts are larger than its current
    /// text. `keep` (what the block shows) loses the calls a copy covers
    /// unless the agent `pinned` them.
    pub fn fold_copies(
        &mut self,
        cut: u32,
        keep: &mut HashSet<usize>,
        pinned: &HashSet<usize>,
        p: &CachePolicy,
        doc: &dyn DocLookup,
    ) -> Vec<WorkingCopy> {
        let epoch = self.state.epochs.len() as u32;
        let this_call = self.state.epochs.last().map(|e| e.call);
        let mut area: Vec<WorkingCopy> = Vec::new();
        // Per file, the first call its copy does not cover.
        let mut covers: HashMap<u32, u32> = HashMap::new();
        let kept = std::mem::take(&mut self.kept_copies);
        let mut remake = Vec::new();
        // Where each chat copy sits, before any record changes below (the
        // last record's copies all move together).
        let live: Vec<(working::LiveCopy, u32)> = self
            .live_copies()
            .into_iter()
            .map(|c| {
                let before = match c.at {
                    working::CopyAt::Epoch(k, _) => self.state.epochs[k as usize].copies_before(),
                    working::CopyAt::Area(..) => 0,
                };
                (c, before)
            })
            .collect();
        // Whether every area copy so far was carried over: the cached
        // prefix reaches this copy.
        let mut intact = true;
        for (c, before) in live {
            match c.at {
                working::CopyAt::Area(k, j) => {
                    if !kept.contains(&c.at) {
                        intact = false;
                        continue;
                    }
                    // Carried over verbatim while what changed the file since
                    // (its calls after the copy, the fold's block shows the
                    // folded ones) is small, and only while the copies before
                    // it were too: after one made anew it is sent again
                    // anyway, so it is made anew unless the file is as it
                    // shows (the current text, without later edits in the
                    // block).
                    let since: u64 = keep
                        .iter()
                        .filter(|&&k| {
                            k as u32 >= c.after && self.state.calls[k].file == Some(c.file)
                        })
                        .map(|&k| working::view_units(&self.state.calls[k], p))
                        .sum();
                    let copy = &self.state.folds[k as usize].copies[j as usize];
                    // An edit since the copy that the fold folds away and the
                    // block does not keep (the view rested on a newer chat
                    // copy, which this fold cuts away too; random deletion
                    // seed 99): carried over, the copy would read as current.
                    let lost = self.changes_since(c.file, c.after).any(|e| {
                        !keep.contains(&e)
                            && self.items.assistant_item.get(e).is_some_and(|&a| a < cut)
                    });
                    let carry = match intact {
                        _ if lost || self.told_changed_since(copy, cut) => false,
                        true => since * 8 <= c.units,
                        false => self.current_text(c.file, doc).as_deref() == Some(copy.body()),
                    };
                    if carry {
                        area.push(self.state.folds[k as usize].copies[j as usize].clone());
                        covers.insert(c.file, c.after);
                    } else {
                        intact = false;
                        remake.push(c.file);
                    }
                }
                working::CopyAt::Epoch(k, _) => {
                    if before >= cut {
                        covers.insert(c.file, c.after);
                        continue;
                    }
                    if Some(self.state.epochs[k as usize].call) == this_call {
                        // Made at this call: nobody saw it where it was.
                        self.state.epochs[k as usize].copies.clear();
                        self.state.epochs[k as usize].copy_before = None;
                        self.changed.epochs.insert(k);
                    } else {
                        self.collapse_copy(c.at, epoch);
                    }
                    remake.push(c.file);
                }
            }
        }
        // Folded parts of the views kept, per file without a copy.
        let mut parts: HashMap<u32, u64> = HashMap::new();
        for &k in keep.iter() {
            let c = &self.state.calls[k];
            let Some(f) = c.file else { continue };
            let folded = self
                .items
                .result_item
                .get(k)
                .copied()
                .flatten()
                .is_some_and(|r| r < cut)
                || self.items.assistant_item.get(k).is_some_and(|&a| a < cut);
            if folded && !pinned.contains(&k) && !covers.contains_key(&f) && !remake.contains(&f) {
                *parts.entry(f).or_default() += working::view_units(c, p);
            }
        }
        // Made again after the ones the fold cut away, each text read once.
        let mut again: Vec<(u32, Option<String>)> = remake.iter().map(|&f| (f, None)).collect();
        let mut bigger: Vec<(u32, u64)> = parts.into_iter().collect();
        bigger.sort_unstable();
        // And one for each whose text changed outside since the model saw it:
        // no notice was due while the file was out of view, and the block
        // would show the old text as current (random seed 4999, check 6b).
        for (f, units) in bigger {
            match self.current_text(f, doc) {
                Some(t) if epochs::units(utf16_len(&t)) < units || self.changed_unseen(f, doc) => {
                    again.push((f, Some(t)))
                }
                _ => {}
            }
        }
        let now = self.state.calls.len() as u32;
        // A pinned call the block shows with this very text: no copy of it
        // (nothing twice); it covers the file's other views as a copy would.
        let folded = |k: usize| self.showing_item(k as u32).is_some_and(|r| r < cut);
        let pinned_shows = |f: u32, t: &str| {
            pinned.iter().any(|&k| {
                keep.contains(&k) && folded(k) && self.shown_text(k as u32, f, doc) == Some(t)
            })
        };
        // Nor beside another call the block shows with this very text (the
        // target of a "shown above" note kept after the cut; random seed
        // 854): that entry is the file's view, it covers the calls before it.
        let block_shows = |f: u32, t: &str| {
            keep.iter()
                .copied()
                .filter(|&k| {
                    folded(k)
                        && !self.state.calls[k].is_dedupe()
                        && self.shown_text(k as u32, f, doc) == Some(t)
                })
                .max()
        };
        // A call the fold keeps after its cut that shows this very text
        // whole (a read that arrived with this call): it is the file's view,
        // no copy beside it (random seed 30); it covers the calls before it.
        // So does an edit whose body is the whole text (seed 3362).
        let kept_shows = |f: u32, t: &str| {
            let shows = self.file_calls.of(f).iter().rev().copied().find(|&k| {
                let c = &self.state.calls[k as usize];
                let live = match c.tool.as_str() {
                    "write" => c.args_live_at(epoch),
                    _ => c.result_live_at(epoch),
                };
                live && !c.is_dedupe()
                    && !c.is_error
                    && self.showing_item(k).is_some_and(|r| r >= cut)
                    && self.shown_text(k, f, doc) == Some(t)
            });
            shows.max(self.edit_showing(f, t, cut, doc))
        };
        for (f, text) in again {
            if covers.contains_key(&f) {
                continue;
            }
            if let Some(t) = text.or_else(|| self.current_text(f, doc)) {
                if let Some(k) = kept_shows(f, &t) {
                    covers.insert(f, k);
                    continue;
                }
                if pinned_shows(f, &t) {
                    covers.insert(f, now);
                    continue;
                }
                if let Some(k) = block_shows(f, &t) {
                    covers.insert(f, k as u32);
                    continue;
                }
                area.push(self.working_copy(f, &t));
                covers.insert(f, now);
            }
        }
        // A pinned call or an identical re-read whose text a copy in the
        // area already shows: the copy keeps it in view until the next
        // fold, the block need not.
        let by_copy: Vec<usize> = keep
            .iter()
            .copied()
            .filter(|&k| {
                (pinned.contains(&k) || self.state.calls[k].copy_dedupe().is_some())
                    && folded(k)
                    && area
                        .iter()
                        .any(|c| self.shown_text(k as u32, c.file, doc) == Some(c.body()))
            })
            .collect();
        for k in by_copy {
            keep.remove(&k);
        }
        keep.retain(|&k| {
            pinned.contains(&k)
                || self.state.calls[k]
                    .file
                    .and_then(|f| covers.get(&f))
                    .is_none_or(|&after| k as u32 >= after)
        });
        area
    }
}
