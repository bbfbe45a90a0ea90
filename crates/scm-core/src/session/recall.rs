//! Working copies, session side (see [`crate::context::working`]): which
//! files the agent edits from memory — each edit checked, when its result
//! arrives, against the context the model was given — and the version a
//! copy showed (change notices diff against it).

use serde_json::Value;

use super::Session;

impl Session {
    /// An edit that failed, or that quoted text the model did not have in
    /// view (it edits the file from memory): the file gets working copies
    /// from now on (see [`crate::context::working`]), until an edit quotes
    /// text in view outside them (`CacheState::recall`).
    pub(super) fn note_recall(&mut self, call: u32, args: &Value, is_error: bool) {
        let Some(f) = self.cache.state.calls[call as usize].file else {
            return;
        };
        let view = match &self.handover.whole {
            Some(v) => v.as_str(),
            None if self.handover.previous.seq() > 0 => self.handover.previous.last(),
            None => return,
        };
        let olds: Vec<&str> = crate::context::tool_args::edit_bodies(args)
            .filter_map(|e| e.get("oldText").and_then(Value::as_str))
            .collect();
        // Working from memory (still)? An edit of a file with copies that
        // quotes text shown outside them did not need them: no new copy is
        // made; the one shown stays while the file is worked on.
        let copies: Vec<String> = self.cache.copy_texts(f);
        let needed = is_error || !crate::context::working::quoted_in_view(&olds, view, &copies);
        // An edit of text the model did not have in view (not even in a
        // copy), failed or not: it works on the file from memory, so it is
        // shown the file as it is now at this call
        // (`CacheLayout::from_memory_copies`).
        if !crate::context::working::quoted_in_view(&olds, view, &[]) {
            self.cache.from_memory.push(f);
        }
        let recall = &mut self.cache.state.recall;
        if needed {
            *recall.entry(f).or_default() += 1;
        } else if let Some(k) = recall.get_mut(&f) {
            // No new copies; but the file stays one the agent comes back
            // to from memory. An edit quoting a grep's or a ranged read's
            // lines says nothing about the next one, tens of calls on (the
            // two real sessions played through pi: 4 of 200 edits).
            *k = 0;
        }
    }

    /// A file the agent wrote, too large for the views' budget: it knows
    /// the text because it wrote it, and will quote it from memory (a plan
    /// written once and edited for hundreds of calls), so it is edited from
    /// memory until an edit shows otherwise (see [`Session::note_recall`]).
    pub(super) fn note_written(&mut self, call: u32) {
        let c = &self.cache.state.calls[call as usize];
        let big = crate::context::epochs::units(c.arg_chars)
            > u64::from(self.cache_policy().working_units);
        if let (Some(f), true) = (c.file, big) {
            *self.cache.state.recall.entry(f).or_default() += 1;
        }
    }

    /// A slice of a small file the agent is editing: it may get the file's
    /// current version at this call (see
    /// [`crate::context::working::slice_of_edited`]).
    pub(super) fn note_slice(&mut self, call: u32) {
        let p = self.cache_policy();
        let c = &self.cache;
        if let Some(f) =
            crate::context::working::slice_of_edited(&c.state.calls, &c.file_calls, call, &p)
        {
            self.cache.slices.push(f);
        }
    }

    /// The model sees the files copied at this call as they are now
    /// (change notices diff against that version).
    pub(super) fn saw_new_copies(&mut self) {
        let now = self.cache.state.calls.len() as u32;
        let ids: Vec<String> = self
            .cache
            .copies_in_view()
            .filter(|(c, _)| c.after == now)
            .filter_map(|(c, _)| self.cache.aliases.f.get(c.file as usize).cloned())
            .collect();
        for id in ids {
            self.mark_seen(&id);
        }
    }
}
