//! Looking into a store from outside (session::inspect): sessions listed
//! without knowing their ids, a session opened read-only writes nothing and
//! leaves files alone, its objects under the model's ids, and call
//! summaries equal to what the live session returned. Every backend
//! (embedded; XTDB when `SCM_TEST_XTDB_URL` is set).

mod session_support;

use scm_core::session::inspect::{list_sessions, message_tokens, CallSummary};
use scm_core::session::{CachePolicy, Layout, Session, SessionOptions};
use serde_json::{json, Value};
use session_support::*;

fn cache_opts(id: &str) -> SessionOptions {
    let mut o = SessionOptions::new(id);
    o.layout = Layout::Cache;
    o.cache = CachePolicy {
        high: 300,
        low: 100,
        fold: 0,
        ..Default::default()
    };
    o
}

fn body(tag: &str, lines: usize) -> String {
    (0..lines)
        .map(|i| format!("{tag} line {i:03} of the output, padded to a realistic width"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A cache-layout session of `calls` model calls (each a bash call with a
/// long output, so epochs happen); returns the session closed and what each
/// call returned.
async fn recorded(ws: &Workspace, id: &str, calls: usize) -> Vec<Vec<Value>> {
    ws.write("a.txt", "alpha\n");
    let mut s = ws.open(cache_opts(id)).await;
    let mut t = Transcript::default();
    t.user("look around");
    let r = s.read("a.txt").await.unwrap();
    assert!(r.ok, "{r:?}");
    let mut outs = vec![s.transform_context(&t.messages).await.unwrap()];
    for i in 1..calls {
        t.call(
            &format!("c{i}"),
            "bash",
            json!({"command": format!("echo {i}")}),
            &body(&format!("out{i}"), 20),
        );
        outs.push(s.transform_context(&t.messages).await.unwrap());
    }
    s.close().await.unwrap();
    outs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_listed_with_calls_and_times() {
    for store in stores() {
        let ws = Workspace::new(store.clone());
        let (a, b) = (unique_id("inspect-list-a"), unique_id("inspect-list-b"));
        let outs_a = recorded(&ws, &a, 3).await;
        // 20 calls: the records fill more than one page.
        let outs_b = recorded(&ws, &b, 20).await;
        let all = list_sessions(&*store).await.unwrap();
        let sa = all.iter().find(|s| s.session_id == a).expect("a listed");
        let sb = all.iter().find(|s| s.session_id == b).expect("b listed");
        assert_eq!((sa.calls, sb.calls), (3, 20), "{}", store.kind());
        assert!(sa.started <= sa.last_activity && sa.started <= sb.started);
        assert!(sa.objects >= 1, "a.txt and the bash calls: {sa:?}");
        // The last call's tokens come from its record: no rebuild.
        let last = |outs: &[Vec<Value>]| outs.last().unwrap().iter().map(message_tokens).sum();
        assert_eq!(sa.last_call_tokens, Some(last(&outs_a)));
        assert_eq!(sb.last_call_tokens, Some(last(&outs_b)));
        let ia = all.iter().position(|s| s.session_id == a).unwrap();
        let ib = all.iter().position(|s| s.session_id == b).unwrap();
        assert!(ia < ib, "oldest first");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_open_writes_nothing_and_summarises_every_call() {
    for store in stores() {
        let ws = Workspace::new(store.clone());
        let id = unique_id("inspect-ro");
        let outs = recorded(&ws, &id, 6).await;
        // A changed file would make a normal resume write a new version.
        ws.write("a.txt", "alpha changed\n");
        // Other tests write to a shared XTDB node meanwhile: count this
        // session's versions, not the store's.
        let watched = [
            format!("session:{id}"),
            format!("chat:{id}"),
            ws.file_id("a.txt"),
        ];
        let mut before = Vec::new();
        for w in &watched {
            before.push(store.history(w).await.unwrap().len());
        }
        // Default options: the layout comes from the stored records.
        let mut s =
            Session::open_read_only(store.clone(), ws.indexer.clone(), SessionOptions::new(&id))
                .await
                .unwrap();
        assert!(s.is_read_only());
        assert_eq!(s.layout(), Layout::Cache);
        let sums = s.call_summaries(0, usize::MAX).await.unwrap();
        assert_eq!(sums.len(), outs.len());
        for (sum, out) in sums.iter().zip(&outs) {
            assert_eq!(sum.messages, out.len(), "call {}", sum.call);
            let tokens: u64 = out.iter().map(message_tokens).sum();
            assert_eq!(sum.tokens, tokens, "call {}", sum.call);
            assert!(sum.cached_tokens <= sum.tokens);
        }
        assert_eq!(sums[0].cached_tokens, 0, "nothing before the first call");
        assert!(
            sums[1].cached_tokens > 0,
            "the second call repeats the first's start"
        );
        assert!(
            sums.iter().map(|c| c.epochs).sum::<usize>() >= 1,
            "small thresholds collapse: {sums:?}"
        );
        // pi alone: the whole transcript, growing; collapses keep the
        // manager's context below it by the end.
        assert!(sums
            .windows(2)
            .all(|w| w[0].transcript_tokens < w[1].transcript_tokens));
        let last = sums.last().unwrap();
        assert!(last.transcript_tokens > last.tokens, "{last:?}");
        // The outputs in full: 5 outputs of ~1140 chars at least.
        assert!(last.transcript_tokens >= 5 * 1100 / 4, "{last:?}");
        let tail = s.call_summaries(4, 6).await.unwrap();
        assert_eq!(
            tail,
            sums[4..].to_vec(),
            "a range equals the same calls of the whole"
        );
        // With what the model was sent (the report's one rebuild per call):
        // the same summaries, each context the call's reconstruction.
        let with = s
            .call_summary_plan(0, usize::MAX)
            .unwrap()
            .with_context()
            .run(&*store)
            .await
            .unwrap();
        for (n, (w, sum)) in with.into_iter().zip(&sums).enumerate() {
            let context = w.context.clone().expect("the context was asked for");
            assert_eq!(context, s.reconstruct_call(n).await.unwrap(), "call {n}");
            assert_eq!(CallSummary { context: None, ..w }, *sum, "call {n}");
        }

        let lines = s.object_lines();
        let file = lines
            .iter()
            .find(|l| {
                l.entry
                    .path
                    .as_deref()
                    .is_some_and(|p| p.ends_with("a.txt"))
            })
            .expect("a.txt");
        assert!(
            file.alias.as_deref().is_some_and(|a| a.starts_with('f')),
            "{file:?}"
        );
        let bash = lines
            .iter()
            .find(|l| l.entry.tool.as_deref() == Some("bash"))
            .expect("a bash call");
        let alias = bash.alias.clone().expect("toolcall alias");
        assert!(alias.starts_with('t'));
        assert_eq!(s.resolve_id(&alias).unwrap(), bash.entry.id);
        assert_eq!(s.resolve_id(&bash.entry.id).unwrap(), bash.entry.id);
        assert_eq!(
            s.resolve_id("zz-no-such").unwrap_err().code(),
            "UNKNOWN_OBJECT"
        );

        s.close().await.unwrap();
        let mut after = Vec::new();
        for w in &watched {
            after.push(store.history(w).await.unwrap().len());
        }
        assert_eq!(after, before, "{}: no write", store.kind());
    }
}

/// Each call's record keeps the tokens the session report counts for it, on
/// both ways a context is handed over: whole (`transform_context`) and as a
/// delta against the previous output (the binding's way; epochs rewrite the
/// older messages, so deltas keep a prefix and count the rest).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_record_keeps_the_tokens_the_report_counts() {
    for store in stores() {
        let ws = Workspace::new(store.clone());
        let whole = unique_id("inspect-tokens-whole");
        recorded(&ws, &whole, 8).await;
        let delta = unique_id("inspect-tokens-delta");
        let spec = unique_id("inspect-tokens-spec");
        // As under pi: the harness sends its own system prompt, which the
        // report counts (the rebuilt call is headed by it).
        let harness = unique_id("inspect-tokens-harness");
        let mut harness_opts = cache_opts(&harness);
        harness_opts.render.emit_system_message = false;
        for (id, opts) in [
            (&delta, cache_opts(&delta)),
            (&spec, SessionOptions::new(&spec)),
            (&harness, harness_opts),
        ] {
            let emits = opts.render.emit_system_message;
            let mut s = ws.open(opts.clone()).await;
            if !emits {
                s.set_system_prompt("You are pi. \"Quoted\", tabbed\t, ünïcode 🙂.")
                    .unwrap();
            }
            let mut t = Transcript::default();
            t.user("look around");
            let mut have = None;
            for i in 0..8 {
                if i > 0 {
                    let out = body(&format!("{id} out{i}"), 20);
                    t.call(&format!("c{i}"), "bash", json!({"command": "ls"}), &out);
                }
                // The harness's prompt changes once: nothing of call 4 is cached.
                if !emits && i == 4 {
                    s.set_system_prompt("You are pi, changed.").unwrap();
                }
                // A caller that missed an output gets it whole; what the
                // model saw still repeats the previous call's start.
                let held = if i == 5 { None } else { have };
                let d = s.ingest_and_assemble_delta(&t.messages, held).unwrap();
                have = Some(d.seq);
                s.flush().await.unwrap();
            }
            s.close().await.unwrap();
            // Resumed: its first call has no previous output to compare with.
            let mut s = ws.open(opts).await;
            for i in 8..10 {
                let out = body(&format!("{id} out{i}"), 20);
                t.call(&format!("c{i}"), "bash", json!({"command": "ls"}), &out);
                let d = s.ingest_and_assemble_delta(&t.messages, have).unwrap();
                have = Some(d.seq);
                s.flush().await.unwrap();
            }
            s.close().await.unwrap();
        }
        for id in [whole.clone(), delta, spec.clone(), harness.clone()] {
            let s = Session::open_read_only(
                store.clone(),
                ws.indexer.clone(),
                SessionOptions::new(&id),
            )
            .await
            .unwrap();
            let sums = s.call_summaries(0, usize::MAX).await.unwrap();
            let chat = scm_core::session::paged::get(&*store, &format!("chat:{id}"))
                .await
                .unwrap()
                .unwrap();
            let kept: Vec<Option<u64>> = chat["model_calls"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["tokens"].as_u64())
                .collect();
            let counted: Vec<Option<u64>> = sums.iter().map(|c| Some(c.tokens)).collect();
            assert_eq!(kept, counted, "{id} on {}", store.kind());
            // Handed over as deltas, the records keep the message count and
            // the cached estimate too (not the first call after the resume's:
            // no previous output to compare with), equal to what rebuilding
            // every call gives.
            let field = |k: &str| -> Vec<bool> {
                let calls = chat["model_calls"].as_array().unwrap();
                calls.iter().map(|r| r.get(k).is_some()).collect()
            };
            let expected: Vec<bool> = (0..sums.len()).map(|n| id != whole && n != 8).collect();
            assert_eq!(field("cached_tokens"), expected, "{id}");
            let delta = (0..sums.len()).map(|_| id != whole).collect::<Vec<_>>();
            assert_eq!(field("messages"), delta, "{id}");
            let rebuilt: Vec<CallSummary> = s
                .call_summary_plan(0, usize::MAX)
                .unwrap()
                .with_context()
                .run(&*store)
                .await
                .unwrap()
                .into_iter()
                .map(|c| CallSummary { context: None, ..c })
                .collect();
            assert_eq!(sums, rebuilt, "{id} on {}", store.kind());
            if id == harness {
                assert_eq!(sums[4].cached_tokens, 0, "the system prompt changed");
            }
            // The spec layout's pool message heads every call and changes.
            assert!(
                id == spec || sums[5].cached_tokens > 0,
                "{id}: {:?}",
                sums[5]
            );
            assert!(
                id == spec || sums.iter().map(|c| c.epochs).sum::<usize>() >= 1,
                "{id}: an epoch happened"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_open_of_an_unknown_session_is_unknown_object() {
    for store in stores() {
        let ws = Workspace::new(store.clone());
        let e = Session::open_read_only(
            store.clone(),
            ws.indexer.clone(),
            SessionOptions::new(unique_id("nobody")),
        )
        .await
        .unwrap_err();
        assert_eq!(e.code(), "UNKNOWN_OBJECT");
    }
}
