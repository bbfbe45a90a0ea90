//! Refs written as text. The layouts show refs in place of text the model
//! saw before (`[t12 · 40 lines]`, a working copy's `[f3 · 620 lines]`, the
//! spec layout's `toolcall_ref id=…`) and pointers in place of text in view
//! (`[t19: identical to t12 above]`, `[f3 is shown above]`). A model that
//! copies one into what a call writes — a `write` whose content is
//! `[t12 · 40 lines]`, an edit's `newText` — would put the ref in the file
//! in place of the text. This module finds ref-shaped tokens in what a call
//! writes; the session says which of them are refs it showed
//! (`Session::ref_as_text`).

use serde_json::Value;

use super::aliases::Alias;
use super::tool_args::edit_bodies;

/// A ref-shaped token in a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefToken<'a> {
    /// `[t12 · 40 lines]` / `[f3 · 620 lines]` (the cache layout's refs).
    Alias {
        alias: Alias,
        lines: usize,
        text: &'a str,
    },
    /// `toolcall_ref id=…` (the spec layout's stand-in for a result).
    Toolcall { id: &'a str, text: &'a str },
    /// `[t19: identical to t12 above]` / `[t19: identical to FILE f3
    /// above]`: an identical re-read `call` pointing at `to` (a call, or a
    /// working copy of a file).
    Pointer {
        call: Alias,
        to: Alias,
        copy: bool,
        text: &'a str,
    },
    /// `[f3 is shown above]`: an activation or pin of `alias` in view.
    Note { alias: Alias, text: &'a str },
}

impl<'a> RefToken<'a> {
    /// The token as it stands in the text.
    pub fn text(&self) -> &'a str {
        match *self {
            RefToken::Alias { text, .. }
            | RefToken::Toolcall { text, .. }
            | RefToken::Pointer { text, .. }
            | RefToken::Note { text, .. } => text,
        }
    }
}

const TOOLCALL_REF: &str = "toolcall_ref id=";

/// The longest a ref can be (`[t4294967295 · 18446744073709551615 lines]`
/// is 45 bytes, a pointer `[t4294967295: identical to FILE f4294967295
/// above]` 50): what follows a `[` is searched this far only, so a hostile
/// text (a megabyte of `[`) costs one pass, not one per bracket. (The id
/// after `toolcall_ref id=` ends at the next whitespace, and the pattern
/// holds one: those searches never overlap.)
const MAX_REF_BYTES: usize = 64;

/// Every ref-shaped token in `s`: the cache layout's in order, then the
/// spec layout's. (An id runs to the next whitespace, so a quoted one keeps
/// its quote and names nothing: such a token is let through.)
pub fn ref_tokens(s: &str) -> Vec<RefToken<'_>> {
    let mut out = Vec::new();
    for (at, _) in s.match_indices('[') {
        if let Some(t) = alias_ref_at(s, at) {
            out.push(t);
        }
    }
    for (at, _) in s.match_indices(TOOLCALL_REF) {
        let rest = &s[at + TOOLCALL_REF.len()..];
        let len = rest.find(char::is_whitespace).unwrap_or(rest.len());
        if len > 0 {
            out.push(RefToken::Toolcall {
                id: &rest[..len],
                text: &s[at..at + TOOLCALL_REF.len() + len],
            });
        }
    }
    out
}

/// `[t12 · 40 lines]` (or a pointer, `[t19: identical to t12 above]`,
/// `[f3 is shown above]`) starting at byte `at` (a `[`).
fn alias_ref_at(s: &str, at: usize) -> Option<RefToken<'_>> {
    let rest = &s[at + 1..];
    let close = prefix(rest, MAX_REF_BYTES).find(']')?;
    let inner = &rest[..close];
    let text = &s[at..at + close + 2];
    if let Some(alias) = inner.strip_suffix(" is shown above") {
        let alias = Alias::parse(alias)?;
        return Some(RefToken::Note { alias, text });
    }
    if let Some((call, to)) = inner.split_once(": identical to ") {
        let to = to.strip_suffix(" above")?;
        let (to, copy) = match to.strip_prefix("FILE ") {
            Some(f) => (f, true),
            None => (to, false),
        };
        return Some(RefToken::Pointer {
            call: Alias::parse(call)?,
            to: Alias::parse(to)?,
            copy,
            text,
        });
    }
    let (alias, count) = inner.split_once(" · ")?;
    let lines = count.strip_suffix(" lines")?;
    if lines.is_empty() || !lines.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(RefToken::Alias {
        alias: Alias::parse(alias)?,
        lines: lines.parse().ok()?,
        text,
    })
}

/// `s` up to `max` bytes, cut back to a char boundary.
fn prefix(s: &str, max: usize) -> &str {
    let mut end = max.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The texts a call puts in a file, by argument name: a `write`'s
/// `content` and an `edit`'s `newText`s; also its `oldText`s, which pi
/// looks for in the file (a ref there fails to match, with a less useful
/// error than this module's).
pub fn written_texts<'a>(tool: &str, args: &'a Value) -> Vec<(&'static str, &'a str)> {
    let s = |v: &'a Value, k: &'static str| v.get(k).and_then(Value::as_str).map(|t| (k, t));
    match tool {
        "write" => s(args, "content").into_iter().collect(),
        "edit" => edit_bodies(args)
            .flat_map(|e| [s(e, "newText"), s(e, "oldText")])
            .flatten()
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_the_layouts_refs_and_nothing_like_them() {
        let s = "a [t12 · 40 lines] b [f3 · 1 lines][t0 · 2 lines] [t4 · x lines] [t5 · 3 line] \
                 [x1 · 2 lines] toolcall_ref id=abc tool=read status=ok";
        let found: Vec<String> = ref_tokens(s).iter().map(|t| t.text().to_string()).collect();
        assert_eq!(
            found,
            vec!["[t12 · 40 lines]", "[f3 · 1 lines]", "toolcall_ref id=abc"]
        );
        assert_eq!(
            ref_tokens("[t12 · 40 lines]")[0],
            RefToken::Alias {
                alias: Alias::Call(11),
                lines: 40,
                text: "[t12 · 40 lines]"
            }
        );
        assert!(ref_tokens("[[[ · ] lines] toolcall_ref id=").is_empty());
        let pointers = "[t19: identical to t12 above] [t2: identical to FILE f3 above] \
                        [f3 is shown above] [t4 is shown above] [x: identical to t1 above] \
                        [t5: identical to t1] [f0 is shown above]";
        assert_eq!(
            ref_tokens(pointers),
            vec![
                RefToken::Pointer {
                    call: Alias::Call(18),
                    to: Alias::Call(11),
                    copy: false,
                    text: "[t19: identical to t12 above]"
                },
                RefToken::Pointer {
                    call: Alias::Call(1),
                    to: Alias::File(2),
                    copy: true,
                    text: "[t2: identical to FILE f3 above]"
                },
                RefToken::Note {
                    alias: Alias::File(2),
                    text: "[f3 is shown above]"
                },
                RefToken::Note {
                    alias: Alias::Call(3),
                    text: "[t4 is shown above]"
                },
            ]
        );
    }

    /// Each `[` is looked past a bounded distance only: a megabyte of them
    /// is one pass (unbounded: a scan to the end per bracket, quadratic).
    #[test]
    fn a_hostile_text_is_one_pass() {
        assert!(ref_tokens(&"[".repeat(1 << 20)).is_empty());
        let far = format!("[t1 · {}3 lines]", "0".repeat(MAX_REF_BYTES));
        assert!(ref_tokens(&far).is_empty());
        assert_eq!(ref_tokens("[t1 · 3 lines]é[").len(), 1);
    }

    #[test]
    fn a_write_s_content_and_an_edit_s_texts_are_what_it_writes() {
        let edit = json!({"path": "a", "oldText": "o", "newText": "n",
                          "edits": [{"oldText": "o2", "newText": "n2"}]});
        assert_eq!(
            written_texts("edit", &edit),
            vec![
                ("newText", "n"),
                ("oldText", "o"),
                ("newText", "n2"),
                ("oldText", "o2")
            ]
        );
        assert_eq!(
            written_texts("write", &json!({"path": "a", "content": "c"})),
            vec![("content", "c")]
        );
        assert!(written_texts("bash", &json!({"command": "[t1 · 1 lines]"})).is_empty());
    }
}
