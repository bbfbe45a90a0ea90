//! Identical re-reads and activations of the cache layout: a read whose
//! text is already in view whole points at what shows it — an earlier call
//! (`[t19: identical to t12 above]`) or a working copy
//! (`[t19: identical to FILE f3 above]`) — and each pointer stays true: what
//! it names is kept while it is, or the pointer is voided (it shows its own
//! text from that epoch on; reconstruction renders it as each call saw it).

use std::collections::HashSet;

use serde_json::Value;

use super::render::DocLookup;
use super::state::{shows_files, CacheLayout};
use crate::context::epochs::{CopyAt, Dedupe};

impl CacheLayout {
    /// What a new read is identical to: the newest call on the same file
    /// (past "shown above" notes, failed calls and calls of the same text
    /// that collapsed since) that shows the same text
    /// whole — a read with the same arguments or the same text, the model's
    /// own write, or an activation of that file — still live and in view (a
    /// fold may have folded it away without collapsing it: pointing there
    /// points at nothing); any other tool on the file in between (an edit)
    /// ends that search, what follows is a new version. Else a working copy
    /// in view showing that text.
    pub fn find_dedupe(
        &self,
        call: u32,
        args: &Value,
        text: &str,
        doc: &dyn DocLookup,
    ) -> Option<Dedupe> {
        let c = self.state.calls.get(call as usize)?;
        let f = c.file.filter(|_| c.tool == "read")?;
        self.dedupe_by_call(call, f, args, text, doc)
            .or_else(|| self.copy_showing(f, text).map(Dedupe::Copy))
    }

    /// The live working copy of file `f` whose text is `text`, if any.
    pub fn copy_showing(&self, f: u32, text: &str) -> Option<CopyAt> {
        self.copies_in_view()
            .find(|(c, _)| c.file == f && c.body() == text)
            .map(|(_, at)| at)
    }

    /// The newest ranged read of file `f` in view whose output is `text`
    /// (a range that covers the whole file) and that is no pointer itself.
    pub fn slice_showing(&self, f: u32, text: &str, doc: &dyn DocLookup) -> Option<u32> {
        self.file_calls.of(f).iter().rev().copied().find(|&k| {
            let c = &self.state.calls[k as usize];
            c.tool == "read"
                && c.ranged
                && !c.is_error
                && !c.is_dedupe()
                && self.shows_now(k)
                && self.aliases.t[k as usize]
                    .as_deref()
                    .and_then(|id| doc.get_doc(id))
                    .and_then(|d| d.get("content"))
                    .and_then(Value::as_str)
                    == Some(text)
        })
    }

    /// [`CacheLayout::find_dedupe`] among the calls.
    fn dedupe_by_call(
        &self,
        call: u32,
        f: u32,
        args: &Value,
        text: &str,
        doc: &dyn DocLookup,
    ) -> Option<Dedupe> {
        for j in (0..call).rev() {
            let p = &self.state.calls[j as usize];
            // An activation that only pointed above ("[f1 is shown above]")
            // showed nothing new: look past it.
            // Nor did a failed call (an edit whose text was not found)
            // change the file.
            if p.points_to.is_some() || p.is_error {
                continue;
            }
            let activation = shows_files(&self.aliases, p).contains(&f);
            if p.file != Some(f) && !activation {
                continue;
            }
            let (j, same) = match p.tool.as_str() {
                _ if activation => (j, self.shown_text(j, f, doc) == Some(text)),
                "write" => (j, self.shown_text(j, f, doc) == Some(text)),
                "read" => {
                    let Some(d) = self.aliases.t[j as usize]
                        .as_deref()
                        .and_then(|id| doc.get_doc(id))
                    else {
                        continue;
                    };
                    let same = d.get("content").and_then(Value::as_str) == Some(text);
                    // Another slice of the file: look further back. The same
                    // text under other arguments (a range covering the whole
                    // file) is the same text in view twice: a pointer too.
                    if d.get("args") != Some(args) && !same {
                        continue;
                    }
                    // An identical re-read itself points at its original: so does this one.
                    if let Some(at) = p.copy_dedupe() {
                        return same.then_some(Dedupe::Copy(at));
                    }
                    (p.dedupe().unwrap_or(j), same)
                }
                // An edit whose one `newText` is the whole file shows that
                // text as a write does (random seeds 319 and 1255: the read
                // right after it showed the text twice).
                "edit" if self.edit_shows(j, text, self.fold_cut(), doc) => {
                    return Some(Dedupe::Call(j));
                }
                _ => return None,
            };
            if !same {
                return None; // another version: what is before it is older
            }
            // (A re-read pointing at such an edit: the edit's body must be in view.)
            let in_view = match self.state.calls[j as usize].tool.as_str() {
                "edit" => self.edit_shows(j, text, self.fold_cut(), doc),
                _ => self.shows_now(j) && !self.state.calls[j as usize].is_error,
            };
            if in_view {
                return Some(Dedupe::Call(j));
            }
            // This one shows the text no more (collapsed): an older call
            // may still (random seed 920: a collapsed slice covering a small
            // file stopped the search before a whole read the fold's block
            // shows).
        }
        None
    }

    /// Identical re-reads pointing at a copy that does not stay (it goes at
    /// epoch `number`): those whose text a copy made at this epoch shows
    /// (`remade(file, text)`) are returned with that file, to point there;
    /// the others are voided from `number` on and show their own text.
    pub(super) fn lose_copies(
        &mut self,
        stays: &dyn Fn(&CopyAt) -> bool,
        number: u32,
        remade: &dyn Fn(u32, &str) -> bool,
    ) -> Vec<(u32, u32)> {
        let mut retarget = Vec::new();
        let pointing: Vec<(u32, CopyAt)> = self
            .copy_pointers
            .iter()
            .filter_map(|&k| Some((k, self.state.calls[k as usize].copy_dedupe()?)))
            .filter(|(_, at)| !stays(at))
            .collect();
        for (k, at) in pointing {
            match self.copy(at).map(|w| (w.file, remade(w.file, w.body()))) {
                Some((f, true)) => retarget.push((k, f)),
                _ => {
                    self.void_dedupe(k, number);
                }
            }
        }
        retarget
    }

    /// After a fold: identical re-reads pointing at a copy no longer in
    /// view point at a live copy of the same text (the area's copy carried
    /// over or made again), or are voided from `epoch` on. An activation or
    /// pin (`[f3 is shown above]`) names the file, not a version: it points
    /// at the file's copy the fold made, which shows it as it is now (a pin
    /// of the file keeps it there).
    ///
    /// Re-reads of one copy voided together showed one text: as in
    /// [`CacheLayout::void_folded_dedupes`], the first (the fold's `PINNED`
    /// block first, then past the cut) shows it again and the others past
    /// the cut collapse to refs (random seed 6202: a pinned whole read in
    /// the block and a slice covering the file after the cut, both pointing
    /// at a copy the fold folded away, showed it twice).
    pub(super) fn settle_copy_dedupes(&mut self, epoch: u32) {
        // (file, after, where) of each copy in view.
        let live: Vec<(u32, u32, CopyAt)> = self
            .copies_in_view()
            .map(|(c, at)| (c.file, c.after, at))
            .collect();
        let (block, cut) = self
            .state
            .folds
            .last()
            .map(|f| (f.block.clone(), f.cut))
            .unwrap_or_default();
        let mut pointers = self.copy_pointers.clone();
        pointers.sort_unstable_by_key(|k| (!block.contains(k), *k));
        let mut shown: HashSet<CopyAt> = HashSet::new();
        for k in pointers {
            let Some(at) = self.state.calls[k as usize].copy_dedupe() else {
                continue;
            };
            if live.iter().any(|l| l.2 == at) {
                continue;
            }
            let names_file = !self.state.calls[k as usize].shows.is_empty();
            let now = self
                .copy(at)
                .map(|w| (w.file, w.body().to_string()))
                .and_then(|(f, body)| {
                    self.copy_showing(f, &body).or_else(|| {
                        names_file
                            .then(|| live.iter().filter(|l| l.0 == f).max_by_key(|l| l.1))
                            .flatten()
                            .map(|l| l.2)
                    })
                });
            // In view past the cut: one the fold folded away shows nothing
            // (random seed 65: a fresh re-read collapsed as a repeat of one
            // folded away, and the model never saw its text).
            let past_cut = self.showing_item(k).is_some_and(|r| r >= cut);
            let c = &self.state.calls[k as usize];
            let (in_block, live) = (block.contains(&k), c.collapsed.is_none() && past_cut);
            match now {
                Some(at) => self.state.calls[k as usize].dedupe_copy = Some(at),
                None if shown.contains(&at) && !in_block && live => self.void_as_repeat(k, epoch),
                None => {
                    if self.void_dedupe(k, epoch) && (in_block || live) {
                        shown.insert(at);
                    }
                }
            }
            self.changed.calls.insert(k);
        }
    }

    /// Call `k`, an identical re-read, shows its own text from epoch
    /// `epoch` on (its result is rendered again), and can collapse again.
    /// Whether it has a text to show: a note has none (session 50, random
    /// seed 333 with late changes: a fresh re-read collapsed as the repeat
    /// of a voided activation note).
    pub(super) fn void_dedupe(&mut self, k: u32, epoch: u32) -> bool {
        let c = &mut self.state.calls[k as usize];
        c.dedupe_void = Some(epoch);
        // A note has no text of its own to show: "[f1 is shown above]"
        // with its copy gone would point at nothing; it collapses (random
        // seed 333: a failed edit's copy collapsed under an activation's note).
        let note = c.is_note();
        if note && c.collapsed.is_none() {
            c.collapsed = Some(epoch);
        }
        self.changed.calls.insert(k);
        self.copy_pointers.retain(|&c| c != k);
        // It shows its file now: the newest showing, if it is (a pin of
        // the file keeps it).
        let c = &self.state.calls[k as usize];
        if let Some(id) = c
            .file
            .filter(|_| !c.ranged && !note)
            .and_then(|f| self.aliases.f.get(f as usize))
        {
            if self.latest_show.get(id).is_none_or(|&l| l < k) {
                self.latest_show.insert(id.clone(), k);
            }
        }
        if let Some(Some(r)) = self.items.result_item.get(k as usize) {
            self.json.get_mut(*r as usize).map(Option::take);
        }
        // It can collapse again: back among the calls an epoch looks at.
        if (k as usize) < self.open_looked {
            self.open.push(k);
            self.open.sort_unstable();
            self.open.dedup();
        }
        if (k as usize) < self.looked {
            self.unsettled.push(k);
            self.unsettled.sort_unstable();
            self.unsettled.dedup();
        }
        !note
    }

    /// An identical re-read kept after a fold's `cut`, or shown in its
    /// `PINNED` block, whose original the fold folds away shows its own
    /// text from `epoch` on: "[t83: identical to t77 above]" would point at
    /// nothing (found by the random sessions of
    /// `__test__/layout-invariants.test.mjs`). After a fold everything past
    /// its summary is sent again anyway, so this costs no cache. Voided,
    /// a block's re-read is what later reads and activations of that text
    /// point at (random seeds 10 and 14: they showed it a second time).
    pub(super) fn void_folded_dedupes(&mut self, cut: u32, epoch: u32, block: &[u32]) {
        let item = |k: u32| self.items.result_item.get(k as usize).copied().flatten();
        let void: Vec<u32> = (0..self.state.calls.len() as u32)
            .filter(|&k| {
                self.state.calls[k as usize].dedupe().is_some_and(|d| {
                    self.showing_item(d).is_none_or(|r| r < cut)
                        && !block.contains(&d)
                        && (item(k).is_some_and(|r| r >= cut) || block.contains(&k))
                })
            })
            .collect();
        // Re-reads of one original showed one text: the first (in the block,
        // or past the cut) shows it again, the others after the cut collapse
        // to refs rather than show it a second time (random seed 920).
        let mut shown: HashSet<u32> = HashSet::new();
        for k in void {
            let c = &self.state.calls[k as usize];
            let d = c.dedupe().unwrap_or(k);
            let (in_block, live) = (block.contains(&k), c.collapsed.is_none());
            if shown.contains(&d) && !in_block && live {
                self.void_as_repeat(k, epoch);
                continue;
            }
            if self.void_dedupe(k, epoch) && (in_block || live) {
                shown.insert(d);
            }
        }
    }

    /// Call `k`, an identical re-read voided at `epoch` whose text another
    /// voided re-read shows again, collapses to a ref instead of showing it
    /// a second time; that other one stays the file's newest showing.
    fn void_as_repeat(&mut self, k: u32, epoch: u32) {
        let c = &self.state.calls[k as usize];
        let id = c.file.and_then(|f| self.aliases.f.get(f as usize)).cloned();
        let before = id.as_ref().and_then(|id| self.latest_show.get(id).copied());
        self.void_dedupe(k, epoch);
        self.state.calls[k as usize].collapsed = Some(epoch);
        if let Some(id) = id {
            match before {
                Some(b) => self.latest_show.insert(id, b),
                None => self.latest_show.remove(&id),
            };
        }
    }
}
