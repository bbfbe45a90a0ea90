//! Line-based unified diff (Myers' O(ND) algorithm), no dependency.
//!
//! Common leading and trailing lines are stripped first; the middle is
//! diffed with Myers' greedy algorithm. Its trace costs O(D²) memory, so
//! when the middle differs in more than [`MAX_EDIT_DISTANCE`] lines the
//! whole middle is shown as removed then added (still a correct diff, not a
//! minimal one).

/// Edits beyond which the middle is shown as one replacement.
pub const MAX_EDIT_DISTANCE: usize = 2_000;

/// Lines of context around each hunk (as `diff -u`).
pub const CONTEXT: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Keep,
    Del,
    Add,
}

/// Split into lines, each with its `\n` (the last may lack it: then it
/// differs from the same text with one, and is marked like `diff` does).
fn lines(s: &str) -> Vec<&str> {
    s.split_inclusive('\n').collect()
}

/// The edit script turning `a` into `b`.
fn script(a: &[&str], b: &[&str]) -> Vec<Op> {
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (ma, mb) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
    let mut ops = vec![Op::Keep; prefix];
    ops.extend(myers(ma, mb).unwrap_or_else(|| {
        let mut v = vec![Op::Del; ma.len()];
        v.extend(std::iter::repeat_n(Op::Add, mb.len()));
        v
    }));
    ops.extend(std::iter::repeat_n(Op::Keep, suffix));
    ops
}

/// Myers' greedy shortest edit script; `None` past [`MAX_EDIT_DISTANCE`].
fn myers(a: &[&str], b: &[&str]) -> Option<Vec<Op>> {
    let (n, m) = (a.len() as isize, b.len() as isize);
    if n == 0 || m == 0 {
        let mut v = vec![Op::Del; a.len()];
        v.extend(std::iter::repeat_n(Op::Add, b.len()));
        return Some(v);
    }
    let max = (n + m).min(MAX_EDIT_DISTANCE as isize);
    let off = max + 1;
    let mut v = vec![0isize; (2 * off + 1) as usize];
    // trace[d] = v as it was before step d (only the -d..=d window matters).
    let mut trace: Vec<Vec<isize>> = Vec::new();
    let mut found = None;
    'outer: for d in 0..=max {
        trace.push(v[(off - d) as usize..=(off + d) as usize].to_vec());
        let mut k = -d;
        while k <= d {
            let down = k == -d || (k != d && v[(off + k - 1) as usize] < v[(off + k + 1) as usize]);
            let mut x = if down {
                v[(off + k + 1) as usize]
            } else {
                v[(off + k - 1) as usize] + 1
            };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            v[(off + k) as usize] = x;
            if x >= n && y >= m {
                found = Some(d);
                break 'outer;
            }
            k += 2;
        }
    }
    let d_final = found?;
    // Walk back through the trace.
    let mut ops = Vec::with_capacity((n + m) as usize);
    let (mut x, mut y) = (n, m);
    for d in (1..=d_final).rev() {
        let prev = &trace[d as usize]; // v before step d, window -d..=d
        let at = |k: isize| prev[(k + d) as usize];
        let k = x - y;
        let down = k == -d || (k != d && at(k - 1) < at(k + 1));
        let pk = if down { k + 1 } else { k - 1 };
        let px = at(pk);
        let py = px - pk;
        while x > px + isize::from(!down) && y > py + isize::from(down) {
            ops.push(Op::Keep);
            x -= 1;
            y -= 1;
        }
        ops.push(if down { Op::Add } else { Op::Del });
        x = px;
        y = py;
    }
    while x > 0 && y > 0 {
        ops.push(Op::Keep);
        x -= 1;
        y -= 1;
    }
    ops.reverse();
    Some(ops)
}

/// A unified diff of `old` → `new` with `diff -u` style headers, or an empty
/// string when they are equal.
pub fn unified_diff(old: &str, new: &str, old_label: &str, new_label: &str) -> String {
    if old == new {
        return String::new();
    }
    let (a, b) = (lines(old), lines(new));
    let ops = script(&a, &b);
    // (op, index in a, index in b) for every op.
    let mut rows = Vec::with_capacity(ops.len());
    let (mut i, mut j) = (0usize, 0usize);
    for op in ops {
        rows.push((op, i, j));
        match op {
            Op::Keep => {
                i += 1;
                j += 1;
            }
            Op::Del => i += 1,
            Op::Add => j += 1,
        }
    }
    let mut out = format!("--- {old_label}\n+++ {new_label}\n");
    let changed: Vec<usize> = (0..rows.len()).filter(|&r| rows[r].0 != Op::Keep).collect();
    let mut g = 0;
    while g < changed.len() {
        // Group changes whose context windows touch.
        let start = changed[g].saturating_sub(CONTEXT);
        let mut last = changed[g];
        while g + 1 < changed.len() && changed[g + 1] <= last + 2 * CONTEXT + 1 {
            g += 1;
            last = changed[g];
        }
        g += 1;
        let end = (last + CONTEXT + 1).min(rows.len());
        let hunk = &rows[start..end];
        let old_len = hunk.iter().filter(|r| r.0 != Op::Add).count();
        let new_len = hunk.iter().filter(|r| r.0 != Op::Del).count();
        let (os, ns) = (hunk[0].1, hunk[0].2);
        let range = |s: usize, len: usize| match len {
            0 => format!("{s},0"),
            1 => format!("{}", s + 1),
            _ => format!("{},{len}", s + 1),
        };
        out.push_str(&format!(
            "@@ -{} +{} @@\n",
            range(os, old_len),
            range(ns, new_len)
        ));
        for &(op, ai, bj) in hunk {
            let (mark, line) = match op {
                Op::Keep => (' ', a[ai]),
                Op::Del => ('-', a[ai]),
                Op::Add => ('+', b[bj]),
            };
            out.push(mark);
            out.push_str(line);
            if !line.ends_with('\n') {
                out.push_str("\n\\ No newline at end of file\n");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn huge_rewrites_fall_back_to_one_replacement() {
        let old: String = (0..3_000).map(|i| format!("a{i}\n")).collect();
        let new: String = (0..3_000).map(|i| format!("b{i}\n")).collect();
        let d = unified_diff(&old, &new, "a", "b");
        assert!(d.starts_with("--- a\n+++ b\n@@ -1,3000 +1,3000 @@\n-a0\n"));
        assert_eq!(apply(&old, &d), new);
    }
}
