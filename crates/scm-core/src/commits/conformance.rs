//! The context-commit conformance suite: the same cases against every
//! store backend (tests/commits.rs runs it on the embedded store and, with
//! `SCM_TEST_XTDB_URL`, on a real XTDB node). Every case uses fresh unique
//! session ids and principals, so it can share a node with other tests.
//!
//! (One file over ~800 lines on purpose: one conformance suite, run as a whole against every store.)

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};

use super::{
    history, materialize, resolve, show, update_metadata, Artifact, CommitType, MaterializeOptions,
    NewCommit, OutputFormat, Stop, TimelineOf, Trigger,
};
use crate::fs::indexer::{Indexer, IndexerOptions};
use crate::fs::resolver::Resolver;
use crate::session::{CheckpointRequest, Session, SessionOptions};
use crate::store::Store;

pub const CASES: &[&str] = &[
    "chain_of_deltas",
    "materialize_tip_equals_transcript",
    "resume_continues_the_chain",
    "branches_share_a_parent",
    "compaction_commits_and_stop_strategies",
    "resolve_by_time",
    "history_depth",
    "metadata_update_keeps_commit_immutable",
    "materialize_is_cached",
    "bad_input_has_codes",
    "open_from_commit_branches",
    "rewind_follows_the_host_branch",
    "rewind_to_the_fork_point_restores_the_seed",
];

fn unique(prefix: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{prefix}-{}-{nanos}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

fn indexer(store: &Arc<dyn Store>) -> Arc<Indexer> {
    let root: PathBuf = std::env::temp_dir();
    let resolver = Arc::new(Resolver::new("fs-commits-test".into(), root, vec![], true));
    Arc::new(Indexer::new(
        store.clone(),
        resolver,
        IndexerOptions::default(),
    ))
}

async fn open(store: &Arc<dyn Store>, sid: &str) -> Session {
    Session::open(store.clone(), indexer(store), SessionOptions::new(sid))
        .await
        .expect("open session")
}

/// pi-ai messages of a small transcript, turn `k`: a user prompt, a tool
/// call with its result, an answer.
fn turn(k: usize) -> Vec<Value> {
    let ts = 1_700_000_000_000i64 + k as i64 * 10;
    let call = format!("call-{k}");
    vec![
        json!({"role": "user", "content": format!("question {k}"), "timestamp": ts}),
        json!({"role": "assistant", "content": [
                {"type": "text", "text": format!("looking {k}")},
                {"type": "toolCall", "id": call, "name": "bash", "arguments": {"command": format!("echo {k}")}}
            ], "api": "faux", "provider": "faux", "model": "faux-1",
            "usage": {"input": 10, "output": 5}, "stopReason": "toolUse", "timestamp": ts + 1}),
        json!({"role": "toolResult", "toolCallId": call, "toolName": "bash",
            "content": [{"type": "text", "text": format!("output {k}")}], "isError": false, "timestamp": ts + 2}),
        json!({"role": "assistant", "content": [{"type": "text", "text": format!("answer {k}")}],
            "api": "faux", "provider": "faux", "model": "faux-1",
            "usage": {"input": 12, "output": 3}, "stopReason": "stop", "timestamp": ts + 3}),
    ]
}

fn req(trigger: Trigger) -> CheckpointRequest {
    CheckpointRequest::new(trigger, "pi/test")
}

/// None of `gone` is in what the model was sent (`seen`); `why` says where it came from.
fn assert_absent(seen: &str, gone: &[&str], why: &str) {
    for g in gone {
        assert!(!seen.contains(g), "{g} {why}: {seen}");
    }
}

fn messages_of(m: &super::Materialized) -> Vec<Value> {
    m.messages.clone().expect("pi messages")
}

fn opts(stop: Stop) -> MaterializeOptions {
    MaterializeOptions {
        stop,
        format: OutputFormat::PiMessages,
    }
}

/// Runs `turns` turns, checkpointing after each; returns the transcript and
/// the commit ids.
async fn run_turns(
    s: &mut Session,
    transcript: &mut Vec<Value>,
    turns: std::ops::Range<usize>,
) -> Vec<String> {
    let mut ids = Vec::new();
    for k in turns {
        transcript.extend(turn(k));
        s.transform_context(transcript).await.expect("transform");
        let c = s
            .checkpoint(&req(Trigger::TurnBoundary))
            .await
            .expect("checkpoint")
            .expect("a commit");
        ids.push(c.id);
    }
    ids
}

pub async fn chain_of_deltas(store: Arc<dyn Store>) {
    let sid = unique("commits-chain");
    let mut s = open(&store, &sid).await;
    let mut t = Vec::new();
    let ids = run_turns(&mut s, &mut t, 0..3).await;
    let h = history(&*store, &ids[2], None).await.unwrap();
    assert_eq!(
        h.iter().map(|c| c.id.clone()).collect::<Vec<_>>(),
        vec![ids[2].clone(), ids[1].clone(), ids[0].clone()]
    );
    assert_eq!(h[2].parent, None, "the first commit is a root");
    assert_eq!(h[1].parent.as_deref(), Some(ids[0].as_str()));
    let mut expect_from = 0;
    for c in h.iter().rev() {
        assert_eq!(c.commit_type, CommitType::Delta);
        assert_eq!(c.format, super::FORMAT);
        assert_eq!(c.session_id, sid);
        assert_eq!(c.template, "pi/test");
        assert_eq!(c.machine, "fs-commits-test");
        assert_eq!(c.trigger, Trigger::TurnBoundary);
        assert_eq!(c.message_count, 4, "{c:?}");
        assert!(c.token_count > 0);
        // The id is the hash of its inputs.
        assert_eq!(
            c.id,
            super::commit_id(
                c.parent.as_deref(),
                &c.artifact,
                &c.created_at,
                &c.template,
                &c.session_id
            )
        );
        let Artifact::ChatRange { chat, from, to, .. } = &c.artifact else {
            panic!("a delta refers to the chat: {c:?}")
        };
        assert_eq!(chat, &format!("chat:{sid}"));
        assert_eq!(*from, expect_from, "deltas are contiguous");
        assert!(to > from);
        expect_from = *to;
    }
    // Nothing new: a turn-boundary checkpoint makes no commit.
    let again = s
        .checkpoint(&req(Trigger::TurnBoundary))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again.id, ids[2]);
    // An explicit one does (an empty delta carrying its summary).
    let mut r = req(Trigger::Explicit);
    r.summary = Some("nothing new".into());
    let e = s.checkpoint(&r).await.unwrap().unwrap();
    assert_eq!(e.parent.as_deref(), Some(ids[2].as_str()));
    assert_eq!(e.message_count, 0);
    assert_eq!(e.summary.as_deref(), Some("nothing new"));
    assert_eq!(
        show(&*store, &e.id).await.unwrap().summary.as_deref(),
        Some("nothing new")
    );
}

pub async fn materialize_tip_equals_transcript(store: Arc<dyn Store>) {
    let sid = unique("commits-tip");
    let mut s = open(&store, &sid).await;
    let mut t = Vec::new();
    let ids = run_turns(&mut s, &mut t, 0..4).await;
    let m = materialize(&*store, &ids[3], &opts(Stop::Root))
        .await
        .unwrap();
    assert_eq!(messages_of(&m), t);
    assert_eq!(m.message_count, 16);
    assert_eq!(m.commits, 4);
    // An inner commit gives the transcript as it was then.
    let m1 = materialize(&*store, &ids[1], &opts(Stop::Compaction))
        .await
        .unwrap();
    assert_eq!(messages_of(&m1), t[..8].to_vec());
}

pub async fn resume_continues_the_chain(store: Arc<dyn Store>) {
    let sid = unique("commits-resume");
    let mut t = Vec::new();
    let first = {
        let mut s = open(&store, &sid).await;
        let ids = run_turns(&mut s, &mut t, 0..2).await;
        s.close().await.unwrap();
        ids
    };
    let mut s = open(&store, &sid).await;
    assert_eq!(
        s.commit_tip().map(|(id, _)| id.to_string()),
        Some(first[1].clone())
    );
    let next = run_turns(&mut s, &mut t, 2..3).await;
    let c = show(&*store, &next[0]).await.unwrap();
    assert_eq!(c.parent.as_deref(), Some(first[1].as_str()));
    assert_eq!(c.message_count, 4, "only the new turn: {c:?}");
    let m = materialize(&*store, &next[0], &opts(Stop::Root))
        .await
        .unwrap();
    assert_eq!(messages_of(&m), t);
}

fn inline(parent: Option<&str>, sid: &str, text: &str, at: &str) -> NewCommit {
    NewCommit {
        parent: parent.map(str::to_string),
        commit_type: CommitType::Delta,
        artifact: Artifact::Messages {
            messages: vec![json!({"role": "user", "content": text, "timestamp": 1})],
        },
        template: "test/1".into(),
        principal: None,
        machine: "m".into(),
        session_id: sid.into(),
        trigger: Trigger::Explicit,
        message_count: 1,
        token_count: 1,
        created_at: Some(at.into()),
        summary: None,
        tip_to: None,
        expect_tip: None,
    }
}

pub async fn branches_share_a_parent(store: Arc<dyn Store>) {
    let sid = unique("commits-branch");
    let mut s = open(&store, &sid).await;
    let mut t = Vec::new();
    let base = run_turns(&mut s, &mut t, 0..2).await;
    let (b_sid, c_sid) = (unique("commits-b"), unique("commits-c"));
    let b1 = super::create(
        &*store,
        inline(
            Some(&base[1]),
            &b_sid,
            "finding 1",
            "2026-11-24T10:00:00.000Z",
        ),
    )
    .await
    .unwrap();
    let b2 = super::create(
        &*store,
        inline(
            Some(&b1.id),
            &b_sid,
            "more on 1",
            "2026-11-24T10:01:00.000Z",
        ),
    )
    .await
    .unwrap();
    let c1 = super::create(
        &*store,
        inline(
            Some(&base[1]),
            &c_sid,
            "finding 2",
            "2026-11-24T10:00:00.000Z",
        ),
    )
    .await
    .unwrap();
    assert_ne!(b1.id, c1.id);
    let hb: Vec<String> = history(&*store, &b2.id, None)
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.id)
        .collect();
    let hc: Vec<String> = history(&*store, &c1.id, None)
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(
        hb,
        vec![
            b2.id.clone(),
            b1.id.clone(),
            base[1].clone(),
            base[0].clone()
        ]
    );
    assert_eq!(hc, vec![c1.id.clone(), base[1].clone(), base[0].clone()]);
    let mb = messages_of(
        &materialize(&*store, &b2.id, &opts(Stop::Root))
            .await
            .unwrap(),
    );
    let mc = messages_of(
        &materialize(&*store, &c1.id, &opts(Stop::Root))
            .await
            .unwrap(),
    );
    assert_eq!(mb[..8], t[..]);
    assert_eq!(mc[..8], t[..]);
    let texts = |m: &[Value]| {
        m.iter()
            .filter_map(|x| x["content"].as_str().map(str::to_string))
            .collect::<Vec<_>>()
    };
    assert!(texts(&mb).contains(&"more on 1".to_string()));
    assert!(
        !texts(&mb).contains(&"finding 2".to_string()),
        "branch b holds nothing of c"
    );
    assert!(
        !texts(&mc).contains(&"finding 1".to_string()),
        "branch c holds nothing of b"
    );
    // Creating the same commit again returns it (same inputs, same id).
    let again = super::create(
        &*store,
        inline(
            Some(&base[1]),
            &c_sid,
            "finding 2",
            "2026-11-24T10:00:00.000Z",
        ),
    )
    .await
    .unwrap();
    assert_eq!(again.id, c1.id);
}

pub async fn compaction_commits_and_stop_strategies(store: Arc<dyn Store>) {
    let sid = unique("commits-compact");
    let mut s = open(&store, &sid).await;
    let mut t = Vec::new();
    let pre = run_turns(&mut s, &mut t, 0..2).await;
    // One more turn, not checkpointed, then the host compacts.
    t.extend(turn(2));
    s.transform_context(&t).await.unwrap();
    let summary = json!({"role": "compactionSummary", "summary": "turns 0-2 in brief", "tokensBefore": 500, "timestamp": 1_700_000_001_000i64});
    let mut r = req(Trigger::Compaction);
    r.compaction = Some(vec![summary.clone()]);
    r.summary = Some("compacted".into());
    let comp = s.checkpoint(&r).await.unwrap().unwrap();
    assert_eq!(comp.commit_type, CommitType::Compaction);
    assert_eq!(comp.trigger, Trigger::Compaction);
    let delta = show(&*store, comp.parent.as_deref().unwrap())
        .await
        .unwrap();
    assert_eq!(
        delta.commit_type,
        CommitType::Delta,
        "the pre-compaction delta comes first"
    );
    assert_eq!(delta.parent.as_deref(), Some(pre[1].as_str()));
    assert_eq!(delta.message_count, 4);
    // pi's array after compaction: the summary, then new messages.
    let mut after = vec![summary.clone()];
    after.extend(turn(3));
    s.transform_context(&after).await.unwrap();
    let tip = s
        .checkpoint(&req(Trigger::TurnBoundary))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(tip.parent.as_deref(), Some(comp.id.as_str()));
    assert_eq!(
        tip.message_count, 4,
        "the summary message belongs to the compaction commit"
    );

    let by_default = messages_of(
        &materialize(&*store, &tip.id, &opts(Stop::Compaction))
            .await
            .unwrap(),
    );
    assert_eq!(by_default, after, "summary + post-compaction deltas");
    let full = messages_of(
        &materialize(&*store, &tip.id, &opts(Stop::Root))
            .await
            .unwrap(),
    );
    let mut all = t.clone();
    all.extend(turn(3));
    assert_eq!(full, all, "root: every delta, past the compaction");
    let since = messages_of(
        &materialize(&*store, &tip.id, &opts(Stop::Commit(pre[0].clone())))
            .await
            .unwrap(),
    );
    assert_eq!(since, all[4..].to_vec(), "after the named ancestor");
    // The compaction commit itself materializes to its summary.
    let c = messages_of(
        &materialize(&*store, &comp.id, &opts(Stop::Compaction))
            .await
            .unwrap(),
    );
    assert_eq!(c, vec![summary]);
}

pub async fn resolve_by_time(store: Arc<dyn Store>) {
    let sid = unique("commits-resolve");
    let principal = unique("alice@host");
    // More than two timeline pages.
    let n = super::timeline::PAGE * 2 + 7;
    let base_ms = 1_790_000_000_000i64;
    let mut ids = Vec::new();
    let mut parent: Option<String> = None;
    for k in 0..n {
        let at = crate::store::embedded::format_rfc3339_millis(base_ms + k as i64 * 1000);
        let mut c = inline(parent.as_deref(), &sid, &format!("m{k}"), &at);
        c.principal = Some(principal.clone());
        c.expect_tip = parent.clone();
        c.tip_to = Some(0);
        let c = super::create(&*store, c).await.unwrap();
        parent = Some(c.id.clone());
        ids.push(c.id);
    }
    let at = |ms: i64| crate::store::embedded::format_rfc3339_millis(ms);
    for of in [
        TimelineOf::Session(sid.clone()),
        TimelineOf::Principal(principal.clone()),
    ] {
        assert_eq!(resolve(&*store, &of, &at(base_ms - 1)).await.unwrap(), None);
        for k in [0, 1, 63, 64, 65, 127, 128, 129, n - 1] {
            let exact = resolve(&*store, &of, &at(base_ms + k as i64 * 1000))
                .await
                .unwrap();
            assert_eq!(exact.as_deref(), Some(ids[k].as_str()), "exact {k}");
            let between = resolve(&*store, &of, &at(base_ms + k as i64 * 1000 + 500))
                .await
                .unwrap();
            assert_eq!(between.as_deref(), Some(ids[k].as_str()), "between {k}");
        }
        let late = resolve(&*store, &of, &at(base_ms + 10_000_000))
            .await
            .unwrap();
        assert_eq!(late.as_deref(), Some(ids[n - 1].as_str()));
    }
    assert_eq!(
        resolve(
            &*store,
            &TimelineOf::Session(unique("nobody")),
            &at(base_ms)
        )
        .await
        .unwrap(),
        None
    );
}

pub async fn history_depth(store: Arc<dyn Store>) {
    let sid = unique("commits-depth");
    let mut s = open(&store, &sid).await;
    let mut t = Vec::new();
    let ids = run_turns(&mut s, &mut t, 0..5).await;
    let h = history(&*store, &ids[4], Some(2)).await.unwrap();
    assert_eq!(
        h.iter().map(|c| c.id.clone()).collect::<Vec<_>>(),
        vec![ids[4].clone(), ids[3].clone()]
    );
    assert_eq!(history(&*store, &ids[4], None).await.unwrap().len(), 5);
    assert_eq!(history(&*store, &ids[4], Some(0)).await.unwrap().len(), 0);
}

pub async fn metadata_update_keeps_commit_immutable(store: Arc<dyn Store>) {
    let sid = unique("commits-meta");
    let mut s = open(&store, &sid).await;
    let mut t = Vec::new();
    let ids = run_turns(&mut s, &mut t, 0..1).await;
    assert_eq!(show(&*store, &ids[0]).await.unwrap().summary, None);
    update_metadata(&*store, &ids[0], Some("first look"))
        .await
        .unwrap();
    update_metadata(&*store, &ids[0], Some("read main.rs, bug in parse()"))
        .await
        .unwrap();
    let c = show(&*store, &ids[0]).await.unwrap();
    assert_eq!(c.summary.as_deref(), Some("read main.rs, bug in parse()"));
    assert_eq!(
        store.history(&ids[0]).await.unwrap().len(),
        1,
        "the commit has one version"
    );
    let meta = store.history(&super::meta_id(&ids[0])).await.unwrap();
    assert_eq!(meta.len(), 2, "each update is a metadata version");
    let err = update_metadata(&*store, &format!("ctx-{}", "0".repeat(32)), Some("x"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "UNKNOWN_OBJECT");
}

pub async fn materialize_is_cached(store: Arc<dyn Store>) {
    let sid = unique("commits-cache");
    let mut s = open(&store, &sid).await;
    let mut t = Vec::new();
    let ids = run_turns(&mut s, &mut t, 0..2).await;
    let a = materialize(&*store, &ids[1], &opts(Stop::Compaction))
        .await
        .unwrap();
    assert!(!a.cached);
    let writes = store.submitted_tx_count();
    let b = materialize(&*store, &ids[1], &opts(Stop::Compaction))
        .await
        .unwrap();
    assert!(b.cached, "the same request is served from the snapshot");
    assert_eq!(store.submitted_tx_count(), writes, "and writes nothing");
    assert_eq!(a.messages, b.messages);
    assert_eq!(a.snapshot, b.snapshot);
    let j = materialize(
        &*store,
        &ids[1],
        &MaterializeOptions {
            stop: Stop::Compaction,
            format: OutputFormat::PiJsonl,
        },
    )
    .await
    .unwrap();
    let lines: Vec<Value> = j
        .jsonl
        .as_deref()
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["type"], "session");
    assert_eq!(lines[0]["version"], 3);
    assert_eq!(lines.len(), 1 + t.len());
    for (i, l) in lines[1..].iter().enumerate() {
        assert_eq!(l["type"], "message");
        assert_eq!(l["message"], t[i]);
        assert_eq!(
            l["parentId"],
            if i == 0 {
                Value::Null
            } else {
                lines[i]["id"].clone()
            }
        );
    }
}

pub async fn bad_input_has_codes(store: Arc<dyn Store>) {
    assert_eq!(
        show(&*store, "nope").await.unwrap_err().code(),
        "INVALID_ARGUMENT"
    );
    let unknown = format!("ctx-{}", "a".repeat(32));
    assert_eq!(
        show(&*store, &unknown).await.unwrap_err().code(),
        "UNKNOWN_OBJECT"
    );
    assert_eq!(
        materialize(&*store, &unknown, &opts(Stop::Root))
            .await
            .unwrap_err()
            .code(),
        "UNKNOWN_OBJECT"
    );
    assert_eq!(
        Trigger::parse("whenever").unwrap_err().code(),
        "INVALID_ARGUMENT"
    );
    assert_eq!(
        Stop::parse(Some("sometime")).unwrap_err().code(),
        "INVALID_ARGUMENT"
    );
    assert_eq!(
        OutputFormat::parse(Some("xml")).unwrap_err().code(),
        "INVALID_ARGUMENT"
    );
    assert_eq!(
        resolve(&*store, &TimelineOf::Session("s".into()), "yesterday")
            .await
            .unwrap_err()
            .code(),
        "INVALID_ARGUMENT"
    );
    // A stop that is not an ancestor.
    let sid = unique("commits-bad");
    let mut s = open(&store, &sid).await;
    let mut t = Vec::new();
    let ids = run_turns(&mut s, &mut t, 0..1).await;
    let other = super::create(
        &*store,
        inline(
            None,
            &unique("commits-other"),
            "x",
            "2026-11-24T00:00:00.000Z",
        ),
    )
    .await
    .unwrap();
    let err = materialize(&*store, &ids[0], &opts(Stop::Commit(other.id)))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_ARGUMENT");
}

pub async fn open_from_commit_branches(store: Arc<dyn Store>) {
    let a_sid = unique("commits-from-a");
    let mut a = open(&store, &a_sid).await;
    let mut t = Vec::new();
    let ids = run_turns(&mut a, &mut t, 0..2).await;
    let a_sets = a.snapshot();
    let b_sid = unique("commits-from-b");
    let mut b = Session::open_from_commit(
        store.clone(),
        indexer(&store),
        SessionOptions::new(&b_sid),
        Some(&ids[1]),
    )
    .await
    .unwrap();
    assert_eq!(
        b.commit_tip().map(|(id, _)| id.to_string()),
        Some(ids[1].clone())
    );
    assert_eq!(
        b.snapshot().active_set,
        a_sets.active_set,
        "the sets as they were at the commit"
    );
    assert_eq!(b.snapshot().session_index, a_sets.session_index);
    // The host starts from the materialized commit and goes on.
    let m = materialize(&*store, &ids[1], &opts(Stop::Compaction))
        .await
        .unwrap();
    let mut bt = messages_of(&m);
    assert_eq!(bt, t);
    let b_ids = run_turns(&mut b, &mut bt, 5..6).await;
    let c = show(&*store, &b_ids[0]).await.unwrap();
    assert_eq!(
        c.parent.as_deref(),
        Some(ids[1].as_str()),
        "the branch's first commit names the parent"
    );
    assert_eq!(c.session_id, b_sid);
    assert_eq!(c.message_count, 4, "only what the branch added: {c:?}");
    let mb = messages_of(
        &materialize(&*store, &b_ids[0], &opts(Stop::Root))
            .await
            .unwrap(),
    );
    assert_eq!(mb, bt);
    // The parent goes on independently.
    let a_more = run_turns(&mut a, &mut t, 2..3).await;
    let ma = messages_of(
        &materialize(&*store, &a_more[0], &opts(Stop::Root))
            .await
            .unwrap(),
    );
    assert_eq!(ma, t);
    assert!(
        !ma.iter().any(|m| m["content"] == "question 5"),
        "a holds nothing of b"
    );
    assert!(
        !mb.iter().any(|m| m["content"] == "question 2"),
        "b holds nothing of a"
    );
    b.close().await.unwrap();
    // Opening b again from the same commit resumes it (its chain runs through it).
    let b2 = Session::open_from_commit(
        store.clone(),
        indexer(&store),
        SessionOptions::new(&b_sid),
        Some(&ids[1]),
    )
    .await
    .unwrap();
    assert_eq!(
        b2.commit_tip().map(|(id, _)| id.to_string()),
        Some(b_ids[0].clone())
    );
    // Opening a session from its own tip resumes it; from a commit off its chain is refused.
    let a_tip = a_more[0].clone();
    a.close().await.unwrap();
    let a2 = Session::open_from_commit(
        store.clone(),
        indexer(&store),
        SessionOptions::new(&a_sid),
        Some(&a_tip),
    )
    .await
    .unwrap();
    assert_eq!(a2.commit_tip().map(|(id, _)| id.to_string()), Some(a_tip));
    let err = Session::open_from_commit(
        store.clone(),
        indexer(&store),
        SessionOptions::new(&a_sid),
        Some(&b_ids[0]),
    )
    .await
    .unwrap_err();
    assert_eq!(err.code(), "INVALID_ARGUMENT");
    // No commit: a fresh session.
    let fresh = Session::open_from_commit(
        store.clone(),
        indexer(&store),
        SessionOptions::new(unique("commits-fresh")),
        None,
    )
    .await
    .unwrap();
    assert_eq!(fresh.commit_tip(), None);
    assert_eq!(fresh.turn_count(), 0);
}

/// A host branch switch (pi's `/tree`, session/rewind.rs): the session
/// moves to the commit the branch maps to; what the model then sees holds
/// nothing of the branch left; two branches from one commit are
/// independent; every call of every branch stays listed.
pub async fn rewind_follows_the_host_branch(store: Arc<dyn Store>) {
    let sid = unique("commits-rewind");
    let s = open(&store, &sid).await;
    let mut s = s;
    let mut a = Vec::new();
    let ids = run_turns(&mut s, &mut a, 0..2).await;
    let text = |v: &[Value]| serde_json::to_string(v).unwrap();

    // The branch continues the session: nothing moves.
    let (s, moved) = s.rewind(&a, &req(Trigger::TurnBoundary)).await.unwrap();
    assert_eq!(moved, None);

    // Back to the end of turn 0, then a new turn: branch B.
    let (mut s, moved) = s
        .rewind(&turn(0), &req(Trigger::TurnBoundary))
        .await
        .unwrap();
    assert_eq!(moved.flatten().map(|c| c.id), Some(ids[0].clone()));
    assert_eq!(s.commit_tip().unwrap().0, ids[0]);
    assert_eq!(s.cursor(), 4);
    let mut b = turn(0);
    b.extend(turn(5));
    let seen = text(&s.transform_context(&b).await.unwrap());
    assert!(seen.contains("question 5"));
    assert_absent(
        &seen,
        &["question 1", "output 1", "answer 1"],
        "of the branch left reached the model",
    );
    let cb = s
        .checkpoint(&req(Trigger::TurnBoundary))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(cb.parent.as_deref(), Some(ids[0].as_str()));
    let m = materialize(&*store, &cb.id, &opts(Stop::Root))
        .await
        .unwrap();
    assert_eq!(messages_of(&m), b);

    // Back to branch A's tip: exactly A, then what follows; nothing of B.
    let (mut s, moved) = s.rewind(&a, &req(Trigger::TurnBoundary)).await.unwrap();
    assert_eq!(moved.flatten().map(|c| c.id), Some(ids[1].clone()));
    let mut a2 = a.clone();
    a2.extend(turn(6));
    let seen = text(&s.transform_context(&a2).await.unwrap());
    assert!(seen.contains("answer 1") && seen.contains("question 6"));
    assert!(
        !seen.contains("question 5"),
        "branch B reached the model: {seen}"
    );
    let ca = s
        .checkpoint(&req(Trigger::TurnBoundary))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ca.parent.as_deref(), Some(ids[1].as_str()));
    let m = materialize(&*store, &ca.id, &opts(Stop::Root))
        .await
        .unwrap();
    assert_eq!(messages_of(&m), a2);
    // Branch B's chain is untouched.
    let m = materialize(&*store, &cb.id, &opts(Stop::Root))
        .await
        .unwrap();
    assert_eq!(messages_of(&m), b);
    // Every call of every branch is still recorded, and reconstructable.
    assert_eq!(s.model_call_count(), 4);
    let again = s.reconstruct_call(2).await.unwrap();
    assert!(text(&again).contains("question 5"));
    // Which commit each call followed (the tip as of its basis tx).
    let mut followed = Vec::new();
    for n in 0..4 {
        let plan = s.reconstruct_plan(n).unwrap();
        followed.push(plan.followed_commit(&*store).await.unwrap());
    }
    let id = |i: usize| Some(ids[i].clone());
    assert_eq!(followed, vec![None, id(0), id(0), id(1)]);
    s.close().await.unwrap();

    // A resume opens the branch it moved to last.
    let mut s = open(&store, &sid).await;
    assert_eq!(s.commit_tip().unwrap().0, ca.id);
    let seen = text(&s.transform_context(&a2).await.unwrap());
    assert!(!seen.contains("question 5"));
    assert_eq!(s.model_call_count(), 5);

    // Before the first commit's position (back onto the first prompt): the
    // root. Nothing of either branch; the next commit is a new root.
    let (mut s, moved) = s
        .rewind(&turn(0)[..1], &req(Trigger::TurnBoundary))
        .await
        .unwrap();
    assert_eq!(moved, Some(None));
    assert_eq!(s.commit_tip(), None);
    assert_eq!(s.cursor(), 0);
    let mut r = turn(0)[..1].to_vec();
    r.extend(turn(7).into_iter().skip(1));
    let seen = text(&s.transform_context(&r).await.unwrap());
    assert_absent(
        &seen,
        &["answer 0", "question 5", "question 6", "answer 1"],
        "reached the model after going back to the root",
    );
    let root = s
        .checkpoint(&req(Trigger::TurnBoundary))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(root.parent, None);
    let m = materialize(&*store, &root.id, &opts(Stop::Root))
        .await
        .unwrap();
    assert_eq!(messages_of(&m), r);
    assert_eq!(s.model_call_count(), 6);
    s.close().await.unwrap();

    // A session seeded from a commit (turn 0) that went on (turn 8): back
    // onto the first prompt, before the seed's position, its root is the
    // seed emptied — nothing of the parent's turn 0 answer, nor of turn 8.
    let child = unique("commits-rewind-child");
    let mut s = Session::open_from_commit(
        store.clone(),
        indexer(&store),
        SessionOptions::new(&child),
        Some(&ids[0]),
    )
    .await
    .unwrap();
    let mut c = turn(0);
    c.extend(turn(8));
    s.transform_context(&c).await.unwrap();
    let (mut s, moved) = s
        .rewind(&turn(0)[..1], &req(Trigger::TurnBoundary))
        .await
        .unwrap();
    assert_eq!(moved, Some(None));
    assert_eq!((s.commit_tip(), s.cursor()), (None, 0));
    let mut r = turn(0)[..1].to_vec();
    r.extend(turn(9).into_iter().skip(1));
    let seen = text(&s.transform_context(&r).await.unwrap());
    assert!(seen.contains("answer 9"));
    assert_absent(
        &seen,
        &["answer 0", "question 8", "answer 8"],
        "reached the model after going back before the seed",
    );
    s.close().await.unwrap();
}

/// A seeded session (`fromCommit`, or a fork of a session) moved back to
/// the point it was seeded at — pi's `/fork`, a prompt, then `/tree` onto
/// the fork point — is the session as it was forked: its cursor, its sets
/// (a pin the parent held), the tip it was opened at; not a new layout.
pub async fn rewind_to_the_fork_point_restores_the_seed(store: Arc<dyn Store>) {
    let text = |v: &[Value]| serde_json::to_string(v).unwrap();
    let sid = unique("commits-seed");
    let mut s = open(&store, &sid).await;
    s.transform_context(&turn(0)).await.unwrap();
    assert!(s.pin("call-0").ok);
    let c0 = s
        .checkpoint(&req(Trigger::TurnBoundary))
        .await
        .unwrap()
        .unwrap();
    let pinned = s.snapshot().pinned_set;
    assert_eq!(pinned.len(), 1);
    s.close().await.unwrap();

    // From the commit.
    let child = unique("commits-seed-child");
    let mut s = Session::open_from_commit(
        store.clone(),
        indexer(&store),
        SessionOptions::new(&child),
        Some(&c0.id),
    )
    .await
    .unwrap();
    let mut c = turn(0);
    c.extend(turn(8));
    s.transform_context(&c).await.unwrap();
    let (mut s, moved) = s
        .rewind(&turn(0), &req(Trigger::TurnBoundary))
        .await
        .unwrap();
    assert_eq!(moved.flatten().map(|c| c.id), Some(c0.id.clone()));
    assert_eq!(
        s.commit_tip().map(|(id, _)| id.to_string()),
        Some(c0.id.clone())
    );
    assert_eq!(s.cursor(), 4);
    assert_eq!(s.snapshot().pinned_set, pinned);
    let mut r = turn(0);
    r.extend(turn(9));
    let seen = text(&s.transform_context(&r).await.unwrap());
    assert!(seen.contains("output 0") && seen.contains("question 9"));
    assert_absent(
        &seen,
        &["question 8", "answer 8"],
        "of the branch left reached the model",
    );
    let next = s
        .checkpoint(&req(Trigger::TurnBoundary))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(next.parent.as_deref(), Some(c0.id.as_str()));
    let m = materialize(&*store, &next.id, &opts(Stop::Root))
        .await
        .unwrap();
    assert_eq!(messages_of(&m), r);
    s.close().await.unwrap();

    // A fork of the session at its call: no commit to name.
    let fork = unique("commits-seed-fork");
    let mut s = Session::open_fork(
        store.clone(),
        indexer(&store),
        SessionOptions::new(&fork),
        &sid,
        &turn(0),
    )
    .await
    .unwrap();
    assert_eq!(s.cursor(), 4);
    s.transform_context(&c).await.unwrap();
    let (mut s, moved) = s
        .rewind(&turn(0), &req(Trigger::TurnBoundary))
        .await
        .unwrap();
    assert_eq!(moved, Some(None));
    assert_eq!((s.commit_tip(), s.cursor()), (None, 4));
    let seen = text(&s.transform_context(&r).await.unwrap());
    assert!(seen.contains("output 0") && seen.contains("question 9"));
    assert_absent(
        &seen,
        &["question 8"],
        "of the branch left reached the model",
    );
    s.close().await.unwrap();
}
