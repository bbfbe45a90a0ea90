//! An epoch of the cache layout: what it keeps in view — the newest calls
//! (the recency rule), output the model has not seen, the working files'
//! views and copies, the changes a frozen showing needs beside it — and
//! what it collapses; then it proposes a fold (`fold.rs` cuts).
//!
//! Split from `state.rs` (the state machine's data and its per-call steps):
//! an epoch reads and writes the same private caches, so these are methods
//! of [`CacheLayout`] too.

use std::collections::{BTreeSet, HashMap, HashSet};

use super::items::ItemKind;
use super::records::{EpochRecord, WorkingCopy};
use super::render::DocLookup;
use super::state::{shows_files, CacheLayout, FoldPlan};
use crate::context::aliases::Alias;
use crate::context::epochs::{self, utf16_len, CachePolicy};
use crate::context::working::{self, CopyAt};

/// An epoch's decision ([`CacheLayout::epoch_keeps`]): what stays in view.
struct EpochKeeps {
    /// Calls the agent deactivated since the last epoch.
    deactivated: HashSet<usize>,
    /// Calls that keep their text, ascending.
    kept: Vec<usize>,
    /// The oldest call kept for recency (thinking goes before it).
    recent_oldest: Option<usize>,
    /// The working files' views (the epoch record names them).
    work: Vec<usize>,
    /// The working copies live before the epoch.
    copies: Vec<working::LiveCopy>,
    /// The current texts looked up, per file (`None`: not known).
    texts: HashMap<u32, Option<String>>,
    /// Copies kept and made.
    plan: working::WorkingPlan,
}

impl CacheLayout {
    /// Calls that never collapse: pinned toolcalls, the newest showing
    /// call of each pinned object, and the agent's changes of a pinned file
    /// since that showing (`changes_since`): the pin keeps the text as it was, and without
    /// them the model would take it for the current one (random sessions'
    /// check 12: a fold's `PINNED` block over folded or collapsed edits).
    pub fn pinned_calls<'s>(&self, pinned: impl Iterator<Item = &'s String>) -> HashSet<usize> {
        let mut out = HashSet::new();
        for id in pinned {
            if let Some(c) = self.aliases.call_of(id) {
                out.insert(c as usize);
            }
            if let Some(&c) = self.latest_show.get(id) {
                out.insert(c as usize);
                if let Some(Alias::File(f)) = self.aliases.of_object(id) {
                    out.extend(self.changes_since(f, c + 1));
                }
            }
        }
        out
    }

    /// The agent's changes of file `f` from call `from` on that a text shown
    /// before `from` needs beside it to read as current: its newest
    /// successful write (a whole new text) and the successful edits after
    /// it, or every successful edit when it has no write since.
    pub(super) fn changes_since(&self, f: u32, from: u32) -> impl Iterator<Item = usize> + '_ {
        let calls = &self.state.calls;
        let since = self.file_calls.of(f);
        let later = &since[since.partition_point(|&k| k < from)..];
        let start = later
            .iter()
            .rposition(|&k| calls[k as usize].tool == "write" && !calls[k as usize].is_error)
            .unwrap_or(0);
        later[start..].iter().map(|&k| k as usize).filter(|&k| {
            let c = &calls[k];
            matches!(c.tool.as_str(), "edit" | "write") && !c.is_error
        })
    }

    /// Calls an epoch keeps so that no file the fold shows reads as
    /// current when it is not: the fold's `PINNED` block and its working
    /// area's copies stay as they were until the next fold, whatever epochs
    /// collapse, so the agent's changes of such a file since its newest
    /// showing there stay in the chat with it — its newest write since
    /// (a whole new text) and the edits after that. Like the edits of a
    /// pinned file (`pinned_calls`); random sessions' check 12. Not the
    /// calls the agent deactivated: their collapse is what it asked for.
    /// A ranged read counts too: it may cover the whole file (random seed
    /// 1729: `offset 1, limit 24` of a 20-line file, its edit collapsed
    /// beside it), and a stale slice misleads as a stale whole does.
    pub fn fold_changes(&self) -> Vec<usize> {
        let calls = &self.state.calls;
        let skip = |k: usize| self.state.deactivated.contains(&(k as u32));
        let shows = |k: u32, f: u32| {
            let c = &calls[k as usize];
            !c.is_error
                && match c.tool.as_str() {
                    "read" => c.file == Some(f) && c.has_result,
                    "write" => c.file == Some(f),
                    _ => shows_files(&self.aliases, c).contains(&f),
                }
        };
        // Per file the fold shows, the first call after its newest showing
        // there.
        let mut after: HashMap<u32, u32> = HashMap::new();
        let mut saw = |f: u32, from: u32| {
            let a = after.entry(f).or_insert(from);
            *a = (*a).max(from);
        };
        for &k in self.fold_block() {
            let c = &calls[k as usize];
            for f in c.file.into_iter().chain(shows_files(&self.aliases, c)) {
                if shows(k, f) {
                    saw(f, k + 1);
                }
            }
        }
        if let Some(area) = self.state.folds.last() {
            for c in area.copies.iter().filter(|c| c.collapsed.is_none()) {
                saw(c.file, c.after);
            }
        }
        // (Changes the fold folded away are gone either way: the chat's only.)
        let cut = self.fold_cut();
        let in_chat = |k: usize| self.items.assistant_item.get(k).is_some_and(|&a| a >= cut);
        after
            .into_iter()
            .flat_map(|(f, from)| self.changes_since(f, from))
            .filter(|&k| !skip(k) && in_chat(k))
            .collect()
    }

    /// An activation's "[f4 is shown above]" whose target this epoch
    /// collapsed (its result, or a write's content) collapses with it to a
    /// ref: it would point at a ref (random seeds 138, 443: the agent
    /// deactivated the file, or the write it named grew old). An identical
    /// re-read pointing there that stays in view shows its own text: it
    /// cannot collapse (a short text, under `min_collapse_chars`, whose
    /// original is an edit whose old and new text together can; random
    /// default-budget seed 326), or the pin keeps it; not while the fold's
    /// block shows the original. Returns `changed` with those notes added.
    fn collapse_notes_with_targets(&mut self, mut changed: Vec<u32>, epoch: u32) -> Vec<u32> {
        let calls = &self.state.calls;
        let gone: HashSet<u32> = changed
            .iter()
            .copied()
            .filter(|&c| {
                let st = &calls[c as usize];
                st.collapsed == Some(epoch) || st.args_collapsed == Some(epoch)
            })
            .collect();
        // A note comes after what it names: no walk before the oldest target.
        let Some(&from) = gone.iter().min() else {
            return changed;
        };
        let mut orphans = Vec::new();
        // An original the fold's block shows stays in view (random seed 1969).
        let block = self.fold_block().to_vec();
        for (k, st) in self
            .state
            .calls
            .iter_mut()
            .enumerate()
            .skip(from as usize + 1)
        {
            if st.collapsed.is_none() && st.points_to.is_some_and(|d| gone.contains(&d)) {
                st.collapsed = Some(epoch);
                changed.push(k as u32);
            } else if st.collapsed.is_none()
                && st
                    .dedupe()
                    .is_some_and(|d| gone.contains(&d) && !block.contains(&d))
            {
                orphans.push(k as u32);
            }
        }
        for k in orphans {
            self.void_dedupe(k, epoch);
        }
        changed
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
        doc: &dyn DocLookup,
    ) -> Vec<u32> {
        let number = self.state.epochs.len() as u32 + 1;
        let EpochKeeps {
            deactivated,
            mut kept,
            recent_oldest,
            work,
            copies,
            mut texts,
            plan,
        } = self.epoch_keeps(p, pinned, doc);
        self.kept_copies = plan.keep_copies.clone();
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
        let copies_change =
            !plan.new_copies.is_empty() || copies.iter().any(|c| !plan.keep_copies.contains(&c.at));
        if !force && !copies_change && !self.open.iter().any(collapsible) {
            self.fold_plan = None;
            // Files first seen are still listed, in a record that collapses
            // nothing (appended: the cached prefix stays).
            if let Some(delta) = self.delta(file_line, false) {
                self.push_notice(call_index, delta);
            }
            return Vec::new();
        }
        // (Only when the epoch runs: it stamps the voids.) Re-reads
        // pointing at a copy this epoch collapses point at the new
        // copy of the same text it makes, or show their own text (and
        // collapse like any read): never a pointer to a ref. The current
        // fold's working area stays whatever the plan says.
        let area = self.state.folds.len().checked_sub(1).map(|k| k as u32);
        let stays = |at: &CopyAt| {
            plan.keep_copies.contains(at) || matches!(at, CopyAt::Area(k, _) if Some(*k) == area)
        };
        let remade = |f: u32, body: &str| {
            plan.new_copies.contains(&f) && texts.get(&f).and_then(Option::as_deref) == Some(body)
        };
        let retarget = self.lose_copies(&stays, number, &remade);
        // A re-read that stays, pointing at a call the agent deactivated
        // (it read the file again before the epoch came), shows its own
        // text from now on: the original collapses as asked, and the
        // pointer would name a ref (random seed 607). Not one the fold's
        // `PINNED` block shows: the block stays as it is until the next
        // fold, so the original stays in view and the pointer true (seed
        // 1969: voided, the re-read showed the block's text a second time).
        let block = self.fold_block();
        let orphaned: Vec<u32> = kept
            .iter()
            .chain(pinned.iter().filter(|&&i| is_pinned(i)))
            .copied()
            .filter(|&i| {
                self.state.calls[i]
                    .dedupe()
                    .is_some_and(|d| deactivated.contains(&(d as usize)) && !block.contains(&d))
            })
            .map(|i| i as u32)
            .collect::<BTreeSet<u32>>()
            .into_iter()
            .collect();
        // Several re-reads of one such original (read again twice before
        // the epoch): the newest shows the text, the older ones collapse to
        // refs unless pinned — voided together, each showed it (default
        // budgets, random seed 159: the text twice).
        let mut shown: HashSet<u32> = HashSet::new();
        for k in orphaned.into_iter().rev() {
            let newest = self.state.calls[k as usize]
                .dedupe()
                .is_some_and(|d| shown.insert(d));
            if !newest && !is_pinned(k as usize) {
                if let Ok(at) = kept.binary_search(&(k as usize)) {
                    kept.remove(at);
                }
            }
            self.void_dedupe(k, number);
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
        let changed = self.collapse_notes_with_targets(changed, number);
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

        let thinking_before = self.drop_thinking(p, recent_oldest);

        // Working copies: the ones no view rests on any more collapse; the
        // files whose views could not be kept get theirs.
        for c in &copies {
            if !plan.keep_copies.contains(&c.at) {
                self.collapse_copy(c.at, number);
            }
        }
        let new_copies = plan
            .new_copies
            .iter()
            .filter_map(|&f| {
                let text = texts.remove(&f).flatten()?;
                Some(self.working_copy(f, &text))
            })
            .collect::<Vec<_>>();
        let new_copies_any = !new_copies.is_empty();

        let delta = self.delta(file_line, false);
        let anchor = self.items.len().saturating_sub(1) as u32;
        let copy_before = if new_copies_any {
            self.copy_before(p.drop_thinking.then_some(thinking_before))
                .filter(|&b| b <= anchor)
        } else {
            None
        };
        for (k, f) in retarget {
            let j = new_copies.iter().position(|w| w.file == f);
            match j {
                Some(j) => {
                    self.state.calls[k as usize].dedupe_copy =
                        Some(CopyAt::Epoch(number - 1, j as u32));
                    self.changed.calls.insert(k);
                }
                None => {
                    self.void_dedupe(k, number);
                }
            }
        }
        self.state.epochs.push(EpochRecord {
            call: call_index,
            thinking_before,
            anchor,
            delta,
            working: work.iter().map(|&i| i as u32).collect(),
            notice: false,
            copies: new_copies,
            copy_before,
        });

        self.fold_plan = (p.fold > 0).then(|| self.fold_proposal(first_kept));
        changed
    }

    /// Where thinking is dropped from at this epoch: every assistant item
    /// before the first one holding a call kept for recency (a working
    /// file's old read keeps no thinking), when the policy drops it. Only
    /// the items whose rendering has thinking are rendered again.
    fn drop_thinking(&mut self, p: &CachePolicy, recent_oldest: Option<usize>) -> u32 {
        let prev = self.state.epochs.last().map_or(0, |e| e.thinking_before);
        let boundary = recent_oldest
            .map(|oldest| self.first_assistant_from(oldest as u32))
            .unwrap_or(prev);
        let thinking_before = if p.drop_thinking {
            prev.max(boundary)
        } else {
            prev
        };
        for i in prev..thinking_before {
            if let Some(slot) = self.json.get_mut(i as usize) {
                if slot.as_ref().is_some_and(|r| r.thinking) {
                    *slot = None;
                }
            }
        }
        thinking_before
    }

    /// The fold an epoch proposes: cut at `first_kept`, the first assistant
    /// item holding a kept call, or at the current turn's prompt if later.
    fn fold_proposal(&self, first_kept: Option<u32>) -> FoldPlan {
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
        FoldPlan {
            cut,
            user: user.filter(|&u| u < cut),
        }
    }

    /// What an epoch keeps in view (nothing is changed yet): the newest
    /// calls (the recency rule) and the output the model has not seen; the
    /// working files' views, the copies they rest on and the new copies
    /// (`working::plan`), never a copy of a text something kept already
    /// shows whole; the changes a frozen showing needs beside it
    /// (`fold_changes`); and the originals of kept pointers.
    fn epoch_keeps(
        &self,
        p: &CachePolicy,
        pinned: &HashSet<usize>,
        doc: &dyn DocLookup,
    ) -> EpochKeeps {
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
        let copies = self.live_copies();
        // A file the agent deactivated keeps neither its view nor its copy.
        let deactivated_files: HashSet<u32> = deactivated
            .iter()
            .flat_map(|&i| {
                let c = &self.state.calls[i];
                c.file.into_iter().chain(shows_files(aliases, c))
            })
            .collect();
        let mut texts: HashMap<u32, Option<String>> = HashMap::new();
        let recall = self.state.recall.clone();
        let input = working::PlanInput {
            calls: &self.state.calls,
            fc: &self.file_calls,
            p,
            shows_files: &|c| shows_files(aliases, c),
            prev: &prev,
            copies: &copies,
            skip: &|f| deactivated_files.contains(&f),
            recall: &|f| recall.get(&f).copied(),
        };
        let mut plan = working::plan(&input, &mut |f| {
            texts
                .entry(f)
                .or_insert_with(|| self.current_text(f, doc))
                .as_deref()
                .map(|t| epochs::units(utf16_len(t)))
        });
        let mut work = std::mem::take(&mut plan.calls);
        work.retain(|i| !deactivated.contains(i));
        kept.extend(work.iter().copied());
        // Nor the agent's changes of a file since the fold showed it whole
        // (the fold shows it as it was until the next fold).
        kept.extend(self.fold_changes());
        // The fresh and working calls added above may point at a call the
        // recency rule let go: what they name stays too.
        epochs::with_originals(&self.state.calls, &mut kept, |i| deactivated.contains(&i));
        // So does a kept or pinned re-read pointing at a copy: the copy
        // stays (and no second copy of that text is made).
        for &i in kept.iter().chain(pinned.iter()) {
            let Some(at) = self.state.calls[i].copy_dedupe() else {
                continue;
            };
            if deactivated.contains(&i) || plan.keep_copies.contains(&at) {
                continue;
            }
            if let Some(c) = copies.iter().find(|c| c.at == at) {
                plan.keep_copies.push(at);
                let same = texts.get(&c.file).and_then(Option::as_deref)
                    == self.copy(at).map(WorkingCopy::body);
                if same {
                    plan.new_copies.retain(|&f| f != c.file);
                }
            }
        }
        // Nor is a copy made of the text a call that stays in view shows
        // whole: a pinned call (the pin keeps it; random seed 44), or one
        // the current fold's `PINNED` block shows (the block stays until the
        // next fold, which keeps that call as the file's view; seed 26).
        let block = self.fold_block();
        let mut block_views: Vec<usize> = Vec::new();
        // Nor of the text a live copy still shows: the copy stays, it is the
        // file's view (a copy in the fold's working area after the agent
        // deactivated the file and read it again; random seeds 443, 492).
        let mut same_copies: Vec<CopyAt> = Vec::new();
        plan.new_copies.retain(|&f| {
            let Some(Some(now)) = texts.get(&f) else {
                return true;
            };
            if let Some(at) = self.copy_showing(f, now) {
                same_copies.push(at);
                return false;
            }
            // (A slice whose text is the file's covers it.)
            let whole = |i: usize| {
                !deactivated.contains(&i)
                    && !self.state.calls[i].is_dedupe()
                    && self.shown_text(i as u32, f, doc) == Some(now.as_str())
            };
            // Nor beside a call this epoch keeps (fresh, or recent) that
            // shows it: the copy is made when that call collapses (random
            // seed 611: a fresh activation and a copy of the same text, the
            // view three units over the budget the copy fit in).
            // So does a kept edit whose body is the whole text (seed 3362).
            let edit = self.edit_showing(f, now, self.fold_cut(), doc);
            if pinned.iter().any(|&i| whole(i))
                || kept.iter().any(|&i| self.shows_now(i as u32) && whole(i))
                || edit.is_some_and(|k| {
                    kept.contains(&(k as usize)) && !deactivated.contains(&(k as usize))
                })
            {
                return false;
            }
            match block.iter().map(|&k| k as usize).find(|&k| whole(k)) {
                Some(k) => {
                    block_views.push(k);
                    false
                }
                None => true,
            }
        });
        for at in same_copies {
            if !plan.keep_copies.contains(&at) {
                plan.keep_copies.push(at);
            }
        }
        if !block_views.is_empty() {
            work.extend(&block_views);
            work.sort_unstable();
            work.dedup();
            kept.extend(block_views);
            kept.sort_unstable();
            kept.dedup();
        }
        EpochKeeps {
            deactivated,
            kept,
            recent_oldest,
            work,
            copies,
            texts,
            plan,
        }
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
}
