//! A session's side of following references (issue 12 item 2, rules in
//! [`crate::memory::links`]): link metadata lines after an active note,
//! bringing a note's targets into the pool, and `expand`.

use std::borrow::Cow;

use super::{OpResult, Session};
use crate::context::spec_layout;
use crate::memory::expand::ExpandItem;
use crate::memory::links;
use crate::store::Document;

impl Session {
    /// The cached latest version of an object this session knows.
    pub fn known_doc(&self, id: &str) -> Option<&Document> {
        self.objects.get(id).map(|c| &c.doc)
    }

    /// What an active object shows in the spec layout: its content, then one
    /// metadata line per link target (§5.2).
    pub(super) fn active_text<'a>(&'a self, doc: &'a Document) -> Cow<'a, str> {
        let display = self.display_path_fn();
        let body = spec_layout::active_body(doc, &display);
        match links::link_lines(doc, &|id| self.known_doc(id), &self.pins, &display) {
            None => body,
            Some(lines) => Cow::Owned(format!("{body}\n\n{lines}")),
        }
    }

    /// What decides an active block's rendering: the object's hash, plus
    /// its link targets' hashes when it has links (a target read later
    /// changes its line).
    pub(super) fn render_key(&self, doc: &Document) -> String {
        let own = doc
            .get("object_hash")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default();
        let ts = links::targets(doc);
        if ts.is_empty() {
            return own.to_owned();
        }
        let mut key = own.to_owned();
        for (t, _) in ts {
            key.push('|');
            key.push_str(
                self.known_doc(&t)
                    .and_then(|d| d.get("object_hash"))
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("-"),
            );
        }
        key
    }

    /// What a note `id` links to that this session does not know yet:
    /// `(paths of files that exist, ids that are not paths, pins not
    /// resolved)`.
    pub fn link_targets_to_bring(
        &self,
        id: &str,
    ) -> (Vec<String>, Vec<String>, Vec<(String, String)>) {
        let Some(doc) = self.known_doc(id) else {
            return (Vec::new(), Vec::new(), Vec::new());
        };
        let known = |t: &str| self.objects.contains_key(t);
        (
            links::targets_to_discover(doc, &known),
            links::id_targets_to_adopt(doc, &known),
            links::pins_to_resolve(doc, &|k| self.pins.contains_key(k)),
        )
    }

    /// Records what pins resolved to (see [`links::resolve_pins`]), for the
    /// link lines.
    pub fn apply_pins(&mut self, pins: links::PinStates) {
        self.pins.extend(pins);
    }

    /// Makes a note's link targets (their latest versions, stubs for files
    /// never read) known to the session. Spec layout: they join the index
    /// and the pool (§5.2, "inactive/visible"). Cache layout: they are only
    /// cached for the link lines — no `f` alias, no `FILES` entry, so a note
    /// does not change what the cache layout lists; activating one by id
    /// adopts it then.
    pub fn apply_link_targets(&mut self, docs: Vec<Document>) {
        for doc in docs {
            let Some(id) = doc
                .get(crate::store::ID_KEY)
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
            else {
                continue;
            };
            if self.options.layout == crate::context::Layout::Cache {
                self.objects
                    .entry(id)
                    .or_insert(super::Known { doc, tx: None });
            } else if !self.sets.index.contains(&id) {
                let _ = self.adopt(doc);
            }
        }
    }

    /// Applies one expand step that needs no file read.
    pub fn expand_stored(&mut self, id: &str, doc: Document) -> ExpandItem {
        let path = links::source_path(&doc);
        if let Err(e) = self.adopt(doc) {
            return item(id, path, &OpResult::failure(&e, Some(id.to_owned())));
        }
        item(id, path, &self.activate(id))
    }
}

/// The item for a step's operation result.
pub fn item(id: &str, path: Option<String>, r: &OpResult) -> ExpandItem {
    let outcome = if !r.ok {
        "failed"
    } else if r.outcome == Some(super::SetOutcome::AlreadyActive) {
        "already active"
    } else {
        "activated"
    };
    ExpandItem {
        id: r.id.clone().unwrap_or_else(|| id.to_owned()),
        path,
        outcome: outcome.into(),
        message: r.message.clone(),
        pin: None,
        version: None,
    }
}

/// The item for a target that is neither stored nor on disk.
pub fn not_found(id: &str, path: Option<String>) -> ExpandItem {
    ExpandItem {
        id: id.to_owned(),
        path,
        outcome: "not found".into(),
        message: "no object and no file yet: the link resolves when it appears".into(),
        pin: None,
        version: None,
    }
}
