//! **Change notices** of the cache layout: when a file whose content the
//! model has in view (or is working on) gets a new version it did not make
//! itself — changed on disk, written by another agent on the store — the
//! next call appends a short `CHANGED` message after the last one, so the
//! cached prefix stays as it was and the model never takes an old version
//! for the current one. The model's own `edit`/`write` are not notified:
//! their arguments already say what changed.
//!
//! The text is a unified diff against the version the model last saw, or,
//! when that is too long, a line saying how much changed and how to see it.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};

use similar::TextDiff;

/// The version of a file the model last saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Seen {
    pub object_hash: String,
    /// Its content (None: deleted, unreadable or metadata only).
    pub content: Option<String>,
}

impl Seen {
    /// A version as the model sees it: its hash and its content.
    pub fn of(doc: &crate::store::Document) -> Self {
        let field = |k: &str| doc.get(k).and_then(serde_json::Value::as_str);
        Seen {
            object_hash: field("object_hash").unwrap_or_default().to_string(),
            content: field("content").map(str::to_string),
        }
    }
}

/// Per file, the version the model last saw, and which of them got a new
/// version since (the next call's notice candidates). Not persisted itself:
/// the hashes are in the layout state (`CacheState::seen`), the texts are
/// fetched again on resume.
#[derive(Debug, Default)]
pub struct SeenFiles {
    versions: HashMap<String, Seen>,
    changed: BTreeSet<String>,
    /// Per file, the model's edits indexed but whose results it has not
    /// seen yet, in order: the version each was applied to and the one it
    /// made.
    edits: HashMap<String, VecDeque<(Seen, Seen)>>,
    /// Per file, the versions the model's whole reads indexed whose results
    /// it has not seen yet, in order (cleared at each call: one left over
    /// was not a `read` tool's).
    reads: HashMap<String, VecDeque<Seen>>,
    /// Changes the model's own edits landed on, to tell at the next call:
    /// (file, the version it had seen, the version its edit was applied to).
    outside: Vec<(String, Seen, Seen)>,
    /// Changes a read or an activation showed before they were told (see
    /// [`SeenFiles::shown_while_changed`]).
    shown: Vec<(String, String)>,
    /// Files this ingest indexed from the transcript itself (no tool of
    /// this session did: see [`SeenFiles::from_transcript`]).
    from_transcript: HashSet<String>,
    /// Files moved away (the watcher paired the rename): where each went,
    /// as the notice names it.
    moved: HashMap<String, String>,
}

impl SeenFiles {
    /// `id` was moved to `to` (a display path).
    pub fn moved(&mut self, id: &str, to: String) {
        self.moved.insert(id.to_string(), to);
    }

    /// Where `id` was moved to, once.
    pub fn take_moved(&mut self, id: &str) -> Option<String> {
        self.moved.remove(id)
    }

    /// The version of `id` the model last saw.
    pub fn get(&self, id: &str) -> Option<&Seen> {
        self.versions.get(id)
    }

    /// The model saw `seen` of `id` (no longer a candidate).
    pub fn saw(&mut self, id: &str, seen: Seen) {
        self.versions.insert(id.to_string(), seen);
        self.changed.remove(id);
    }

    /// Restores what the model saw of `id` (resume).
    pub fn restore(&mut self, id: String, seen: Seen) {
        self.versions.insert(id, seen);
    }

    /// `id` got a new version: a candidate if the model saw it.
    pub fn new_version(&mut self, id: &str) {
        if self.versions.contains_key(id) {
            self.changed.insert(id.to_string());
        }
    }

    /// Call `by` (a read or an activation) showed `id` as it is now while a
    /// version the model did not make was still to be told (`changed`): the
    /// change is still told, in one line naming `by` (its text is that
    /// call's). An older showing of the file may stay in view longer than
    /// `by` (a fold's `PINNED` block keeps its calls until the next fold,
    /// epochs collapse `by`): without the notice the old text would read as
    /// current there (random seed 245, check 6b). Call before [`Self::saw`].
    pub fn shown_while_changed(&mut self, id: &str, now_hash: &str, by: &str) {
        if !self.changed.contains(id) {
            return;
        }
        if self
            .versions
            .get(id)
            .is_some_and(|s| s.object_hash != now_hash)
        {
            self.shown.push((id.to_string(), by.to_string()));
        }
    }

    /// The changes a read or activation showed since the last take: (file,
    /// the call that showed it).
    pub fn take_shown(&mut self) -> Vec<(String, String)> {
        std::mem::take(&mut self.shown)
    }

    /// The candidates since the last take, in id order.
    pub fn take_changed(&mut self) -> Vec<String> {
        std::mem::take(&mut self.changed).into_iter().collect()
    }

    /// The model's edit of `id` was indexed: applied to `base`, it made
    /// `after` (only for a file the model has seen: whether it was kept).
    pub fn edit_indexed(&mut self, id: &str, base: Seen, after: Seen) -> bool {
        if !self.versions.contains_key(id) {
            return false;
        }
        self.edits
            .entry(id.to_string())
            .or_default()
            .push_back((base, after));
        true
    }

    /// The version the model's next edit of `id` made, when indexed (the
    /// one [`SeenFiles::edit_seen`] takes).
    pub fn pending_edit(&self, id: &str) -> Option<&Seen> {
        self.edits
            .get(id)
            .and_then(VecDeque::front)
            .map(|(_, after)| after)
    }

    /// The result of the model's next edit of `id` arrived: it has seen the
    /// version that edit made. When the edit was applied to a version it had
    /// not seen (the file changed outside it in between), that change is
    /// kept to tell, rather than taken as seen with the edit — unless
    /// `own(seen, base)`: the edit itself explains it (the watcher indexed
    /// the model's own write before the edit's result was observed). False
    /// when no indexed edit of `id` is known (the caller takes the current
    /// version).
    pub fn edit_seen(&mut self, id: &str, own: impl Fn(&Seen, &Seen) -> bool) -> bool {
        let Some((base, after)) = self.edits.get_mut(id).and_then(VecDeque::pop_front) else {
            return false;
        };
        if let Some(seen) = self.versions.get(id) {
            if seen.object_hash != base.object_hash && !own(seen, &base) {
                self.outside.push((id.to_string(), seen.clone(), base));
            }
        }
        self.saw(id, after);
        true
    }

    /// The result of an edit of `id` arrived with no indexed edit known (a
    /// restart between the edit and its result lost them, or the host never
    /// reported it): when `now`, the current version, is neither the seen
    /// one nor the seen one with this edit applied (`own`), the difference
    /// is kept to tell — the edit's own lines with it, as what it was
    /// applied to is not known. The caller then takes `now` as seen.
    pub fn edit_unknown(&mut self, id: &str, now: &Seen, own: impl Fn(&Seen, &Seen) -> bool) {
        if let Some(seen) = self.versions.get(id) {
            if seen.object_hash != now.object_hash && !own(seen, now) {
                self.outside
                    .push((id.to_string(), seen.clone(), now.clone()));
            }
        }
    }

    /// The model's whole read of `id` indexed `read`: the version its
    /// result shows.
    pub fn read_indexed(&mut self, id: &str, read: Seen) {
        self.reads
            .entry(id.to_string())
            .or_default()
            .push_back(read);
    }

    /// The result of the model's next whole read of `id` arrived: the
    /// version it shows, when that is not the current one (`now_hash`: the
    /// file changed between the read and this call). None: it shows the
    /// current version (or no read of it was indexed).
    pub fn read_seen(&mut self, id: &str, now_hash: &str) -> Option<Seen> {
        let read = self.reads.get_mut(id)?.pop_front()?;
        (read.object_hash != now_hash).then_some(read)
    }

    /// Every read result of the call has arrived: what is left was indexed
    /// by something else than a `read` tool (an `expand`). So has every edit
    /// result (one left over never reached the transcript).
    pub fn forget_reads(&mut self) {
        self.reads.clear();
        self.edits.clear();
    }

    /// The result of the model's write of `id` arrived: it knows the text
    /// it wrote (`written`). When `now`, the current version, holds another
    /// (the file changed between the write and this call), that difference
    /// is kept to tell rather than taken as seen with the write. The caller
    /// then takes `now` as seen.
    pub fn write_seen(&mut self, id: &str, written: &str, now: &Seen) {
        if now.content.as_deref().is_some_and(|c| c != written) {
            let wrote = Seen {
                object_hash: String::new(),
                content: Some(written.to_string()),
            };
            self.outside.push((id.to_string(), wrote, now.clone()));
        }
    }

    /// `id` was indexed as the transcript named it, not by a tool of this
    /// session (the package joined a running session, a fork of a session
    /// this store never had): what the model saw of it is what the
    /// transcript's results show, not the file as it is now.
    pub fn from_transcript(&mut self, id: &str) {
        self.from_transcript.insert(id.to_string());
    }

    /// Whether `id` was indexed from this ingest's transcript.
    pub fn is_from_transcript(&self, id: &str) -> bool {
        self.from_transcript.contains(id)
    }

    /// A new ingest: files indexed from now on are the only ones whose
    /// results no tool of this session saw.
    pub fn forget_transcript_files(&mut self) {
        self.from_transcript.clear();
    }

    /// The changes under the model's own edits since the last take.
    pub fn take_outside(&mut self) -> Vec<(String, Seen, Seen)> {
        std::mem::take(&mut self.outside)
    }
}

/// The notices of one message (one per file, joined by a blank line: a
/// diff has none, its lines all begin with a sign or a space).
pub fn parts(message: &str) -> impl Iterator<Item = &str> {
    let starts: Vec<usize> = std::iter::once(0)
        .chain(message.match_indices("\n\nCHANGED ").map(|(i, _)| i + 2))
        .filter(|&i| message[i..].starts_with("CHANGED "))
        .collect();
    let ends: Vec<usize> = starts
        .iter()
        .skip(1)
        .map(|&i| i - 2)
        .chain(std::iter::once(message.len()))
        .collect();
    starts
        .into_iter()
        .zip(ends)
        .map(move |(a, b)| &message[a..b])
}

/// The file alias a notice names (`f3` of `CHANGED f3 src/app.ts …`).
pub fn names(part: &str) -> Option<&str> {
    part.strip_prefix("CHANGED ")?.split(' ').next()
}

/// The notice for a change call `by` showed before it was told.
pub fn shown_notice(head: &str, by: &str) -> String {
    format!("CHANGED {head} outside your edits since you saw it; {by} shows it as it is now")
}

/// Longest diff shown inline (chars); longer changes get a one-line note.
pub const MAX_DIFF_CHARS: usize = 2_000;

/// Most chars of diffs in one notice message: many files changed at once (a
/// branch checkout, a formatter over the tree) are told as diffs while they
/// fit, the rest one line each (how many lines differ).
pub const MAX_NOTICE_CHARS: usize = 8_000;

/// What a file is now, as its notice tells it.
#[derive(Debug, Clone, Copy)]
pub enum Now<'a> {
    Text(&'a str),
    /// Moved to this path (a rename the watcher paired).
    MovedTo(&'a str),
    /// Held without its text (`content_omitted`: too large, binary,
    /// withheld): changed, but no diff — not "deleted", which it is not.
    WithoutText(&'a str),
    /// Deleted or no longer readable.
    Gone,
}

impl<'a> Now<'a> {
    /// From a version's `content`, where a rename took it, and its
    /// `content_omitted`.
    pub fn of(
        content: Option<&'a str>,
        moved_to: Option<&'a str>,
        omitted: Option<&'a str>,
    ) -> Self {
        match (content, moved_to, omitted) {
            (Some(text), _, _) => Now::Text(text),
            (None, Some(to), _) => Now::MovedTo(to),
            (None, None, Some(why)) => Now::WithoutText(why),
            (None, None, None) => Now::Gone,
        }
    }
}

/// The notice for one file: `head` names it (`f3 src/app.ts`); a diff of at
/// most `room` chars (else one line saying how many lines differ).
pub fn notice(head: &str, seen: &Seen, now: Now<'_>, room: usize) -> String {
    let now = match now {
        Now::Text(text) => Some(text),
        Now::MovedTo(to) => return format!("CHANGED {head}: moved to {to}"),
        Now::WithoutText(omitted) => {
            let why = match omitted {
                "too_large" => "too large for a diff",
                "binary" => "binary, no diff",
                "non_utf8" => "not UTF-8 text, no diff",
                _ => "withheld, no diff",
            };
            return format!("CHANGED {head} since you saw it ({why})");
        }
        Now::Gone => None,
    };
    match (seen.content.as_deref(), now) {
        (_, None) => format!("CHANGED {head}: deleted or no longer readable"),
        (None, Some(new)) => format!(
            "CHANGED {head}: it has content again ({} lines); activate it to see it",
            super::cache_layout::line_count(new)
        ),
        (Some(old), Some(new)) => {
            let diff = TextDiff::from_lines(old, new);
            let body = diff
                .unified_diff()
                .context_radius(2)
                .header("seen", "now")
                .to_string();
            if body.len() <= room.min(MAX_DIFF_CHARS) {
                format!("CHANGED {head} since you saw it:\n{}", body.trim_end())
            } else {
                let changed = diff
                    .iter_all_changes()
                    .filter(|c| c.tag() != similar::ChangeTag::Equal)
                    .count();
                format!(
                    "CHANGED {head} since you saw it: {changed} lines differ ({} lines now); activate it to see the current version",
                    super::cache_layout::line_count(new)
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_splits_into_its_notices() {
        let a = notice(
            "f1 a.txt",
            &Seen {
                object_hash: "1".into(),
                content: Some("x\n\ny\n".into()),
            },
            Now::Text("x\n\nz\n"),
            MAX_DIFF_CHARS,
        );
        let b = notice("f2 b.txt", &Seen::default(), Now::Gone, MAX_DIFF_CHARS);
        let joined = format!("{a}\n\n{b}");
        assert_eq!(
            parts(&joined).collect::<Vec<_>>(),
            vec![a.as_str(), b.as_str()]
        );
        assert_eq!(parts("FILES +1\nf1 a.txt (3 chars)").count(), 0);
        assert_eq!(names(&b), Some("f2"));
    }

    #[test]
    fn a_small_change_is_a_unified_diff() {
        let seen = Seen {
            object_hash: "a".into(),
            content: Some("one\ntwo\nthree\n".into()),
        };
        let t = notice(
            "f1 a.txt",
            &seen,
            Now::Text("one\nTWO\nthree\n"),
            MAX_DIFF_CHARS,
        );
        assert!(t.starts_with("CHANGED f1 a.txt since you saw it:\n"), "{t}");
        assert!(t.contains("-two\n+TWO"), "{t}");
    }

    #[test]
    fn a_large_change_and_a_deletion_are_one_line() {
        let seen = Seen {
            object_hash: "a".into(),
            content: Some("x\n".repeat(10)),
        };
        let big: String = (0..2000).map(|i| format!("line {i}\n")).collect();
        let t = notice("f1 a.txt", &seen, Now::Text(&big), MAX_DIFF_CHARS);
        assert!(t.contains("lines differ (2001 lines now)"), "{t}");
        assert_eq!(
            notice("f1 a.txt", &seen, Now::Gone, MAX_DIFF_CHARS),
            "CHANGED f1 a.txt: deleted or no longer readable"
        );
    }
}
