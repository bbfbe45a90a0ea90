//! A tool call that would write a ref this session showed as file text
//! (design §5, "A ref is not file text"): the host asks before it runs the
//! call, and refuses it with [`RefAsText::message`].

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};

use serde::Serialize;
use serde_json::Value;

use super::ops::agent_target;
use super::Session;
use crate::context::aliases::Alias;
use crate::context::cache_layout::line_count;
use crate::context::refs_as_text::{ref_tokens, written_texts, RefToken};
use crate::context::tool_args::{edit_bodies, path_arg};
use crate::context::words;

/// A ref found in what a call writes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RefAsText {
    /// The argument that holds it (`content`, `newText`, `oldText`).
    pub field: &'static str,
    /// The ref as it stands there (`[t12 · 40 lines]`).
    pub token: String,
    /// What `activate` takes to show the text again (`t12`, an id).
    pub target: String,
    /// Why the call is not run, for the model (the tool result).
    pub message: String,
}

impl RefAsText {
    /// The code a host reports it with.
    pub const CODE: &'static str = "REF_AS_TEXT";
}

/// Files larger than this are not read to see whether they hold the ref
/// already: the call is let through.
const MAX_FILE_BYTES: u64 = 16 << 20;

impl Session {
    /// The first ref this session showed that `tool` would write with
    /// `args` (`write` content, `edit` texts), unless the file holds that
    /// text already (a document about refs). None: the call may run.
    ///
    /// A ref counts as shown when it names one of this session's tool calls
    /// or files with a line count that call's result or bodies, or that
    /// file's text, have: a document that merely mentions `[t3 · 12 lines]`
    /// is not refused for it.
    pub fn ref_as_text(&self, tool: &str, args: &Value) -> Option<RefAsText> {
        // Each alias's line counts, each token and the file's refs are worked
        // out once: a hostile write repeating refs costs one pass.
        let mut counts: HashMap<Alias, Vec<usize>> = HashMap::new();
        let mut seen: HashSet<&str> = HashSet::new();
        let mut file: Option<FileNow> = None;
        for (field, text) in written_texts(tool, args) {
            for token in ref_tokens(text) {
                if !seen.insert(token.text()) {
                    continue;
                }
                let Some(target) = self.showed(&token, &mut counts) else {
                    continue;
                };
                let holds = match file.get_or_insert_with(|| self.file_now(args)) {
                    FileNow::Refs(refs) => refs.contains(token.text()),
                    FileNow::Missing => false,
                    FileNow::TooLarge => true,
                };
                if holds {
                    continue;
                }
                return Some(RefAsText {
                    field,
                    token: token.text().to_string(),
                    message: words::ref_as_text(field, token.text(), &target),
                    target,
                });
            }
        }
        None
    }

    /// What `activate` takes for a ref this session showed; None when it
    /// names nothing of this session (or a call or file with no such line
    /// count).
    fn showed(
        &self,
        token: &RefToken<'_>,
        counts: &mut HashMap<Alias, Vec<usize>>,
    ) -> Option<String> {
        match *token {
            RefToken::Alias { alias, lines, .. } => {
                let shown = match counts.entry(alias) {
                    Entry::Occupied(e) => e.into_mut(),
                    Entry::Vacant(e) => e.insert(self.line_counts(alias)),
                };
                shown.contains(&lines).then(|| alias.text())
            }
            RefToken::Pointer { call, to, copy, .. } => {
                self.showed_pointer(call, to, copy).then(|| call.text())
            }
            RefToken::Note { alias, .. } => {
                let id = self.cache.aliases.resolve(alias).ok()?;
                let noted = self
                    .cache
                    .state
                    .calls
                    .iter()
                    .any(|c| c.has_result && c.shows.iter().any(|s| s.note && s.id == id));
                noted.then(|| alias.text())
            }
            RefToken::Toolcall { id, .. } => {
                let known = self.objects.get(id)?;
                (known.object_type() == Some(crate::model::ObjectType::Toolcall))
                    .then(|| id.to_string())
            }
        }
    }

    /// Whether read `call` was shown as identical to `to` above: a re-read
    /// of the file call `to` names (a fold's `PINNED` block points by text,
    /// so any call on that file before it), or of the working copy of file
    /// `to` (`copy`) that it pointed at.
    fn showed_pointer(&self, call: Alias, to: Alias, copy: bool) -> bool {
        let calls = &self.cache.state.calls;
        let Alias::Call(k) = call else {
            return false;
        };
        let Some(c) = calls.get(k as usize).filter(|c| c.tool == "read") else {
            return false;
        };
        match (to, copy) {
            (Alias::File(f), true) => c.dedupe_copy.is_some() && c.file == Some(f),
            (Alias::Call(j), false) => {
                j < k
                    && (c.dedupe_of == Some(j)
                        || calls
                            .get(j as usize)
                            .is_some_and(|o| o.file.is_some() && o.file == c.file))
            }
            _ => false,
        }
    }

    /// The line counts a ref of `alias` can show: a call's result and
    /// bodies (`oldText`, `newText`, `content`, `command`), a file's text.
    /// Empty when the alias names nothing of this session.
    fn line_counts(&self, alias: Alias) -> Vec<usize> {
        let doc = (self.cache.aliases.resolve(alias).ok())
            .and_then(|id| self.objects.get(id))
            .map(|k| &k.doc);
        let Some(doc) = doc else {
            return Vec::new();
        };
        let content = doc.get("content").and_then(Value::as_str);
        let args = match alias {
            Alias::Call(_) => doc.get("args").unwrap_or(&Value::Null),
            Alias::File(_) => &Value::Null,
        };
        let bodies = edit_bodies(args)
            .flat_map(|e| [e.get("oldText"), e.get("newText")])
            .chain(["content", "command"].map(|k| args.get(k)))
            .flatten()
            .filter_map(Value::as_str);
        content.into_iter().chain(bodies).map(line_count).collect()
    }

    /// The file a call names, as it is on disk now: the refs it holds.
    fn file_now(&self, args: &Value) -> FileNow {
        let Some(path) = path_arg(args) else {
            return FileNow::Missing;
        };
        let host = self.resolver().resolve(&agent_target(path)).ok();
        let Some(host) = host.and_then(|r| r.host_path) else {
            return FileNow::Missing;
        };
        match std::fs::metadata(&host) {
            Ok(m) if m.len() > MAX_FILE_BYTES => FileNow::TooLarge,
            _ => match std::fs::read(&host) {
                Ok(bytes) => {
                    let text = String::from_utf8_lossy(&bytes);
                    let refs = ref_tokens(&text)
                        .iter()
                        .map(|t| t.text().to_string())
                        .collect();
                    FileNow::Refs(refs)
                }
                Err(_) => FileNow::Missing,
            },
        }
    }
}

/// The file a call writes, before the call.
enum FileNow {
    /// The ref-shaped tokens it holds.
    Refs(HashSet<String>),
    /// Not there yet, or not readable: it holds no ref.
    Missing,
    /// Not looked through: it may hold the ref.
    TooLarge,
}
