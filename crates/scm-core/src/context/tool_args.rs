//! What pi's tool-call arguments hold, read in one place: the file a call
//! names, and an edit's `oldText` / `newText` pairs.

use serde_json::Value;

/// The path a read / write / edit / ls call names (`path`, or the older
/// tools' `file_path`).
pub fn path_arg(args: &Value) -> Option<&str> {
    args.get("path")
        .or_else(|| args.get("file_path"))
        .and_then(Value::as_str)
}

/// `text` with an edit's pairs applied as pi applies them: each `oldText`
/// must occur exactly once. None when one does not (pi refuses such an
/// edit; its fuzzy fallback is not followed here).
pub fn apply_edit(text: &str, args: &Value) -> Option<String> {
    let mut text = text.to_string();
    for e in edit_bodies(args) {
        let old = e.get("oldText")?.as_str()?;
        let new = e.get("newText")?.as_str()?;
        if old.is_empty() || text.matches(old).count() != 1 {
            return None;
        }
        text = text.replacen(old, new, 1);
    }
    Some(text)
}

/// The parts of pi's `edit` arguments that each hold an `oldText` /
/// `newText` pair: the arguments themselves (the older tool's top-level
/// pair) and every element of `edits` (the newer tool's list).
pub fn edit_bodies(args: &Value) -> impl Iterator<Item = &Value> {
    std::iter::once(args)
        .filter(|a| a.get("oldText").is_some() || a.get("newText").is_some())
        .chain(
            args.get("edits")
                .and_then(Value::as_array)
                .into_iter()
                .flatten(),
        )
}

/// The file a call reads: a `read`'s path (a part of the file with
/// `offset`/`limit`), or the file a `bash` command only prints
/// ([`shell_read`](super::shell_read::shell_read)). Everywhere a read is
/// treated as one (what the layout keeps and points at, a withheld file's
/// note), this is what counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOf {
    pub path: String,
    /// Shows part of the file (a slice, numbered lines), not its text.
    pub ranged: bool,
    /// Every line of the file numbered ([`ShellRead::numbered`](super::shell_read::ShellRead::numbered)):
    /// ranged, as its output is not the text, but whole.
    pub numbered: bool,
}

pub fn read_of(tool: &str, args: &Value) -> Option<ReadOf> {
    match tool {
        "read" => Some(ReadOf {
            path: path_arg(args)?.to_string(),
            ranged: ["offset", "limit"]
                .iter()
                .any(|k| args.get(*k).is_some_and(|v| !v.is_null())),
            numbered: false,
        }),
        "bash" => {
            let r = super::shell_read::shell_read(args.get("command")?.as_str()?)?;
            Some(ReadOf {
                path: r.path,
                ranged: !r.whole,
                numbered: r.numbered,
            })
        }
        _ => None,
    }
}
