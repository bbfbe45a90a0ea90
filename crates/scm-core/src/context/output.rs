//! Incremental output: what changed in the assembled context since the
//! session's previous one, so a binding hands over only that.
//!
//! The cache layout is append-only between epochs: call n+1's context is
//! call n's plus the new messages, byte for byte. [`PreviousOutput::next`]
//! compares the new context (a JSON array) with the previous one byte-wise
//! and says how many leading messages are identical (`keep`); only the rest
//! goes out (`append`, a JSON array). Layout-agnostic: whatever prefix is
//! stable is kept (the spec layout's pool message changes whenever the pool
//! does, so its `keep` is mostly 0 or 1).
//!
//! After the kept prefix, a message byte-identical to one of the previous
//! output's is not sent again either (`reuse`): an epoch rewrites the older
//! messages but leaves the newest ones — often the large tool outputs —
//! as they were, one place further along.
//!
//! `seq` numbers the outputs; the caller says which output it holds
//! (`have`), and `keep` and `reuse` only refer to it when that is the
//! previous one, so a caller that missed an output (a concurrent call, a
//! failed promise) gets everything.

use super::epochs::{units, utf16_len};

/// One output as a delta against the previous one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputDelta {
    /// This output's number (1 for the session's first).
    pub seq: u32,
    /// Leading messages identical to output `seq - 1`.
    pub keep: usize,
    /// The messages after the kept ones that are not reused, as a JSON array.
    pub append: String,
    /// Per message after the kept ones: the index of the identical message
    /// of output `seq - 1`, or -1 for the next one of `append`. None: all
    /// of them are in `append`.
    pub reuse: Option<Vec<i64>>,
    /// Estimated tokens of the whole output: [`message_tokens`] summed.
    pub tokens: u64,
    /// Messages in the output.
    pub messages: usize,
    /// Estimated tokens of the leading messages identical to the previous
    /// output's, whether or not the caller holds it (what a provider's
    /// prompt cache would repeat). None: no previous output.
    pub cached_tokens: Option<u64>,
}

/// The previous output and where its messages end.
#[derive(Debug, Default)]
pub struct PreviousOutput {
    seq: u32,
    json: String,
    /// The output before `json`, kept as a buffer to render the next one into.
    spare: String,
    /// Byte offset of the `,` or `]` after each message of `json`.
    ends: Vec<usize>,
    /// [`message_tokens`] of each message of `json` (kept ones are not
    /// counted again).
    tokens: Vec<u64>,
}

impl PreviousOutput {
    /// The last output as JSON (what the model saw at the last call).
    pub fn last(&self) -> &str {
        &self.json
    }

    /// The number of the last output (0: none yet).
    pub fn seq(&self) -> u32 {
        self.seq
    }

    /// An empty buffer with the capacity of an earlier output, to assemble
    /// the next one into (contexts are ~100 KB–1 MB: a fresh allocation per
    /// call is mmapped and page-faulted in again every time).
    pub fn take_spare(&mut self) -> String {
        let mut s = std::mem::take(&mut self.spare);
        s.clear();
        s
    }

    /// Records `json` (a JSON array without whitespace between elements, as
    /// assembly emits it) as the new output; the delta against the previous
    /// one when the caller holds it (`have == seq`), else everything.
    pub fn next(&mut self, json: String, have: Option<u32>) -> OutputDelta {
        let prev_ok = self.seq > 0 && have == Some(self.seq);
        // A message is identical iff it lies within the common byte prefix:
        // with the same bytes before, it ends at the same place (a complete
        // value is followed by `,` or `]`).
        let same = match self.seq {
            0 => 0,
            _ => {
                let d = common_prefix(self.json.as_bytes(), json.as_bytes());
                self.ends.partition_point(|&e| e <= d)
            }
        };
        let cached_tokens = (self.seq > 0).then(|| self.tokens[..same].iter().sum());
        let keep = if prev_ok { same } else { 0 };
        let prev_ends = std::mem::take(&mut self.ends);
        self.ends.extend_from_slice(&prev_ends[..keep]);
        // The first message not kept starts after the `[` or the kept one's `,`.
        let start = self.ends.last().map_or(1, |&e| e + 1);
        scan_ends(json.as_bytes(), start, &mut self.ends);
        let reuse = if prev_ok && prev_ends.len() > keep && self.ends.len() > keep {
            reused(&self.json, &prev_ends, &json, &self.ends, keep)
        } else {
            None
        };
        // Kept and reused messages have their count already: an epoch counts
        // what it rewrote, not the large outputs it left as they were.
        let prev_tokens = std::mem::take(&mut self.tokens);
        self.tokens.extend_from_slice(&prev_tokens[..keep]);
        for i in keep..self.ends.len() {
            let from = reuse.as_ref().map_or(-1, |r| r[i - keep]);
            self.tokens.push(match usize::try_from(from) {
                Ok(j) => prev_tokens[j],
                Err(_) => message_tokens(message(&json, &self.ends, i)),
            });
        }
        let append = match &reuse {
            _ if start >= json.len() => "[]".to_string(),
            None => {
                let mut s = String::with_capacity(json.len() - start + 1);
                s.push('[');
                s.push_str(&json[start..]);
                s
            }
            Some(from) => {
                let mut s = String::from("[");
                for (k, _) in from.iter().enumerate().filter(|(_, &f)| f < 0) {
                    if s.len() > 1 {
                        s.push(',');
                    }
                    s.push_str(message(&json, &self.ends, keep + k));
                }
                s.push(']');
                s
            }
        };
        self.spare = std::mem::replace(&mut self.json, json);
        self.seq = self.seq.wrapping_add(1).max(1);
        OutputDelta {
            seq: self.seq,
            keep,
            append,
            reuse,
            tokens: self.tokens.iter().sum(),
            messages: self.ends.len(),
            cached_tokens,
        }
    }
}

/// Estimated tokens of one message as JSON: ⌈UTF-16 length / 4⌉, the rule of
/// the cache layout's thresholds and of the session report
/// ([`crate::session::inspect::message_tokens`] on the parsed message).
pub fn message_tokens(json: &str) -> u64 {
    units(utf16_len(json))
}

/// [`message_tokens`] summed over the messages of `json` (a JSON array as
/// assembly emits it).
pub fn context_tokens(json: &str) -> u64 {
    let mut ends = Vec::new();
    scan_ends(json.as_bytes(), 1, &mut ends);
    (0..ends.len())
        .map(|i| message_tokens(message(json, &ends, i)))
        .sum()
}

/// Message `i` of the JSON array `json` whose elements end at `ends`.
fn message<'a>(json: &'a str, ends: &[usize], i: usize) -> &'a str {
    let start = if i == 0 { 1 } else { ends[i - 1] + 1 };
    &json[start..ends[i]]
}

/// For each message of `json` after `keep`: the index of a byte-identical
/// message of `prev` not kept, or -1. None if nothing is reused. Messages
/// under 256 bytes always go again (not worth a lookup on the JS side).
fn reused(
    prev: &str,
    prev_ends: &[usize],
    json: &str,
    ends: &[usize],
    keep: usize,
) -> Option<Vec<i64>> {
    const MIN: usize = 256;
    // Candidates by length: a memcmp only between equal lengths.
    let mut by_len: std::collections::HashMap<usize, Vec<usize>> = Default::default();
    for j in keep..prev_ends.len() {
        let m = message(prev, prev_ends, j);
        if m.len() >= MIN {
            by_len.entry(m.len()).or_default().push(j);
        }
    }
    if by_len.is_empty() {
        return None;
    }
    let mut any = false;
    let from: Vec<i64> = (keep..ends.len())
        .map(|i| {
            let m = message(json, ends, i);
            let hit = by_len
                .get(&m.len())
                .and_then(|js| js.iter().find(|&&j| message(prev, prev_ends, j) == m));
            any |= hit.is_some();
            hit.map_or(-1, |&j| j as i64)
        })
        .collect();
    any.then_some(from)
}

/// Length of the common prefix of `a` and `b` (memcmp in blocks).
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 256;
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + BLOCK <= n && a[i..i + BLOCK] == b[i..i + BLOCK] {
        i += BLOCK;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

/// Appends the end offsets of the top-level elements of the JSON array
/// `json` that start at `start` (the byte after `[` or after a top-level `,`).
fn scan_ends(json: &[u8], start: usize, ends: &mut Vec<usize>) {
    let mut depth = 0usize;
    let mut i = start;
    while i < json.len() {
        match json[i] {
            // Skip the string by jumping between quotes and backslashes
            // (memchr): tool output is mostly long strings.
            b'"' => {
                i += 1;
                loop {
                    match json
                        .get(i..)
                        .and_then(|rest| memchr::memchr2(b'"', b'\\', rest))
                    {
                        Some(k) if json[i + k] == b'\\' => i += k + 2,
                        Some(k) => {
                            i += k;
                            break;
                        }
                        // Unterminated (not what assembly emits): no more ends.
                        None => return,
                    }
                }
            }
            b'[' | b'{' => depth += 1,
            b']' | b'}' if depth > 0 => depth -= 1,
            // The array's own `]`, after a message (not of an empty array).
            b']' if i > start => ends.push(i),
            b',' if depth == 0 => ends.push(i),
            _ => {}
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn apply(prev: &[Value], d: &OutputDelta) -> Vec<Value> {
        let mut out = prev[..d.keep].to_vec();
        let mut append = serde_json::from_str::<Vec<Value>>(&d.append)
            .unwrap()
            .into_iter();
        match &d.reuse {
            None => out.extend(append),
            Some(from) => {
                for &f in from {
                    out.push(if f >= 0 {
                        prev[f as usize].clone()
                    } else {
                        append.next().unwrap()
                    });
                }
                assert!(
                    append.next().is_none(),
                    "append holds exactly the new messages"
                );
            }
        }
        out
    }

    fn check(outputs: &[Value]) {
        let mut t = PreviousOutput::default();
        let mut held: Vec<Value> = Vec::new();
        for (k, o) in outputs.iter().enumerate() {
            let json = serde_json::to_string(o).unwrap();
            let d = t.next(json, (k > 0).then_some(k as u32));
            assert_eq!(d.seq, k as u32 + 1);
            held = apply(&held, &d);
            assert_eq!(&Value::Array(held.clone()), o, "output {k}");
            // Counted for what is new, equal to counting everything.
            let each = |m: &Value| message_tokens(&m.to_string());
            assert_eq!(d.tokens, held.iter().map(each).sum::<u64>(), "{k}");
            assert_eq!(d.tokens, context_tokens(&serde_json::to_string(o).unwrap()));
            assert_eq!(d.messages, held.len());
            // Cached: the leading messages equal to the previous output's.
            let cached = (k > 0).then(|| {
                let prev = outputs[k - 1].as_array().unwrap();
                held.iter()
                    .zip(prev)
                    .take_while(|(a, b)| a == b)
                    .map(|(m, _)| each(m))
                    .sum::<u64>()
            });
            assert_eq!(d.cached_tokens, cached, "{k}");
        }
    }

    #[test]
    fn appends_keep_the_prefix() {
        let a = json!([{"role": "user", "content": "a,b]\"}"}, {"role": "assistant", "content": [{"type": "text", "text": "x"}]}]);
        let b = json!([{"role": "user", "content": "a,b]\"}"}, {"role": "assistant", "content": [{"type": "text", "text": "x"}]}, {"role": "user", "content": "c"}]);
        let mut t = PreviousOutput::default();
        let d1 = t.next(a.to_string(), None);
        assert_eq!((d1.seq, d1.keep), (1, 0));
        let d2 = t.next(b.to_string(), Some(1));
        assert_eq!((d2.seq, d2.keep), (2, 2));
        assert_eq!(d2.append, r#"[{"content":"c","role":"user"}]"#);
        // Same again: everything kept.
        let d3 = t.next(b.to_string(), Some(2));
        assert_eq!((d3.keep, d3.append.as_str()), (3, "[]"));
    }

    #[test]
    fn a_changed_message_and_everything_after_it_go_again() {
        check(&[
            json!([{"a": 1}, {"b": [1, 2]}, {"c": "x"}]),
            json!([{"a": 1}, {"b": [1, 2, 3]}, {"c": "x"}]),
            json!([{"a": 1}, {"b": [1, 2, 3]}, {"c": "x"}, {"d": "\\\""}]),
            json!([{"a": 1}, {"b": [1, 2, 3]}, {"c": "xy"}]),
            json!([{"a": 1}]),
            json!([]),
            json!([{"a": 1}, {"a": 1}]),
            json!([{"a": 12}]),
        ]);
    }

    #[test]
    fn a_prefix_message_that_grows_is_not_kept() {
        let mut t = PreviousOutput::default();
        t.next(r#"[{"a":"x"},{"b":1}]"#.into(), None);
        // `{"b":1` is a byte prefix of `{"b":10`: not the same message.
        let d = t.next(r#"[{"a":"x"},{"b":10}]"#.into(), Some(1));
        assert_eq!((d.keep, d.append.as_str()), (1, r#"[{"b":10}]"#));
    }

    #[test]
    fn message_ends_are_found_past_escapes_and_json_punctuation_in_strings() {
        let tricky = [
            "plain",
            "a,b]c}d{e[f",
            "quote \" inside",
            "backslash at the end \\",
            "\\\"",
            "unicode \u{1F600} é",
            "",
        ];
        let msgs: Vec<Value> = tricky
            .iter()
            .map(|t| json!({"role": "user", "content": [{"type": "text", "text": t}], "n": [1, {"x": t}]}))
            .collect();
        let json = serde_json::to_string(&msgs).unwrap();
        // Where each message ends, from serialising the prefixes.
        let mut expected = Vec::new();
        let mut at = 1;
        for m in &msgs {
            at += serde_json::to_string(m).unwrap().len();
            expected.push(at);
            at += 1;
        }
        let mut ends = Vec::new();
        scan_ends(json.as_bytes(), 1, &mut ends);
        assert_eq!(ends, expected);
        // And with buffer reuse across outputs the deltas stay exact.
        let mut outputs = Vec::new();
        for k in 1..=msgs.len() {
            outputs.push(Value::Array(msgs[..k].to_vec()));
        }
        check(&outputs);
    }

    #[test]
    fn identical_messages_after_a_change_are_reused_not_sent() {
        let big = |tag: &str| json!({"role": "toolResult", "content": [{"type": "text", "text": format!("{tag} {}", "x".repeat(300))}]});
        let a = json!([{"h": 1}, {"old": 1}, big("A"), {"u": 2}, big("B")]);
        // An epoch: the old message collapsed; the large ones stay as they were.
        let b = json!([{"h": 1}, {"old": "ref"}, big("A"), {"u": 2}, big("B"), big("C")]);
        let mut t = PreviousOutput::default();
        t.next(a.to_string(), None);
        let d = t.next(b.to_string(), Some(1));
        assert_eq!(d.keep, 1);
        assert_eq!(
            d.reuse,
            Some(vec![-1, 2, -1, 4, -1]),
            "small and new ones go again"
        );
        let sent: Vec<Value> = serde_json::from_str(&d.append).unwrap();
        assert_eq!(sent, vec![json!({"old": "ref"}), json!({"u": 2}), big("C")]);
        check(&[
            a.clone(),
            b.clone(),
            json!([{"h": 1}, big("B"), big("A"), big("A")]),
            json!([{"h": 2}, big("A")]),
            a,
        ]);
    }

    #[test]
    fn a_caller_without_the_previous_output_gets_everything() {
        let mut t = PreviousOutput::default();
        t.next(r#"[{"a":1}]"#.into(), None);
        t.next(r#"[{"a":1},{"b":2}]"#.into(), Some(1));
        // Holds output 1, not 2.
        let d = t.next(r#"[{"a":1},{"b":2},{"c":3}]"#.into(), Some(1));
        assert_eq!((d.seq, d.keep), (3, 0));
        assert_eq!(d.append, r#"[{"a":1},{"b":2},{"c":3}]"#);
        // What the model was sent still repeats output 2's start.
        let both = message_tokens(r#"{"a":1}"#) + message_tokens(r#"{"b":2}"#);
        assert_eq!(d.cached_tokens, Some(both));
        let d = t.next(r#"[{"a":1},{"b":2},{"c":3}]"#.into(), None);
        assert_eq!(d.keep, 0);
        assert_eq!(d.cached_tokens, Some(d.tokens));
    }
}
