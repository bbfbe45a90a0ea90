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

/// Whether a whole `read`'s output is not the file's text because pi cut
/// it short: past its line or byte limit it ends with `[Showing lines 1-N
/// of M. Use offset=N+1 to continue.]`; a first line over the byte limit
/// is one bracketed line, `[Line 1 is …, exceeds … limit. …]`.
pub fn cut_short(output: &str) -> bool {
    let last = output.rsplit("\n\n").next().unwrap_or(output);
    (last.starts_with("[Showing lines ") && last.ends_with(']'))
        || (output.starts_with("[Line 1 is ")
            && output.contains("exceeds")
            && !output.contains('\n'))
}

/// The lines of `text` an edit could quote and the model find again:
/// trimmed, 8 chars or more (the replay instrument's anchor lines,
/// docs/notes/replay.md).
pub fn quotable_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().map(str::trim).filter(|l| is_quotable(l))
}

fn is_quotable(trimmed: &str) -> bool {
    trimmed.chars().count() >= 8
}

/// Whether a successful edit's `oldText`s may show as refs from the start
/// (`ToolCallState::old_ref`): for every pair,
/// - the text it replaced is gone from the file: no line it removed (a
///   [quotable](quotable_lines) one the `newText` lacks) is still in
///   `after`, the file's text after the edit, when known;
/// - the model can still tell where the `newText` went: it begins or ends
///   with the line the `oldText` began or ended with, a quotable one (a
///   lone `}` places nothing), and the ref gives the number of lines
///   replaced.
pub fn replaced_text_gone(args: &Value, after: Option<&str>) -> bool {
    use std::collections::HashSet;
    /// First and last non-blank line, trimmed.
    fn ends(t: &str) -> (Option<&str>, Option<&str>) {
        let mut lines = t.lines().map(str::trim).filter(|l| !l.is_empty());
        let first = lines.next();
        (first, lines.next_back().or(first))
    }
    let Some(after) = after.map(|t| quotable_lines(t).collect::<HashSet<_>>()) else {
        return false;
    };
    let mut pairs = 0;
    for e in edit_bodies(args) {
        let (Some(old), Some(new)) = (
            e.get("oldText").and_then(Value::as_str),
            e.get("newText").and_then(Value::as_str),
        ) else {
            return false;
        };
        pairs += 1;
        let ((of, ol), (nf, nl)) = (ends(old), ends(new));
        let placed = |o: Option<&str>, n| o.is_some_and(is_quotable) && o == n;
        if !placed(of, nf) && !placed(ol, nl) {
            return false;
        }
        let kept: HashSet<&str> = quotable_lines(new).collect();
        if quotable_lines(old).any(|l| !kept.contains(l) && after.contains(l)) {
            return false;
        }
    }
    pairs > 0
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const AFTER: &str =
        "fn main() {\n    let greeting = \"bye\";\n    println!(\"{greeting}\");\n}\n";

    #[test]
    fn a_read_pi_cut_short_is_not_the_file_s_text() {
        // pi 0.73 and 1.x word these alike (dist/core/tools/read.js).
        assert!(cut_short(
            "a\nb\n\n[Showing lines 1-2000 of 5000. Use offset=2001 to continue.]"
        ));
        assert!(cut_short(
            "a\n\n[Showing lines 1-1200 of 1500 (50.0KB limit). Use offset=1201 to continue.]"
        ));
        assert!(cut_short("[Line 1 is 61.2KB, exceeds 50.0KB limit. Use bash: sed -n '1p' a.min.js | head -c 51200]"));
        assert!(!cut_short("a\nb\n"));
        assert!(!cut_short("see [Showing lines 1-2] below\n"));
        assert!(!cut_short(""));
    }

    #[test]
    fn the_replaced_text_is_gone_when_a_quotable_end_line_is_kept_and_no_removed_line_remains() {
        let kept_last = json!({"oldText": "    let greeting = \"hi\";\n    println!(\"{greeting}\");",
            "newText": "    let greeting = \"bye\";\n    println!(\"{greeting}\");"});
        assert!(replaced_text_gone(&kept_last, Some(AFTER)));
        // Not known after the edit, or no pair at all: it stays.
        assert!(!replaced_text_gone(&kept_last, None));
        assert!(!replaced_text_gone(&json!({"path": "a.rs"}), Some(AFTER)));
        // The kept end line must place the text: a lone `}` does not.
        let brace = json!({"oldText": "    let greeting = \"hi\";\n}", "newText": "    let greeting = \"bye\";\n}"});
        assert!(!replaced_text_gone(&brace, Some(AFTER)));
        // Every pair of the newer tool's list counts: one unplaceable pair keeps them all.
        let list = json!({"edits": [kept_last.clone(), {"oldText": "    let a = 1;", "newText": "    let b = 2;"}]});
        assert!(!replaced_text_gone(&list, Some(AFTER)));
        let list = json!({"edits": [kept_last]});
        assert!(replaced_text_gone(&list, Some(AFTER)));
    }
}
