//! Resume (SSOT §3.6, implementation-plan §5 "Session resume") and trackers
//! (SSOT §5.6: watchers update objects and the cache, never the sets).
//! A resumed session is a new `Session` object on the same store, as a new
//! process would open it.

mod session_support;

use std::time::{Duration, Instant};

use scm_core::model::chat_object_id;
use scm_core::session::{CollapsePolicy, Layout, Session, SessionOptions};
use serde_json::json;
use session_support::*;

const DEADLINE: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_session_has_the_same_sets_and_reingests_nothing() {
    for store in stores() {
        let ws = Workspace::new(store);
        let id = unique_id("resume");
        let mut t = Transcript::default();
        ws.write("a.txt", "alpha");
        let (snap, out) = {
            let mut s = ws.open(SessionOptions::new(&id)).await;
            s.read("a.txt").await.unwrap();
            t.user("u")
                .call("c1", "bash", json!({"command": "x"}), "out-1");
            t.user("v")
                .call("c2", "bash", json!({"command": "y"}), "out-2");
            let out = s.transform_context(&t.messages).await.unwrap();
            assert!(s.pin("c1").ok);
            s.close().await.unwrap();
            (s.snapshot(), out)
        };
        let mut s = ws.open(SessionOptions::new(&id)).await;
        assert_eq!(s.snapshot(), snap);
        assert_eq!(s.turn_count(), 2);
        // pi hands the full array again (new process): nothing is re-ingested.
        let writes = ws.store.submitted_tx_count();
        let again = s.transform_context(&t.messages).await.unwrap();
        assert_eq!(s.snapshot(), snap);
        assert_eq!(s.turn_count(), 2);
        assert_eq!(
            ws.store.submitted_tx_count() - writes,
            1,
            "one write: the call record"
        );
        // Pinning c1 made it the most recently activated; otherwise identical.
        assert_eq!(again.len(), out.len());
        assert_eq!(again[..again.len() - 3], out[..out.len() - 3]);
        // A new message after resume is ingested normally.
        t.call("c3", "bash", json!({"command": "z"}), "out-3");
        s.transform_context(&t.messages).await.unwrap();
        assert!(s.snapshot().session_index.contains(&toolcall_id(&s, "c3")));
        assert_eq!(
            ws.store
                .history(&toolcall_id(&s, "c1"))
                .await
                .unwrap()
                .len(),
            1
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_with_a_reordered_array_still_ingests_nothing_old() {
    for store in stores() {
        let ws = Workspace::new(store);
        let id = unique_id("resume-replaced");
        let mut t = Transcript::default();
        t.user("u")
            .call("c1", "bash", json!({"command": "x"}), "out-1");
        {
            let mut s = ws.open(SessionOptions::new(&id)).await;
            s.transform_context(&t.messages).await.unwrap();
            s.close().await.unwrap();
        }
        let mut s = ws.open(SessionOptions::new(&id)).await;
        // A compacted view of the same conversation plus one new prompt.
        let mut msgs = vec![json!({"role": "compactionSummary", "summary": "s", "timestamp": 0})];
        msgs.extend_from_slice(&t.messages[1..]);
        msgs.push(json!({"role": "user", "content": "new", "timestamp": 10}));
        s.transform_context(&msgs).await.unwrap();
        assert_eq!(s.turn_count(), 2);
        assert_eq!(s.snapshot().session_index.len(), 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_agent_deactivated_stays_deactivated_after_resume() {
    for store in stores() {
        let ws = Workspace::new(store);
        let id = unique_id("resume-deact");
        ws.write("a.txt", "alpha");
        {
            let mut s = ws.open(SessionOptions::new(&id)).await;
            s.read("a.txt").await.unwrap();
            assert!(s.deactivate("a.txt").ok);
            s.close().await.unwrap();
        }
        ws.write("a.txt", "alpha changed on disk");
        let mut s = ws.open(SessionOptions::new(&id)).await;
        let fid = ws.file_id("a.txt");
        assert!(!s.snapshot().active_set.contains(&fid));
        let out = s.transform_context(&[]).await.unwrap();
        assert!(active_ids(&out).is_empty());
        assert!(pool_text(&out).contains(&format!("- id={fid} file path=a.txt type=txt chars=21")));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_writes_new_versions_for_changed_files_and_deletions_for_removed_ones() {
    for store in stores() {
        let ws = Workspace::new(store);
        let id = unique_id("resume-reconcile");
        ws.write("same.txt", "same");
        ws.write("changed.txt", "before");
        ws.write("gone.txt", "soon gone");
        {
            let mut s = ws.open(SessionOptions::new(&id)).await;
            for p in ["same.txt", "changed.txt", "gone.txt"] {
                s.read(p).await.unwrap();
            }
            s.close().await.unwrap();
        }
        ws.write("changed.txt", "after");
        ws.remove("gone.txt");
        let mut s = ws.open(SessionOptions::new(&id)).await;
        let h = |p: &str| ws.file_id(p);
        assert_eq!(
            ws.store.history(&h("same.txt")).await.unwrap().len(),
            1,
            "unchanged → no write"
        );
        let changed = ws.store.history(&h("changed.txt")).await.unwrap();
        assert_eq!(changed.len(), 2);
        assert_eq!(changed[1].doc.as_ref().unwrap()["content"], "after");
        let gone = ws.store.history(&h("gone.txt")).await.unwrap();
        assert_eq!(gone.len(), 2, "history is kept");
        let last = gone[1].doc.as_ref().unwrap();
        assert_eq!(last["state"], "deleted");
        assert!(last["content"].is_null() && last["file_hash"].is_null());
        // Sets untouched; the active deleted file shows a note instead of content.
        let out = s.transform_context(&[]).await.unwrap();
        assert_eq!(active_ids(&out).len(), 3);
        assert_eq!(occurrences(&out, "after"), 1);
        assert_eq!(
            occurrences(&out, "[deleted] file path=gone.txt no longer exists"),
            1
        );
        assert!(pool_text(&out).contains("path=gone.txt type=txt chars=0 [deleted]"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_reads_stubs_whose_source_exists_and_deletes_vanished_ones() {
    for store in stores() {
        let ws = Workspace::new(store);
        for upgrade in [true, false] {
            // Separate files per round: file objects are shared by path.
            let (p1, p2) = (format!("s1-{upgrade}.txt"), format!("s2-{upgrade}.txt"));
            let id = unique_id("resume-stubs");
            ws.write(&p1, "stub one");
            ws.write(&p2, "stub two");
            {
                let mut s = ws.open(SessionOptions::new(&id)).await;
                s.observe_discovery("find", &format!("{p1}\n{p2}"), &ws.root.to_string_lossy())
                    .await
                    .unwrap();
                s.close().await.unwrap();
            }
            ws.remove(&p2);
            let mut o = SessionOptions::new(&id);
            o.resume_upgrades_stubs = upgrade;
            let s = ws.open(o).await;
            let snap = s.snapshot();
            let state = |p: &str| {
                let fid = ws.file_id(p);
                snap.metadata_pool
                    .iter()
                    .find(|e| e.id == fid)
                    .unwrap()
                    .state
                    .clone()
                    .unwrap()
            };
            assert_eq!(state(&p1), if upgrade { "present" } else { "stub" });
            assert_eq!(state(&p2), "deleted");
            assert!(snap.active_set.is_empty(), "resume never activates");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_collapse_window_continues_across_resume() {
    for store in stores() {
        let ws = Workspace::new(store);
        let id = unique_id("resume-window");
        let policy = CollapsePolicy {
            per_turn: 1,
            turns_back: 2,
            ..CollapsePolicy::default()
        };
        let mut o = SessionOptions::new(&id);
        o.policy = policy;
        let mut t = Transcript::default();
        t.user("u").call("a", "bash", json!({"command": "a"}), "a");
        {
            let mut s = ws.open(o.clone()).await;
            s.transform_context(&t.messages).await.unwrap();
            s.close().await.unwrap();
        }
        let mut s = ws.open(o).await;
        t.user("v").call("b", "bash", json!({"command": "b"}), "b");
        s.transform_context(&t.messages).await.unwrap();
        let active = s.snapshot().active_set;
        assert_eq!(active, vec![toolcall_id(&s, "a"), toolcall_id(&s, "b")]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn static_references_survive_resume() {
    for store in stores() {
        let ws = Workspace::new(store);
        let id = unique_id("resume-static");
        ws.write("f.txt", "first");
        let mut t = Transcript::default();
        t.user("u")
            .call("a", "bash", json!({"command": "a"}), "out-a");
        let first = {
            let mut s = ws.open(SessionOptions::new(&id)).await;
            s.read("f.txt").await.unwrap();
            let out = s.transform_context(&t.messages).await.unwrap();
            s.close().await.unwrap();
            out
        };
        ws.write("f.txt", "second");
        let mut s = ws.open(SessionOptions::new(&id)).await;
        let now = s.transform_context(&t.messages).await.unwrap();
        assert_eq!(occurrences(&now, "second"), 1);
        assert_eq!(s.reconstruct_call(0).await.unwrap(), first);
        assert_eq!(s.reconstruct_call(1).await.unwrap(), now);
    }
}

// -------------------------------------------------------------- watcher

/// Polls the session's tracker events until `done` holds. There is no API to
/// await a filesystem notification, so this polls with a deadline.
async fn wait_for(s: &mut Session, what: &str, mut done: impl FnMut(&mut Session) -> bool) {
    let start = Instant::now();
    loop {
        s.poll_watch();
        if done(s) {
            return;
        }
        assert!(start.elapsed() < DEADLINE, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The size the metadata pool gives object `id` (None: not in the pool, or no size).
fn pool_chars(s: &Session, id: &str) -> Option<u64> {
    s.snapshot()
        .metadata_pool
        .iter()
        .find(|e| e.id == id)
        .and_then(|e| e.char_count)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watcher_events_update_the_cache_never_the_sets() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut o = SessionOptions::new(unique_id("watch"));
        o.watch = true;
        let mut s = ws.open(o).await;
        ws.write("live.txt", "v1");
        ws.write("idle.txt", "i1");
        s.read("live.txt").await.unwrap();
        s.read("idle.txt").await.unwrap();
        assert!(s.deactivate("idle.txt").ok);
        let before = s.snapshot();
        let (live, idle) = (ws.file_id("live.txt"), ws.file_id("idle.txt"));

        ws.write("live.txt", "v2 from the editor");
        ws.write("idle.txt", "i2 changed");
        wait_for(&mut s, "both updates", |s| {
            pool_chars(s, &live) == Some(18) && pool_chars(s, &idle) == Some(10)
        })
        .await;
        let after = s.snapshot();
        assert_eq!(after.active_set, before.active_set);
        assert_eq!(after.session_index, before.session_index);
        let out = s.transform_context(&[]).await.unwrap();
        assert_eq!(
            occurrences(&out, "v2 from the editor"),
            1,
            "active content follows the file"
        );
        assert_eq!(
            occurrences(&out, "i2 changed"),
            0,
            "inactive stays inactive"
        );

        ws.remove("live.txt");
        wait_for(&mut s, "the deletion", |s| {
            s.snapshot()
                .metadata_pool
                .iter()
                .any(|e| e.id == live && e.state.as_deref() == Some("deleted"))
        })
        .await;
        assert_eq!(s.snapshot().active_set, before.active_set);
        let out = s.transform_context(&[]).await.unwrap();
        assert_eq!(occurrences(&out, "[deleted] file path=live.txt"), 1);
        // Static references hold across watcher-written versions too.
        for i in 0..s.model_call_count() {
            s.reconstruct_call(i).await.unwrap();
        }
        s.close().await.unwrap();
    }
}

/// A file another session read is found whole in the store when this one
/// discovers it (a `grep` names it); the agent then pins or activates it:
/// shown now, it is followed like a read file — a change on disk is a new
/// version (random seed 116, forks: a fork from before the parent read
/// the file grepped and pinned it, and the watcher never looked at it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_discovered_file_the_store_knows_is_watched_once_shown() {
    for store in stores() {
        for op in ["pin", "activate"] {
            let ws = Workspace::new(store.clone());
            ws.write("shared.txt", "s1");
            let mut other = ws.session("watch-other").await;
            other.read("shared.txt").await.unwrap();
            let mut o = SessionOptions::new(unique_id("watch-found"));
            o.watch = true;
            o.layout = Layout::Cache;
            let mut s = ws.open(o).await;
            s.observe_bash("grep -l s1 shared.txt", "shared.txt")
                .await
                .unwrap();
            let r = if op == "pin" {
                s.pin("shared.txt")
            } else {
                s.activate("shared.txt")
            };
            assert!(r.ok, "{op}: {r:?}");
            ws.write("shared.txt", "s2 changed on disk");
            let id = ws.file_id("shared.txt");
            wait_for(&mut s, "the change", |s| pool_chars(s, &id) == Some(18)).await;
            s.close().await.unwrap();
            other.close().await.unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stubs_are_not_watched() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut o = SessionOptions::new(unique_id("watch-stub"));
        o.watch = true;
        let mut s = ws.open(o).await;
        ws.write("stub.txt", "s1");
        ws.write("probe.txt", "p1");
        s.observe_discovery("ls", "stub.txt", &ws.root.to_string_lossy())
            .await
            .unwrap();
        s.read("probe.txt").await.unwrap();
        ws.write("stub.txt", "s2 changed");
        ws.write("probe.txt", "p2 changed");
        // The probe's update proves the stub's change had time to be seen.
        let probe = ws.file_id("probe.txt");
        wait_for(&mut s, "the probe", |s| pool_chars(s, &probe) == Some(10)).await;
        assert_eq!(
            ws.store
                .history(&ws.file_id("stub.txt"))
                .await
                .unwrap()
                .len(),
            1
        );
        s.close().await.unwrap();
    }
}

/// pi's final answer of a run reaches `transform_context` only with the next
/// model call; `/tree`, a fork, a switch or quit come before it. Observed
/// messages are stored without a model call, and the next call (same process,
/// replaced array, or resumed) ingests none of them again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observed_messages_are_stored_without_a_model_call_and_never_ingested_twice() {
    for store in stores() {
        for layout in [Layout::Spec, Layout::Cache] {
            let ws = Workspace::new(store.clone());
            let id = unique_id("observe");
            let opts = || {
                let mut o = SessionOptions::new(&id);
                o.layout = layout;
                o
            };
            let mut t = Transcript::default();
            t.user("first")
                .call("c1", "bash", json!({"command": "x"}), "out-1");
            let mut s = ws.open(opts()).await;
            s.transform_context(&t.messages).await.unwrap();
            let mut done = t.clone();
            done.assistant("FINAL-ANSWER", &[]);
            assert_eq!(s.observe_messages(&done.messages).unwrap(), 1);
            assert_eq!(s.model_call_count(), 1, "observing is not a model call");
            assert!(s.has_pending());
            s.flush().await.unwrap();
            let chat = scm_core::session::paged::get(&*store, &chat_object_id(&id))
                .await
                .unwrap()
                .unwrap();
            assert_eq!(
                serde_json::to_string(&chat)
                    .unwrap()
                    .matches("FINAL-ANSWER")
                    .count(),
                1,
                "{layout:?}: the stored chat has the observed answer once"
            );
            // Again (agent_end, then session_shutdown): nothing new, nothing to write.
            assert_eq!(s.observe_messages(&done.messages).unwrap(), 0);
            assert!(!s.has_pending());
            // The tail form: the fast path, or None for a window that does not continue.
            let n = done.messages.len();
            assert_eq!(
                s.observe_messages_tail(n, n - 1, &done.messages[n - 1..], done.messages.first())
                    .unwrap(),
                Some(0)
            );
            assert_eq!(
                s.observe_messages_tail(n, n - 2, &done.messages[n - 2..], done.messages.first())
                    .unwrap(),
                None
            );

            // /tree back to "first": a replaced array without the answer, plus a new prompt.
            let mut branch = t.clone();
            branch.user("second");
            let out = s.transform_context(&branch.messages).await.unwrap();
            assert_eq!(occurrences(&out, "FINAL-ANSWER"), 1, "{layout:?}");
            assert_eq!(occurrences(&out, "second"), 1, "{layout:?}");
            let texts = texts(&out);
            let at = |needle: &str| texts.iter().position(|x| x.contains(needle)).unwrap();
            assert!(at("FINAL-ANSWER") < at("second"), "{layout:?}: pi's order");
            s.close().await.unwrap();

            // Resumed in a new process, the whole branch again: nothing re-ingested.
            let mut r = ws.open(opts()).await;
            let turns = r.turn_count();
            branch.assistant("later", &[]).user("third");
            let out = r.transform_context(&branch.messages).await.unwrap();
            assert_eq!(r.turn_count(), turns + 1, "{layout:?}");
            assert_eq!(occurrences(&out, "FINAL-ANSWER"), 1, "{layout:?}");
            assert_eq!(occurrences(&out, "out-1"), 1, "{layout:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_observed_message_changes_nothing() {
    let ws = Workspace::new(stores().remove(0));
    let mut s = ws.session("observe-bad").await;
    let mut t = Transcript::default();
    t.user("u");
    s.transform_context(&t.messages).await.unwrap();
    s.flush().await.unwrap();
    t.push(json!({"role": "assistant", "content": 7, "timestamp": 1}));
    let err = s.observe_messages(&t.messages).unwrap_err();
    assert_eq!(err.code(), "INVALID_MESSAGE");
    assert_eq!(s.cursor(), 1);
    assert!(!s.has_pending());
}

/// Two live instances on one session id (two processes resuming the same
/// session): their writes never interleave. The first to write after the
/// other read the session owns it; the other's write is refused with
/// `SESSION_SUPERSEDED`, it writes nothing more, and every operation but
/// `close` fails with that code. What is stored is one instance's session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_live_instance_of_a_session_never_interleaves_its_writes() {
    for store in stores() {
        let ws = Workspace::new(store);
        let id = unique_id("twin");
        let mut first = Transcript::default();
        first
            .user("seed")
            .call("s1", "bash", json!({"command": "s"}), "out-seed");
        {
            let mut s = ws.open(SessionOptions::new(&id)).await;
            s.transform_context(&first.messages).await.unwrap();
            s.close().await.unwrap();
        }
        let mut a = ws.open(SessionOptions::new(&id)).await;
        let mut b = ws.open(SessionOptions::new(&id)).await;
        let mut ta = first.clone();
        ta.user("from a")
            .call("a1", "bash", json!({"command": "a"}), "out-from-a");
        a.transform_context(&ta.messages).await.unwrap();
        let mut tb = first.clone();
        tb.user("from b")
            .call("b1", "bash", json!({"command": "b"}), "out-from-b");
        let err = b.transform_context(&tb.messages).await.unwrap_err();
        assert_eq!(err.code(), "SESSION_SUPERSEDED", "{err}");
        let again = b.transform_context(&tb.messages).await.unwrap_err();
        assert_eq!(again.code(), "SESSION_SUPERSEDED");
        assert_eq!(
            b.read("x.txt").await.unwrap_err().code(),
            "SESSION_SUPERSEDED"
        );
        b.close().await.unwrap();
        // The owner goes on writing.
        ta.call("a2", "bash", json!({"command": "a2"}), "out-from-a-2");
        a.transform_context(&ta.messages).await.unwrap();
        a.close().await.unwrap();
        let mut c = ws.open(SessionOptions::new(&id)).await;
        let out = serde_json::to_string(&c.transform_context(&ta.messages).await.unwrap()).unwrap();
        assert!(
            out.contains("out-from-a-2") && out.contains("out-seed"),
            "{out}"
        );
        assert!(
            !out.contains("out-from-b") && !out.contains("from b"),
            "{out}"
        );
        assert_eq!(c.turn_count(), 2);
        c.close().await.unwrap();
    }
}
