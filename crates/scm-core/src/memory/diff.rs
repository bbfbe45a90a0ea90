//! Line-based unified diff (`diff -u` format, 3 lines of context,
//! `\ No newline at end of file`), through the `similar` crate that the
//! cache layout's change notices use too.

/// Lines of context around each hunk (as `diff -u`).
pub const CONTEXT: usize = 3;

/// A unified diff of `old` → `new` with `diff -u` style headers, or an empty
/// string when they are equal.
pub fn unified_diff(old: &str, new: &str, old_label: &str, new_label: &str) -> String {
    if old == new {
        return String::new();
    }
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(CONTEXT)
        .header(old_label, new_label)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(s: &str) -> Vec<&str> {
        s.split_inclusive('\n').collect()
    }

    /// Apply a diff produced here back to `old` (hunks in order, exact).
    fn apply(old: &str, diff: &str) -> String {
        let a = lines(old);
        let mut out = String::new();
        let mut ai = 0;
        // Whether the previous diff line was an addition (its text ends
        // with the `\n` that a following marker takes back).
        let mut last_added: Option<usize> = None;
        for line in diff.split_inclusive('\n').skip(2) {
            if let Some(h) = line.strip_prefix("@@ -") {
                let old_range = h.split(' ').next().unwrap();
                let start: usize = old_range.split(',').next().unwrap().parse().unwrap();
                let start = if old_range.ends_with(",0") {
                    start
                } else {
                    start - 1
                };
                while ai < start {
                    out.push_str(a[ai]);
                    ai += 1;
                }
                last_added = None;
            } else if line == "\\ No newline at end of file\n" {
                if last_added.is_some() {
                    assert_eq!(out.pop(), Some('\n'));
                }
            } else {
                let (mark, text) = line.split_at(1);
                last_added = None;
                match mark {
                    " " => {
                        out.push_str(a[ai]);
                        ai += 1;
                    }
                    "-" => ai += 1,
                    "+" => {
                        out.push_str(text);
                        last_added = Some(out.len());
                    }
                    _ => panic!("bad line {line:?}"),
                }
            }
        }
        while ai < a.len() {
            out.push_str(a[ai]);
            ai += 1;
        }
        out
    }

    #[test]
    fn equal_texts_have_no_diff() {
        assert_eq!(unified_diff("a\nb\n", "a\nb\n", "x", "y"), "");
    }

    #[test]
    fn one_changed_line_in_the_middle() {
        let old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
        let new = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n";
        assert_eq!(
            unified_diff(old, new, "a", "b"),
            "--- a\n+++ b\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"
        );
    }

    #[test]
    fn insert_into_empty_and_delete_all() {
        assert_eq!(
            unified_diff("", "x\ny\n", "a", "b"),
            "--- a\n+++ b\n@@ -0,0 +1,2 @@\n+x\n+y\n"
        );
        assert_eq!(
            unified_diff("x\n", "", "a", "b"),
            "--- a\n+++ b\n@@ -1 +0,0 @@\n-x\n"
        );
    }

    #[test]
    fn missing_final_newline_is_marked() {
        let d = unified_diff("a\nb", "a\nb\n", "o", "n");
        assert_eq!(
            d,
            "--- o\n+++ n\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"
        );
    }

    #[test]
    fn far_apart_changes_make_two_hunks() {
        let old: String = (0..40).map(|i| format!("{i}\n")).collect();
        let new: String = (0..40)
            .map(|i| match i {
                5 => "five\n".to_owned(),
                30 => "thirty\n".to_owned(),
                _ => format!("{i}\n"),
            })
            .collect();
        let d = unified_diff(&old, &new, "a", "b");
        assert_eq!(d.matches("@@ -").count(), 2, "{d}");
        assert_eq!(apply(&old, &d), new);
    }

    #[test]
    fn diffs_apply_back_for_many_pairs() {
        // Deterministic pseudo-random edits.
        let mut seed = 42u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize
        };
        for case in 0..300 {
            let n = next() % 30;
            let old: Vec<String> = (0..n).map(|_| format!("l{}", next() % 6)).collect();
            let mut new = old.clone();
            for _ in 0..(next() % 6) {
                match next() % 3 {
                    0 if !new.is_empty() => {
                        let i = next() % new.len();
                        new.remove(i);
                    }
                    1 => {
                        let i = next() % (new.len() + 1);
                        new.insert(i, format!("n{}", next() % 6));
                    }
                    _ if !new.is_empty() => {
                        let i = next() % new.len();
                        new[i] = format!("c{}", next() % 6);
                    }
                    _ => {}
                }
            }
            let join = |v: &[String], eol: bool| {
                let mut s = v.join("\n");
                if eol && !v.is_empty() {
                    s.push('\n');
                }
                s
            };
            let (o, nw) = (join(&old, next() % 4 != 0), join(&new, next() % 4 != 0));
            let d = unified_diff(&o, &nw, "a", "b");
            assert_eq!(apply(&o, &d), nw, "case {case}: {o:?} -> {nw:?}\n{d}");
        }
    }

    #[test]
    fn huge_rewrites_diff_and_apply_back() {
        let old: String = (0..3_000).map(|i| format!("a{i}\n")).collect();
        let new: String = (0..3_000).map(|i| format!("b{i}\n")).collect();
        let d = unified_diff(&old, &new, "a", "b");
        assert!(d.starts_with("--- a\n+++ b\n@@ -1,3000 +1,3000 @@\n-a0\n"));
        assert_eq!(apply(&old, &d), new);
    }
}
