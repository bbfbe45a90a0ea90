//! Cost of `transform_context` at issue 5's scale (500 turns, 2,000 objects):
//! the sync part (ingest + assembly) and the flush, per call, at the end of
//! a long session. Ignored by default; run with
//! `cargo test --release -p scm-core --test session_perf -- --ignored --nocapture`.

mod session_support;

use std::time::{Duration, Instant};

use serde_json::json;
use session_support::*;

fn pct(v: &mut [Duration], p: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn transform_context_cost_at_500_turns_and_2000_objects() {
    let store = stores().remove(0);
    let ws = Workspace::new(store);
    let mut s = ws.session("perf").await;
    // 1,500 discovered files (stubs) …
    let listing: Vec<String> = (0..1500).map(|i| format!("src/m{i:04}.rs")).collect();
    for p in &listing {
        ws.write(p, "x");
    }
    s.observe_discovery("find", &listing.join("\n"), &ws.root.to_string_lossy())
        .await
        .unwrap();
    // … and 500 turns with one tool result each (500 toolcalls).
    let mut t = Transcript::default();
    let (mut sync, mut flush) = (Vec::new(), Vec::new());
    for turn in 0..500 {
        t.user(&format!("turn {turn}: please look at module {turn}"));
        let out = "line of output\n".repeat(40);
        t.call(
            &format!("c{turn}"),
            "bash",
            json!({"command": format!("cat src/m{turn:04}.rs")}),
            &out,
        );
        t.assistant(&format!("Module {turn} looks fine."), &[]);
        let a = Instant::now();
        let ctx = s.ingest_and_assemble_json(&t.messages).unwrap();
        let b = Instant::now();
        s.flush().await.unwrap();
        let c = Instant::now();
        if turn >= 400 {
            sync.push(b - a);
            flush.push(c - b);
        }
        assert!(!ctx.is_empty());
    }
    assert_eq!(s.snapshot().session_index.len(), 2000);
    // Assembly alone (no new messages).
    let mut only = Vec::new();
    for _ in 0..50 {
        let a = Instant::now();
        let ctx = s.ingest_and_assemble_json(&t.messages).unwrap();
        only.push(a.elapsed());
        std::hint::black_box(ctx);
    }
    let a = Instant::now();
    let p = s.take_pending().unwrap();
    let take = a.elapsed();
    s.restore_pending(p);
    println!(
        "no new messages: p50 {:?}; take_pending (builds docs) {:?}",
        pct(&mut only, 0.5),
        take
    );
    let chat = s
        .get_object(&format!("chat:{}", s.session_id()))
        .await
        .unwrap()
        .unwrap();
    let chat_bytes = serde_json::Value::Object(chat).to_string().len();
    let json = s.ingest_and_assemble_json(&t.messages).unwrap();
    println!(
        "assembled context: {} KiB, {} messages",
        json.len() / 1024,
        serde_json::from_str::<Vec<serde_json::Value>>(&json)
            .unwrap()
            .len()
    );
    println!(
        "last 100 calls (turns 400–499): ingest+assemble p50 {:?} p99 {:?}; flush p50 {:?} p99 {:?}; chat doc {} KiB",
        pct(&mut sync, 0.5),
        pct(&mut sync, 0.99),
        pct(&mut flush, 0.5),
        pct(&mut flush, 0.99),
        chat_bytes / 1024
    );
}
