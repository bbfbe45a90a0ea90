//! Forks: a new session seeded from the parent's state at the fork point
//! (`Session::open_fork`). The child is opened as a new process would open
//! it, on the same store as the parent.

mod session_support;

use scm_core::commits::Trigger;
use scm_core::session::{CheckpointRequest, Layout, Session, SessionOptions};
use serde_json::{json, Value};
use session_support::*;

async fn fork(
    ws: &Workspace,
    options: SessionOptions,
    parent: &str,
    messages: &[Value],
) -> Session {
    Session::open_fork(
        ws.store.clone(),
        ws.indexer.clone(),
        options,
        parent,
        messages,
    )
    .await
    .unwrap()
}

/// Ids of toolcall objects in the session's index that belong to `session`.
fn own_toolcalls(s: &Session) -> Vec<String> {
    let prefix = format!("toolcall:{}:", s.session_id());
    s.snapshot()
        .session_index
        .into_iter()
        .filter(|id| id.starts_with(&prefix))
        .collect()
}

/// Parent: reads a.txt and b.txt (call 0), deactivates b.txt (call 1),
/// answers, then goes on past the fork point (call 2: a bash call, b.txt
/// active again). Returns the transcript at the fork point (after the
/// answer) and the parent's snapshot as of call 1.
async fn parent_session(
    ws: &Workspace,
    parent: &mut Session,
) -> (Vec<Value>, scm_core::session::SessionSnapshot, usize) {
    let mut t = Transcript::default();
    ws.write("a.txt", "ALPHA-TEXT");
    ws.write("b.txt", "BRAVO-TEXT");
    t.user("first");
    parent.read("a.txt").await.unwrap();
    parent.read("b.txt").await.unwrap();
    t.assistant(
        "",
        &[
            ("r1", "read", json!({"path": "a.txt"})),
            ("r2", "read", json!({"path": "b.txt"})),
        ],
    )
    .result("r1", "read", "ALPHA-TEXT", false)
    .result("r2", "read", "BRAVO-TEXT", false);
    parent.transform_context(&t.messages).await.unwrap();
    assert!(parent.deactivate("b.txt").ok);
    t.call("d1", "deactivate", json!({"id": "b.txt"}), "deactivated");
    parent.transform_context(&t.messages).await.unwrap();
    let at_fork = (parent.snapshot(), parent.turn_count());
    t.assistant("done", &[]);
    let fork_messages = t.messages.clone();

    // The parent goes on after the fork point.
    t.user("second")
        .call("c9", "bash", json!({"command": "echo 9"}), "OUT-9");
    assert!(parent.activate("b.txt").ok);
    parent.transform_context(&t.messages).await.unwrap();
    (fork_messages, at_fork.0, at_fork.1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_starts_from_the_parents_state_at_the_fork_point() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut parent = ws.session("fork-parent").await;
        let (messages, at_fork, turns) = parent_session(&ws, &mut parent).await;
        let a = ws.file_id("a.txt");
        let b = ws.file_id("b.txt");
        let child_id = unique_id("fork-child");

        let mut child = fork(
            &ws,
            SessionOptions::new(&child_id),
            parent.session_id(),
            &messages,
        )
        .await;
        // The parent's sets as of call 1, not its current ones.
        assert_eq!(child.snapshot(), at_fork);
        assert!(!at_fork.active_set.contains(&b), "b.txt was deactivated");
        assert!(parent.snapshot().active_set.contains(&b));
        assert_eq!(child.turn_count(), turns);
        assert_eq!(
            child.model_call_count(),
            0,
            "the parent's calls are the parent's"
        );

        // The child's first call: the copied transcript plus a new prompt.
        let mut t = Transcript::default();
        t.messages = messages.clone();
        t.user("in the fork");
        let txs = ws.store.submitted_tx_count();
        let out = child.transform_context(&t.messages).await.unwrap();
        assert_eq!(
            ws.store.submitted_tx_count() - txs,
            1,
            "one write: the call"
        );
        assert_eq!(
            own_toolcalls(&child),
            Vec::<String>::new(),
            "nothing re-ingested"
        );
        assert_eq!(active_ids(&out), vec![a.clone()]);
        assert_eq!(occurrences(&out, "ALPHA-TEXT"), 1);
        assert_eq!(
            occurrences(&out, "BRAVO-TEXT"),
            0,
            "deactivated b.txt came back"
        );
        assert_eq!(
            occurrences(&out, "OUT-9"),
            0,
            "the parent's later call leaked"
        );
        assert!(child
            .snapshot()
            .session_index
            .contains(&toolcall_id(&parent, "r1")));
        let users: Vec<&Value> = out
            .iter()
            .filter(|m| {
                m["role"] == "user"
                    && !m["content"].as_str().is_some_and(|s| {
                        s.starts_with("METADATA_POOL") || s.starts_with("ACTIVE_CONTENT")
                    })
            })
            .collect();
        assert_eq!(users.len(), 2);
        for call in ["r1", "r2", "d1"] {
            assert_eq!(
                ws.store
                    .history(&toolcall_id(&parent, call))
                    .await
                    .unwrap()
                    .len(),
                1,
                "{call}: shared, written once"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parent_and_child_diverge_independently() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut parent = ws.session("fork-parent").await;
        let (messages, _, _) = parent_session(&ws, &mut parent).await;
        let parent_before = parent.snapshot();
        let mut child = fork(
            &ws,
            SessionOptions::new(unique_id("fork-child")),
            parent.session_id(),
            &messages,
        )
        .await;
        let mut t = Transcript::default();
        t.messages = messages;
        ws.write("c.txt", "CHARLIE-TEXT");
        t.user("in the fork");
        child.read("c.txt").await.unwrap();
        t.call("c1", "read", json!({"path": "c.txt"}), "CHARLIE-TEXT")
            .call("x1", "bash", json!({"command": "echo child"}), "CHILD-OUT");
        let out = child.transform_context(&t.messages).await.unwrap();
        assert_eq!(occurrences(&out, "CHILD-OUT"), 1);
        assert_eq!(
            own_toolcalls(&child),
            vec![toolcall_id(&child, "c1"), toolcall_id(&child, "x1")]
        );
        // The parent is untouched, in memory and in the store.
        assert_eq!(parent.snapshot(), parent_before);
        let stored =
            scm_core::session::paged::get(&*ws.store, &format!("session:{}", parent.session_id()))
                .await
                .unwrap()
                .unwrap();
        assert_eq!(
            stored["session_index"],
            json!(parent_before.session_index),
            "the child wrote into the parent's session"
        );
        // And the child never sees what the parent did after the fork point.
        assert!(!child
            .snapshot()
            .session_index
            .contains(&toolcall_id(&parent, "c9")));
        // A resumed parent is the parent.
        parent.close().await.unwrap();
        let resumed = ws.open(SessionOptions::new(parent.session_id())).await;
        assert_eq!(resumed.snapshot(), parent_before);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_open_resumes_the_child() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut parent = ws.session("fork-parent").await;
        let (messages, _, _) = parent_session(&ws, &mut parent).await;
        let child_id = unique_id("fork-child");
        // pi fires session_start twice on an RPC fork: both opens may race.
        let (one, two) = tokio::join!(
            Session::open_fork(
                ws.store.clone(),
                ws.indexer.clone(),
                SessionOptions::new(&child_id),
                parent.session_id(),
                &messages
            ),
            Session::open_fork(
                ws.store.clone(),
                ws.indexer.clone(),
                SessionOptions::new(&child_id),
                parent.session_id(),
                &messages
            ),
        );
        let (one, two) = (one.unwrap(), two.unwrap());
        assert_eq!(one.snapshot(), two.snapshot());
        drop(two);
        let mut child = one;
        let mut t = Transcript::default();
        t.messages = messages.clone();
        t.user("in the fork")
            .call("x1", "bash", json!({"command": "echo child"}), "CHILD-OUT");
        child.transform_context(&t.messages).await.unwrap();
        child.close().await.unwrap();
        let snap = child.snapshot();
        let session_id = format!("session:{child_id}");
        let versions = ws.store.history(&session_id).await.unwrap().len();

        // Opened again as a fork (a later process): resumed, not re-seeded.
        let again = fork(
            &ws,
            SessionOptions::new(&child_id),
            parent.session_id(),
            &messages,
        )
        .await;
        assert_eq!(again.snapshot(), snap);
        assert_eq!(again.model_call_count(), 1);
        assert_eq!(ws.store.history(&session_id).await.unwrap().len(), versions);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_of_the_whole_session_uses_the_parents_last_call() {
    for store in stores() {
        let ws = Workspace::new(store);
        let parent_id = unique_id("fork-parent");
        let mut t = Transcript::default();
        ws.write("a.txt", "ALPHA-TEXT");
        let (last_out, snap) = {
            let mut p = ws
                .open(SessionOptions {
                    system_prompt: Some("SYSTEM-PROMPT".into()),
                    ..SessionOptions::new(&parent_id)
                })
                .await;
            t.user("first");
            p.read("a.txt").await.unwrap();
            t.call("r1", "read", json!({"path": "a.txt"}), "ALPHA-TEXT");
            t.call("x1", "bash", json!({"command": "ls"}), "LS-OUT");
            let out = p.transform_context(&t.messages).await.unwrap();
            p.close().await.unwrap();
            (out, p.snapshot())
        };
        t.assistant("parent done", &[]);
        // No system prompt given: the parent's is the child's.
        let mut child = fork(
            &ws,
            SessionOptions::new(unique_id("fork-child")),
            &parent_id,
            &t.messages,
        )
        .await;
        assert_eq!(child.snapshot(), snap);
        assert_eq!(child.system_prompt(), Some("SYSTEM-PROMPT"));
        t.user("in the fork");
        let out = child.transform_context(&t.messages).await.unwrap();
        assert_eq!(own_toolcalls(&child), Vec::<String>::new());
        // Same pool and active content as the parent's last call; its chat is a prefix.
        assert_eq!(pool_text(&out), pool_text(&last_out));
        assert_eq!(active_ids(&out), active_ids(&last_out));
        assert_eq!(occurrences(&out, "LS-OUT"), 1);
        assert_eq!(occurrences(&out, "parent done"), 1);
        // The child's own call is reconstructible from the store.
        assert_eq!(child.reconstruct_call(0).await.unwrap(), out);
    }
}

/// The next call of `s` after the transcript `messages` and a new prompt.
async fn prompt_after(s: &mut Session, messages: &[Value], prompt: &str) -> Vec<Value> {
    let mut t = Transcript::default();
    t.messages = messages.to_vec();
    t.user(prompt);
    s.transform_context(&t.messages).await.unwrap()
}

fn cache_opts(id: &str) -> SessionOptions {
    SessionOptions {
        layout: Layout::Cache,
        system_prompt: Some("SYS".into()),
        ..SessionOptions::new(id)
    }
}

/// A cache-layout parent whose first call read a.txt (`ALPHA-TEXT`).
async fn cache_parent_reading_a(ws: &Workspace) -> (Session, String, Transcript) {
    let parent_id = unique_id("fork-parent");
    let mut parent = ws.open(cache_opts(&parent_id)).await;
    ws.write("a.txt", "ALPHA-TEXT");
    let mut t = Transcript::default();
    t.user("first");
    parent.read("a.txt").await.unwrap();
    t.call("r1", "read", json!({"path": "a.txt"}), "ALPHA-TEXT");
    parent.transform_context(&t.messages).await.unwrap();
    (parent, parent_id, t)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_layout_a_fork_continues_the_parents_context_byte_for_byte() {
    for store in stores() {
        let ws = Workspace::new(store);
        let (mut parent, parent_id, mut t) = cache_parent_reading_a(&ws).await;
        t.call("x1", "bash", json!({"command": "ls"}), "LS-OUT");
        let at_fork = parent.transform_context(&t.messages).await.unwrap();
        let stats = parent.cache_stats();
        t.assistant("answer", &[]);
        let messages = t.messages.clone();
        t.user("second")
            .call("x2", "bash", json!({"command": "ls -l"}), "LATER-OUT");
        parent.transform_context(&t.messages).await.unwrap();

        let mut child = fork(
            &ws,
            cache_opts(&unique_id("fork-child")),
            &parent_id,
            &messages,
        )
        .await;
        assert_eq!(child.cache_stats(), stats);
        assert_eq!(
            child.alias_of(&toolcall_id(&parent, "x1")),
            parent.alias_of(&toolcall_id(&parent, "x1"))
        );
        let out = prompt_after(&mut child, &messages, "in the fork").await;
        assert_eq!(own_toolcalls(&child), Vec::<String>::new());
        // No epoch in between: the parent's context at the fork point, then the new messages.
        assert_eq!(out[..at_fork.len()], at_fork[..]);
        assert_eq!(out.len(), at_fork.len() + 2);
        assert_eq!(occurrences(&out, "LATER-OUT"), 0);
        assert_eq!(child.reconstruct_call(0).await.unwrap(), out);
    }
}

/// Write-behind coalesces: the flush that lands a call can also carry what
/// was observed after it (pi's final answer, stored at `agent_end` while
/// the call's write was still queued). The call's record then names a
/// transaction whose chat has consumed more than the call did; the fork
/// point is that state when the child's transcript holds it too (found in
/// CI: the pin taken before the answer was lost in the fork).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_point_whose_write_also_carried_the_answer_keeps_the_pin() {
    for store in stores() {
        let ws = Workspace::new(store);
        let (mut parent, parent_id, mut t) = cache_parent_reading_a(&ws).await;
        let read = toolcall_id(&parent, "r1");
        assert!(parent.pin(&read).ok);
        t.call("p1", "pin", json!({"id": "t1"}), "pinned t1");
        // The call and the answer observed after it land in one write.
        let call = parent.ingest_and_assemble(&t.messages).unwrap();
        t.assistant("answer", &[]);
        assert_eq!(parent.observe_messages(&t.messages).unwrap(), 1);
        parent.flush().await.unwrap();
        let at_fork = parent.snapshot();
        assert_eq!(at_fork.pinned_set, vec![read.clone()]);
        // The call is still what the store says it showed.
        assert_eq!(parent.reconstruct_call(1).await.unwrap(), call);
        let messages = t.messages.clone();
        t.user("second")
            .call("x2", "bash", json!({"command": "ls -l"}), "LATER-OUT");
        parent.transform_context(&t.messages).await.unwrap();

        let child = fork(
            &ws,
            cache_opts(&unique_id("fork-child")),
            &parent_id,
            &messages,
        )
        .await;
        assert_eq!(
            child.snapshot(),
            at_fork,
            "the parent's state at the answer"
        );
        assert_eq!(child.turn_count(), parent.turn_count() - 1);
    }
}

/// The parent closed right after the call at the fork point (a restart
/// before its next call): that call's record was stored without its
/// transaction (the flush receipt came after the last write), yet it is the
/// fork point — not the call before it, whose state lacks what this call
/// ingested (random `forks` sessions: a file the model wrote there was not
/// known as seen, and its later change was never told).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_at_the_call_before_a_parent_restart_starts_there() {
    for store in stores() {
        let ws = Workspace::new(store);
        let (mut parent, parent_id, mut t) = cache_parent_reading_a(&ws).await;
        t.call("x1", "bash", json!({"command": "ls"}), "LS-OUT");
        let at_fork = parent.transform_context(&t.messages).await.unwrap();
        let stats = parent.cache_stats();
        t.assistant("answer", &[]);
        let messages = t.messages.clone();
        parent.close().await.unwrap();
        let mut parent = ws.open(cache_opts(&parent_id)).await;
        t.user("second")
            .call("x2", "bash", json!({"command": "ls -l"}), "LATER-OUT");
        parent.transform_context(&t.messages).await.unwrap();
        parent.close().await.unwrap();

        let mut child = fork(
            &ws,
            cache_opts(&unique_id("fork-child")),
            &parent_id,
            &messages,
        )
        .await;
        assert_eq!(
            child.cache_stats(),
            stats,
            "the parent's state at its second call"
        );
        let out = prompt_after(&mut child, &messages, "in the fork").await;
        assert_eq!(out[..at_fork.len()], at_fork[..]);
    }
}

/// A fork of a fork at the point the first was forked (pi: `/fork` in the
/// child onto its first own prompt, before any call of its own): the
/// grandchild starts from the child's seed — the grandparent's state there —
/// not empty, so it continues that context and a change to a file since is
/// told (random `forks` sessions: the old read shown as current).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_of_a_fork_at_its_seed_starts_from_the_seed() {
    for store in stores() {
        let ws = Workspace::new(store);
        let (mut parent, parent_id, mut t) = cache_parent_reading_a(&ws).await;
        t.call("x1", "bash", json!({"command": "ls"}), "LS-OUT");
        let at_fork = parent.transform_context(&t.messages).await.unwrap();
        let stats = parent.cache_stats();
        t.assistant("answer", &[]);
        let messages = t.messages.clone();
        parent.close().await.unwrap();

        let child_id = unique_id("fork-child");
        let mut child = fork(&ws, cache_opts(&child_id), &parent_id, &messages).await;
        assert_eq!(child.cache_stats(), stats);
        child.close().await.unwrap();

        ws.write("a.txt", "ALPHA-CHANGED");
        let mut grandchild = fork(
            &ws,
            cache_opts(&unique_id("fork-grandchild")),
            &child_id,
            &messages,
        )
        .await;
        assert_eq!(grandchild.cache_stats(), stats, "the child's seed");
        let out = prompt_after(&mut grandchild, &messages, "in the fork of the fork").await;
        assert_eq!(out[..at_fork.len()], at_fork[..], "the context continues");
        assert!(
            texts(&out)
                .iter()
                .any(|x| x.contains("CHANGED") && x.contains("ALPHA-CHANGED")),
            "the change is told: {:#?}",
            texts(&out)
        );
    }
}

/// `/tree` in a fork back onto its fork point, after the fork (restarted
/// once) read and edited a file the model had written before the fork: the
/// seed's context shows the written text, so the edit made on the branch
/// left is told.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_back_at_its_fork_point_tells_the_edits_of_the_branch_left() {
    for store in stores() {
        let ws = Workspace::new(store);
        let (mut parent, parent_id, mut t) = cache_parent_reading_a(&ws).await;
        ws.write("b.txt", "BRAVO-WRITTEN");
        parent.observe_write("b.txt").await.unwrap();
        t.call(
            "w1",
            "write",
            json!({"path": "b.txt", "content": "BRAVO-WRITTEN"}),
            "Successfully wrote 13 bytes to b.txt",
        );
        parent.transform_context(&t.messages).await.unwrap();
        t.assistant("answer", &[]);
        let messages = t.messages.clone();
        // The parent goes on past the fork point.
        t.user("second")
            .call("x2", "bash", json!({"command": "ls"}), "LS");
        parent.transform_context(&t.messages).await.unwrap();
        parent.close().await.unwrap();

        let child_id = unique_id("fork-child");
        let mut child = fork(&ws, cache_opts(&child_id), &parent_id, &messages).await;
        child.close().await.unwrap();
        let mut child = ws.open(cache_opts(&child_id)).await;
        let mut c = Transcript::default();
        c.messages = messages.clone();
        c.user("edit it");
        child.read("b.txt").await.unwrap();
        c.call("r2", "read", json!({"path": "b.txt"}), "BRAVO-WRITTEN");
        child.transform_context(&c.messages).await.unwrap();
        ws.write("b.txt", "BRAVO-EDITED");
        child.observe_edit("b.txt").await.unwrap();
        c.call(
            "e1",
            "edit",
            json!({"path": "b.txt", "oldText": "WRITTEN", "newText": "EDITED"}),
            "Successfully replaced text in b.txt.",
        );
        child.transform_context(&c.messages).await.unwrap();
        let (mut child, moved) = child
            .rewind(
                &messages,
                &CheckpointRequest::new(Trigger::TurnBoundary, "pi/test"),
            )
            .await
            .unwrap();
        assert_eq!(moved, Some(None), "back at the seed");
        let out = prompt_after(&mut child, &messages, "something else").await;
        assert!(
            texts(&out)
                .iter()
                .any(|x| x.starts_with("CHANGED") && x.contains("BRAVO-EDITED")),
            "the edit is told: {:#?}",
            texts(&out)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_parent_state_at_the_fork_point_the_child_starts_empty() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut t = Transcript::default();
        t.user("first")
            .call("x1", "bash", json!({"command": "ls"}), "LS-OUT");
        // An unknown parent.
        let mut child = fork(
            &ws,
            SessionOptions::new(unique_id("fork-child")),
            "no-such-parent",
            &t.messages,
        )
        .await;
        assert_eq!(child.turn_count(), 0);
        child.transform_context(&t.messages).await.unwrap();
        assert_eq!(own_toolcalls(&child), vec![toolcall_id(&child, "x1")]);

        // A parent whose first call came after the fork point.
        let parent_id = unique_id("fork-parent");
        let mut p = ws.open(SessionOptions::new(&parent_id)).await;
        let mut later = t.clone();
        later.user("second");
        p.transform_context(&later.messages).await.unwrap();
        let child = fork(
            &ws,
            SessionOptions::new(unique_id("fork-child")),
            &parent_id,
            &t.messages,
        )
        .await;
        assert_eq!(child.turn_count(), 0);
        assert_eq!(child.snapshot().session_index, Vec::<String>::new());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_fork_arguments_are_coded_errors() {
    let store = stores().remove(0);
    let ws = Workspace::new(store);
    for (child, parent) in [("c", "c"), ("c", ""), ("", "p"), ("c", "p\u{0}")] {
        let e = Session::open_fork(
            ws.store.clone(),
            ws.indexer.clone(),
            SessionOptions::new(child),
            parent,
            &[],
        )
        .await
        .unwrap_err();
        assert_eq!(e.code(), "INVALID_ARGUMENT", "{child:?} {parent:?}: {e}");
    }
}

/// pi compacts a long first turn right after its prompt: the summary takes
/// the prompt's place, the array keeps its length and its last message. The
/// engine took that for the array it had consumed and never read the
/// summary, so the parent's chat held no message the child's transcript
/// starts with: the fork found no fork point and started empty (random
/// sessions, default budgets with compactions and forks: seeds 652 and 656
/// lost a pin).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_after_a_compaction_of_the_first_prompt_alone_keeps_the_parents_state() {
    for store in stores() {
        for restart in [false, true] {
            let ws = Workspace::new(store.clone());
            let (mut parent, parent_id, mut t) = cache_parent_reading_a(&ws).await;
            let read = toolcall_id(&parent, "r1");
            assert!(parent.pin(&read).ok);
            t.call("p1", "pin", json!({"id": "t1"}), "pinned t1");
            parent.transform_context(&t.messages).await.unwrap();
            t.messages[0] = json!({"role": "compactionSummary", "summary": "SUMMARY-OF-THE-PROMPT", "tokensBefore": 1000, "timestamp": 0});
            t.call("x1", "bash", json!({"command": "ls"}), "LS-OUT");
            let out = parent.transform_context(&t.messages).await.unwrap();
            assert_eq!(occurrences(&out, "SUMMARY-OF-THE-PROMPT"), 1);
            t.assistant("answer", &[]);
            parent.observe_messages(&t.messages).unwrap();
            if restart {
                parent.close().await.unwrap();
                parent = ws.open(cache_opts(&parent_id)).await;
            }
            let at_fork = parent.snapshot();
            let messages = t.messages.clone();
            t.user("second")
                .call("x2", "bash", json!({"command": "ls -l"}), "LATER-OUT");
            parent.transform_context(&t.messages).await.unwrap();
            parent.close().await.unwrap();
            let child = fork(
                &ws,
                cache_opts(&unique_id("fork-child")),
                &parent_id,
                &messages,
            )
            .await;
            assert_eq!(child.snapshot(), at_fork, "restart {restart}");
            assert_eq!(child.snapshot().pinned_set, vec![read]);
        }
    }
}
