//! Event ingest: which harness messages are new (memory-system-v0 §22.2).
//!
//! The harness hands the whole transcript on every call. We keep a
//! fingerprint per consumed message, the cursor (how many messages of the last
//! array were consumed) and the fingerprint of the last consumed message.
//!
//! - **Fast path** (the array grew): `messages.len() >= cursor`, the
//!   message at `cursor - 1` has the remembered fingerprint and the first
//!   message the remembered head (role, timestamp, toolCallId: a compaction
//!   that summarised only the first message keeps the length and the last
//!   message) → the new messages are `messages[cursor..]`.
//! - **Replaced array** (compaction, branch switch, resume, fork): ingest, in
//!   order, exactly the messages whose fingerprint was never consumed —
//!   counted as a multiset, so a message that legitimately occurs twice is
//!   ingested twice — and move the cursor to the end. Nothing new is lost and
//!   nothing consumed is ingested again. A replaced array with nothing new
//!   (an older view, e.g. a late `agent_end` on pi 0.73) leaves the cursor
//!   where it is.
//!
//! The fingerprints are persisted in the chat object, so a resumed session
//! (new process, full array) re-ingests nothing.

use std::collections::HashMap;

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::model::hashing::sha256_hex;
use crate::model::stable_json::write_value;

/// SHA-256 of the stable JSON of `{content, role, timestamp, toolCallId}`,
/// content normalised (a string becomes one text part) so a harness that
/// switches between the two forms does not make a message look new.
pub fn fingerprint(msg: &Value) -> String {
    if let Some(fp) = consumed_stand_in(msg) {
        return fp.to_string();
    }
    let mut s = String::with_capacity(256);
    s.push_str("{\"content\":");
    match msg.get("content") {
        Some(Value::String(t)) => write_value(&mut s, &json!([{"type": "text", "text": t}])),
        Some(v) => write_value(&mut s, v),
        None => s.push_str("null"),
    }
    write_head_fields(&mut s, msg);
    s.push('}');
    sha256_hex(s.as_bytes())
}

/// `,"role":…,"timestamp":…,"toolCallId":…` of `msg` (null where absent).
fn write_head_fields(s: &mut String, msg: &Value) {
    for (label, k) in [
        (",\"role\":", "role"),
        (",\"timestamp\":", "timestamp"),
        (",\"toolCallId\":", "toolCallId"),
    ] {
        s.push_str(label);
        match msg.get(k) {
            Some(v) => write_value(s, v),
            None => s.push_str("null"),
        }
    }
}

/// The first message's head: the stable JSON of its role, timestamp and
/// toolCallId, without its content (cheap for a caller to send each call,
/// however long the first prompt). Messages once handed over are immutable;
/// the head tells a message put in the first one's place.
pub fn head(msg: &Value) -> String {
    let mut s = String::with_capacity(64);
    write_head_fields(&mut s, msg);
    s.replace_range(..1, "{");
    s.push('}');
    s
}

/// Key of a stand-in for a message the engine consumed before:
/// `{"scm:fp": <its fingerprint>}`. A caller that knows which of its
/// message objects were consumed (the JS facade, from the fingerprints each
/// call returns) sends these instead of the messages when it hands over a
/// replaced array, so they are neither serialised nor hashed again.
pub const STAND_IN_KEY: &str = "scm:fp";

/// The fingerprint a stand-in carries (None: a real message).
pub fn consumed_stand_in(msg: &Value) -> Option<&str> {
    let o = msg.as_object().filter(|o| o.len() == 1)?;
    o.get(STAND_IN_KEY)?.as_str()
}

/// What a harness message is, for ingest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageKind {
    User,
    Assistant,
    ToolResult,
    /// Carries the system prompt (pi 1.x `context_with_system`).
    System,
    /// bashExecution, custom, compactionSummary, branchSummary, unknown roles:
    /// recorded as skipped, never rendered.
    Skipped,
}

fn invalid(index: usize, reason: impl Into<String>) -> Error {
    Error::InvalidMessage {
        index,
        reason: reason.into(),
    }
}

fn check_parts(index: usize, parts: &[Value], what: &str) -> Result<()> {
    for (i, p) in parts.iter().enumerate() {
        if !p.get("type").is_some_and(Value::is_string) {
            return Err(invalid(
                index,
                format!("{what} part {i} is not an object with a string `type`"),
            ));
        }
    }
    Ok(())
}

/// Validates one message and says what kind it is. Never mutates anything.
pub fn classify(index: usize, msg: &Value) -> Result<MessageKind> {
    let Some(obj) = msg.as_object() else {
        return Err(invalid(index, "not an object"));
    };
    let Some(role) = obj.get("role").and_then(Value::as_str) else {
        return Err(invalid(index, "missing or non-string `role`"));
    };
    let content = obj.get("content");
    let string_or_parts = |what: &str| -> Result<()> {
        match content {
            Some(Value::String(_)) => Ok(()),
            Some(Value::Array(parts)) => check_parts(index, parts, what),
            _ => Err(invalid(
                index,
                format!("{what} `content` must be a string or an array of content parts"),
            )),
        }
    };
    Ok(match role {
        "user" => {
            string_or_parts("user")?;
            MessageKind::User
        }
        "system" => {
            string_or_parts("system")?;
            MessageKind::System
        }
        "assistant" => {
            let Some(Value::Array(parts)) = content else {
                return Err(invalid(
                    index,
                    "assistant `content` must be an array of content parts",
                ));
            };
            check_parts(index, parts, "assistant")?;
            for (i, p) in parts.iter().enumerate() {
                if p["type"] == "toolCall"
                    && !(p.get("id").is_some_and(Value::is_string)
                        && p.get("name").is_some_and(Value::is_string))
                {
                    return Err(invalid(
                        index,
                        format!("assistant toolCall part {i} needs string `id` and `name`"),
                    ));
                }
            }
            MessageKind::Assistant
        }
        "toolResult" => {
            if obj
                .get("toolCallId")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                return Err(invalid(
                    index,
                    "toolResult without a non-empty string `toolCallId`",
                ));
            }
            string_or_parts("toolResult")?;
            if obj
                .get("isError")
                .is_some_and(|v| !v.is_boolean() && !v.is_null())
            {
                return Err(invalid(index, "toolResult `isError` must be a boolean"));
            }
            MessageKind::ToolResult
        }
        _ => MessageKind::Skipped,
    })
}

/// The new messages of one call: (index in the array, fingerprint).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    pub new: Vec<(usize, String)>,
    /// True when the array did not extend the consumed one.
    pub replaced: bool,
    /// Fingerprint of the array's last message (None for an empty array).
    pub last_fp: Option<String>,
    /// [`head`] of the array's first message (None for an empty array).
    pub first_head: Option<String>,
    pub len: usize,
}

/// Cursor state: consumed fingerprints (multiset), cursor, last fingerprint,
/// first message's head.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cursor {
    pub consumed: usize,
    pub last_fp: Option<String>,
    /// None in a chat stored before it was kept: not checked.
    pub first_head: Option<String>,
    pub seen: HashMap<String, u32>,
}

impl Cursor {
    /// Which messages are new. Pure: `commit` applies it.
    pub fn select(&self, messages: &[Value]) -> Selection {
        let c = self.consumed;
        let fast = if c == 0 {
            self.seen.is_empty()
        } else {
            messages.len() >= c
                && self.first_is(&messages[0])
                && self.last_fp.as_deref() == Some(&*fingerprint(&messages[c - 1]))
        };
        let first_head = messages.first().map(head);
        if fast {
            let new: Vec<(usize, String)> = (c..messages.len())
                .map(|i| (i, fingerprint(&messages[i])))
                .collect();
            let last_fp = match new.last() {
                Some((_, fp)) => Some(fp.clone()),
                None => self.last_fp.clone().filter(|_| !messages.is_empty()),
            };
            return Selection {
                new,
                replaced: false,
                last_fp,
                first_head,
                len: messages.len(),
            };
        }
        let mut occurrences: HashMap<String, u32> = HashMap::new();
        let mut new = Vec::new();
        let mut last_fp = None;
        for (i, m) in messages.iter().enumerate() {
            let fp = fingerprint(m);
            let n = occurrences.entry(fp.clone()).or_default();
            *n += 1;
            if *n > self.seen.get(&fp).copied().unwrap_or(0) {
                new.push((i, fp.clone()));
            }
            last_fp = Some(fp);
        }
        Selection {
            new,
            replaced: true,
            last_fp,
            first_head,
            len: messages.len(),
        }
    }

    /// Whether `m` has the head the first consumed message had (a chat
    /// stored before heads were kept: assumed).
    fn first_is(&self, m: &Value) -> bool {
        self.first_head.as_ref().is_none_or(|h| *h == head(m))
    }

    /// The fast path from a window of the array: `tail` is
    /// `messages[offset..total]`, in one of two forms:
    /// - `offset = consumed − 1`: it starts with the last consumed message,
    ///   which is checked by fingerprint, and `first` is the array's first
    ///   message (its [`head`] is all that is read: the caller may send only
    ///   role, timestamp and toolCallId), checked by head;
    /// - `offset = consumed`: only the new messages; the caller vouches that
    ///   the array continues what was consumed (the JS facade holds the
    ///   consumed messages' objects and checks their identity, so a large
    ///   last message is not serialised, sent and hashed again each call).
    ///
    /// None when the window does not continue what was consumed: the
    /// caller then hands over the whole array (see [`Cursor::select`]).
    pub fn select_tail(
        &self,
        total: usize,
        offset: usize,
        tail: &[Value],
        first: Option<&Value>,
    ) -> Option<Selection> {
        if self.consumed == 0 || offset + tail.len() != total {
            return None;
        }
        let new = if offset == self.consumed {
            tail
        } else if offset + 1 == self.consumed {
            let last = tail.first()?;
            let first = if offset == 0 { last } else { first? };
            if !self.first_is(first) || self.last_fp.as_deref() != Some(&*fingerprint(last)) {
                return None;
            }
            &tail[1..]
        } else {
            return None;
        };
        let new: Vec<(usize, String)> = new
            .iter()
            .enumerate()
            .map(|(k, m)| (self.consumed + k, fingerprint(m)))
            .collect();
        let last_fp = new
            .last()
            .map_or_else(|| self.last_fp.clone(), |(_, fp)| Some(fp.clone()));
        Some(Selection {
            new,
            replaced: false,
            last_fp,
            first_head: self.first_head.clone(),
            len: total,
        })
    }

    /// Marks the selection consumed and moves the cursor to the array's end;
    /// a replaced array that brings nothing new leaves it where it is.
    /// Such an array is an older or partial view of what was consumed (pi
    /// 0.73 runs `agent_end` handlers behind its agent loop, so the branch
    /// they see can be a prefix of what the `context` hook already handed
    /// over): moving the cursor back to its end would make the next array's
    /// fast path ingest everything after that prefix again. The next array is
    /// still checked by fingerprint at the cursor, so a real branch switch
    /// goes the replaced way with its new messages.
    pub fn commit(&mut self, sel: &Selection) {
        if sel.replaced && sel.new.is_empty() {
            return;
        }
        for (_, fp) in &sel.new {
            *self.seen.entry(fp.clone()).or_default() += 1;
        }
        self.consumed = sel.len;
        self.last_fp = sel.last_fp.clone();
        if sel.first_head.is_some() {
            self.first_head = sel.first_head.clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(text: &str, ts: i64) -> Value {
        json!({"role": "user", "content": text, "timestamp": ts})
    }

    #[test]
    fn fingerprints_are_the_stable_json_of_the_four_fields() {
        // As first written (the cursor's persisted fingerprints must not change).
        fn by_parts(msg: &Value) -> String {
            use crate::model::stable_json::stable_stringify;
            let field = |k: &str| msg.get(k).map_or("null".to_string(), stable_stringify);
            let content = match msg.get("content") {
                Some(Value::String(s)) => stable_stringify(&json!([{"type": "text", "text": s}])),
                Some(v) => stable_stringify(v),
                None => "null".to_string(),
            };
            sha256_hex(
                format!(
                    "{{\"content\":{content},\"role\":{},\"timestamp\":{},\"toolCallId\":{}}}",
                    field("role"),
                    field("timestamp"),
                    field("toolCallId")
                )
                .as_bytes(),
            )
        }
        for m in [
            user("hi \"there\"\n", 1),
            json!({"role": "toolResult", "toolCallId": "t1", "content": [{"type": "text", "text": "x\ty"}], "timestamp": 2, "isError": false}),
            json!({"role": "assistant", "content": [{"type": "toolCall", "id": "a", "arguments": {"b": 1, "a": [null]}}]}),
            json!({"role": "custom"}),
        ] {
            assert_eq!(fingerprint(&m), by_parts(&m), "{m}");
        }
    }

    #[test]
    fn string_and_single_text_part_fingerprint_alike() {
        let a = user("hi", 1);
        let b =
            json!({"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1});
        assert_eq!(fingerprint(&a), fingerprint(&b));
        assert_ne!(fingerprint(&a), fingerprint(&user("hi", 2)));
    }

    #[test]
    fn fast_path_then_replaced_array() {
        let mut c = Cursor::default();
        let msgs = vec![user("a", 1), user("b", 2)];
        let s = c.select(&msgs);
        assert!(!s.replaced);
        assert_eq!(s.new.len(), 2);
        c.commit(&s);
        let mut more = msgs.clone();
        more.push(user("c", 3));
        let s = c.select(&more);
        assert_eq!(s.new.iter().map(|x| x.0).collect::<Vec<_>>(), vec![2]);
        c.commit(&s);
        // Compaction: summary + kept tail + new prompt.
        let compacted = vec![
            json!({"role": "compactionSummary", "summary": "…", "timestamp": 9}),
            user("c", 3),
            user("d", 4),
        ];
        let s = c.select(&compacted);
        assert!(s.replaced);
        assert_eq!(s.new.iter().map(|x| x.0).collect::<Vec<_>>(), vec![0, 2]);
    }

    #[test]
    fn a_tail_window_is_the_fast_path_or_nothing() {
        let mut c = Cursor::default();
        let msgs = vec![user("a", 1), user("b", 2)];
        assert_eq!(
            c.select_tail(2, 0, &msgs, None),
            None,
            "nothing consumed yet"
        );
        let s = c.select(&msgs);
        c.commit(&s);
        let mut more = msgs.clone();
        more.push(user("c", 3));
        let first = Some(&msgs[0]);
        let s = c.select_tail(3, 1, &more[1..], first).unwrap();
        assert_eq!(s, c.select(&more));
        assert_eq!(c.select_tail(3, 0, &more, None), None, "wrong offset");
        assert_eq!(
            c.select_tail(3, 1, &[user("x", 9), user("c", 3)], first),
            None,
            "another array"
        );
        assert_eq!(
            c.select_tail(2, 1, &more[1..2], first).unwrap().new,
            vec![],
            "nothing new"
        );
        // Only the new messages, from the cursor on.
        assert_eq!(
            c.select_tail(3, 2, &more[2..], None).unwrap(),
            c.select(&more)
        );
        assert_eq!(
            c.select_tail(2, 2, &[], None).unwrap().new,
            vec![],
            "nothing new"
        );
        assert_eq!(
            c.select_tail(4, 3, &more[2..], None),
            None,
            "past the cursor"
        );
        assert_eq!(c.select_tail(4, 2, &more[2..], None), None, "wrong total");
    }

    /// A compaction that summarises only the first message (pi: a long first
    /// turn cut right after its prompt) leaves the array as long as before,
    /// its last message the last one consumed: the fast path's check at the
    /// cursor holds, and the summary was never read. The first message is
    /// checked too.
    #[test]
    fn a_compaction_of_the_first_message_alone_is_a_replaced_array() {
        let mut c = Cursor::default();
        let msgs = vec![user("a", 1), user("b", 2), user("c", 3)];
        let s = c.select(&msgs);
        c.commit(&s);
        let mut compacted = msgs.clone();
        compacted[0] = json!({"role": "compactionSummary", "summary": "…", "timestamp": 9});
        let s = c.select(&compacted);
        assert!(s.replaced);
        assert_eq!(s.new.iter().map(|x| x.0).collect::<Vec<_>>(), vec![0]);
        // From a window at the last consumed message, given the first's head.
        let head_of = |m: &Value| json!({"role": m["role"], "timestamp": m["timestamp"]});
        assert_eq!(
            c.select_tail(3, 2, &compacted[2..], Some(&head_of(&compacted[0]))),
            None,
            "another first message"
        );
        assert_eq!(
            c.select_tail(3, 2, &compacted[2..], None),
            None,
            "no first message"
        );
        let s = c
            .select_tail(3, 2, &msgs[2..], Some(&head_of(&msgs[0])))
            .unwrap();
        assert_eq!(s, c.select(&msgs));
        // The caller that vouches for the whole array (from the cursor on) needs none.
        assert_eq!(c.select_tail(3, 3, &[], None).unwrap(), c.select(&msgs));
        c.commit(&c.select(&compacted));
        assert_eq!(c.select(&compacted).new, vec![]);
        let s = c.select_tail(3, 2, &compacted[2..], Some(&head_of(&compacted[0])));
        assert_eq!(s.unwrap().new, vec![]);
    }

    #[test]
    fn a_stand_in_selects_as_the_message_it_stands_for() {
        let mut c = Cursor::default();
        let msgs = vec![user("a", 1), user("b", 2), user("c", 3)];
        let s = c.select(&msgs);
        c.commit(&s);
        let stand_in = |m: &Value| json!({ STAND_IN_KEY: fingerprint(m) });
        let replaced = vec![
            user("summary", 0),
            msgs[1].clone(),
            msgs[2].clone(),
            user("d", 4),
        ];
        let with_stand_ins = vec![
            replaced[0].clone(),
            stand_in(&msgs[1]),
            stand_in(&msgs[2]),
            replaced[3].clone(),
        ];
        assert_eq!(c.select(&with_stand_ins), c.select(&replaced));
        assert_eq!(
            consumed_stand_in(&with_stand_ins[1]),
            Some(&*fingerprint(&msgs[1]))
        );
        // A message that merely has the key among others is a message.
        assert_eq!(
            consumed_stand_in(&json!({ STAND_IN_KEY: "x", "role": "user" })),
            None
        );
    }

    #[test]
    fn a_stale_prefix_with_nothing_new_leaves_the_cursor() {
        // pi 0.73 runs extension handlers behind its agent loop: the branch a
        // late `agent_end` hands over can be a prefix of what the `context`
        // hook already consumed. It brings nothing new and must not move the
        // cursor back, or the next array's fast path ingests the messages
        // after the prefix a second time.
        let mut c = Cursor::default();
        let msgs: Vec<Value> = (0..8).map(|i| user(&format!("m{i}"), i)).collect();
        let s = c.select(&msgs);
        c.commit(&s);
        let stale = c.select(&msgs[..4]);
        assert!(stale.replaced && stale.new.is_empty());
        c.commit(&stale);
        assert_eq!(
            (c.consumed, c.last_fp.clone()),
            (8, Some(fingerprint(&msgs[7])))
        );
        let mut next = msgs.clone();
        next.push(user("m8", 8));
        let s = c.select(&next);
        assert_eq!(s.new.iter().map(|x| x.0).collect::<Vec<_>>(), vec![8]);
        assert!(!s.replaced);
        // A branch left back there still goes by fingerprint: only its new message.
        c.commit(&s);
        let mut branch = msgs[..4].to_vec();
        branch.push(user("other", 20));
        let s = c.select(&branch);
        assert_eq!(s.new.iter().map(|x| x.0).collect::<Vec<_>>(), vec![4]);
    }

    #[test]
    fn duplicates_count_as_a_multiset() {
        let mut c = Cursor::default();
        let s = c.select(&[user("x", 1)]);
        c.commit(&s);
        let s = c.select(&[user("y", 0), user("x", 1), user("x", 1)]);
        assert_eq!(s.new.iter().map(|x| x.0).collect::<Vec<_>>(), vec![0, 2]);
    }

    #[test]
    fn malformed_messages_are_coded() {
        for (m, why) in [
            (json!(3), "not an object"),
            (json!({"content": "x"}), "role"),
            (json!({"role": "toolResult", "content": []}), "toolCallId"),
            (json!({"role": "user", "content": 5}), "content"),
            (json!({"role": "assistant", "content": "x"}), "assistant"),
        ] {
            let e = classify(4, &m).unwrap_err();
            assert_eq!(e.code(), "INVALID_MESSAGE");
            assert!(e.to_string().contains(why), "{e}");
            assert!(e.to_string().contains("index 4"));
        }
        assert_eq!(
            classify(0, &json!({"role": "custom", "x": 1})).unwrap(),
            MessageKind::Skipped
        );
    }
}
