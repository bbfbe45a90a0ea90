//! Context commits (issue 11 "Storage"): bytes per commit against session
//! length, materialize of a long chain, resolve over many commits. Embedded
//! store (in memory); figures in docs/benchmarks.md.
//!
//! `cargo bench -p scm-core --bench commits`
//!
//! - **bytes per commit**: a session of 1,000 turns (user prompt, a bash tool
//!   call with ~800 B of output, an answer) with a turn-boundary checkpoint
//!   after each; the bytes of the documents each checkpoint writes (commit,
//!   timeline head and pages; the chat itself is written by the session's
//!   flush, counted apart), averaged per 100 turns. Flat = the commit layer
//!   does not copy history.
//! - **materialize**: the 500-turn chain (2,000 messages) to the root, cold
//!   (walk + one chat read + render + store the snapshot) and cached.
//! - **resolve**: 10,000 commits on one session/principal timeline, then
//!   1,000 resolves at spread times.
//!
//! Env: SCM_BENCH_TURNS (default 1000), SCM_BENCH_COMMITS (default 10000).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use scm_core::commits::{
    self, Artifact, CommitType, MaterializeOptions, NewCommit, OutputFormat, Stop, TimelineOf,
    Trigger,
};
use scm_core::fs::indexer::{Indexer, IndexerOptions};
use scm_core::fs::resolver::Resolver;
use scm_core::session::{CheckpointRequest, Session, SessionOptions};
use scm_core::store::embedded::{format_rfc3339_millis, EmbeddedStore};
use scm_core::store::{AsOf, Document, Store, TxOp, TxReceipt, Version};
use serde_json::{json, Value};

/// The embedded store, counting the bytes of the documents put.
struct Counting {
    inner: EmbeddedStore,
    bytes: AtomicU64,
}

#[async_trait]
impl Store for Counting {
    fn kind(&self) -> &'static str {
        "embedded"
    }
    async fn submit(&self, ops: Vec<TxOp>) -> scm_core::Result<TxReceipt> {
        let n: usize = ops
            .iter()
            .map(|op| match op {
                TxOp::Put(d) => serde_json::to_string(d).map_or(0, |s| s.len()),
                TxOp::Match { .. } => 0,
            })
            .sum();
        self.bytes.fetch_add(n as u64, Ordering::Relaxed);
        self.inner.submit(ops).await
    }
    async fn get(&self, id: &str) -> scm_core::Result<Option<Document>> {
        self.inner.get(id).await
    }
    async fn get_many(&self, ids: &[String]) -> scm_core::Result<Vec<Document>> {
        self.inner.get_many(ids).await
    }
    async fn get_as_of(&self, id: &str, a: AsOf<'_>) -> scm_core::Result<Option<Document>> {
        self.inner.get_as_of(id, a).await
    }
    async fn history(&self, id: &str) -> scm_core::Result<Vec<Version>> {
        self.inner.history(id).await
    }
    async fn latest_tx_id(&self) -> scm_core::Result<Option<i64>> {
        self.inner.latest_tx_id().await
    }
    async fn ids_of_type(&self, ty: &str) -> scm_core::Result<Vec<String>> {
        self.inner.ids_of_type(ty).await
    }
    async fn counts(&self) -> scm_core::Result<scm_core::store::StoreCounts> {
        self.inner.counts().await
    }
    fn submitted_tx_count(&self) -> u64 {
        self.inner.submitted_tx_count()
    }
}

fn env_n(key: &str, default: usize) -> usize {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn turn(k: usize) -> Vec<Value> {
    let ts = 1_700_000_000_000i64 + k as i64 * 10;
    let call = format!("call-{k}");
    let meta = json!({"api": "faux", "provider": "faux", "model": "faux-1", "usage": {"input": 10, "output": 5}});
    let with = |mut m: Value| {
        for (k, v) in meta.as_object().unwrap() {
            m[k] = v.clone();
        }
        m
    };
    vec![
        json!({"role": "user", "content": format!("question {k}: what does line {k} do?"), "timestamp": ts}),
        with(json!({"role": "assistant", "content": [
            {"type": "text", "text": format!("checking {k}")},
            {"type": "toolCall", "id": call, "name": "bash", "arguments": {"command": format!("sed -n {k}p src/main.rs")}}
        ], "stopReason": "toolUse", "timestamp": ts + 1})),
        json!({"role": "toolResult", "toolCallId": call, "toolName": "bash",
            "content": [{"type": "text", "text": "x".repeat(800)}], "isError": false, "timestamp": ts + 2}),
        with(
            json!({"role": "assistant", "content": [{"type": "text", "text": format!("line {k} parses the header")}],
            "stopReason": "stop", "timestamp": ts + 3}),
        ),
    ]
}

async fn bytes_and_materialize(turns: usize) {
    let store = Arc::new(Counting {
        inner: EmbeddedStore::open_in_memory().unwrap(),
        bytes: AtomicU64::new(0),
    });
    let dyn_store: Arc<dyn Store> = store.clone();
    let resolver = Arc::new(Resolver::new(
        "fs-bench".into(),
        std::env::temp_dir(),
        vec![],
        true,
    ));
    let indexer = Arc::new(Indexer::new(
        dyn_store.clone(),
        resolver,
        IndexerOptions::default(),
    ));
    let mut opts = SessionOptions::new("bench-commits");
    opts.layout = scm_core::session::Layout::Cache;
    let mut s = Session::open(dyn_store.clone(), indexer, opts)
        .await
        .unwrap();
    let mut t: Vec<Value> = Vec::new();
    let req = CheckpointRequest::new(Trigger::TurnBoundary, "pi/bench");
    let (mut commit_bytes, mut chat_bytes, mut commit_ms) = (0u64, 0u64, 0f64);
    let mut ids = Vec::new();
    println!("bytes per commit (commit layer) and per turn (session flush), per 100 turns:");
    for k in 0..turns {
        t.extend(turn(k));
        let b0 = store.bytes.load(Ordering::Relaxed);
        s.transform_context(&t).await.unwrap();
        s.flush().await.unwrap();
        let b1 = store.bytes.load(Ordering::Relaxed);
        let t0 = Instant::now();
        let c = s.checkpoint(&req).await.unwrap().unwrap();
        commit_ms += t0.elapsed().as_secs_f64() * 1e3;
        let b2 = store.bytes.load(Ordering::Relaxed);
        chat_bytes += b1 - b0;
        commit_bytes += b2 - b1;
        ids.push(c.id);
        if (k + 1) % 100 == 0 {
            println!(
                "  turns {:>4}-{:>4}: {:>6.0} B/commit   {:>6.0} B/turn session   checkpoint {:.2} ms",
                k - 98,
                k + 1,
                commit_bytes as f64 / 100.0,
                chat_bytes as f64 / 100.0,
                commit_ms / 100.0
            );
            commit_bytes = 0;
            chat_bytes = 0;
            commit_ms = 0.0;
        }
    }
    let n = turns.min(500);
    let tip = &ids[n - 1];
    for (name, stop) in [("root", Stop::Root), ("compaction", Stop::Compaction)] {
        let o = MaterializeOptions {
            stop: stop.clone(),
            format: OutputFormat::PiMessages,
        };
        let t0 = Instant::now();
        let m = commits::materialize(&*dyn_store, tip, &o).await.unwrap();
        let cold = t0.elapsed();
        let t1 = Instant::now();
        let m2 = commits::materialize(&*dyn_store, tip, &o).await.unwrap();
        let warm = t1.elapsed();
        assert!(m2.cached && !m.cached);
        assert_eq!(m.messages.as_ref().unwrap().len(), n * 4);
        println!(
            "materialize {n}-commit chain (stop {name}, {} messages): cold {:.1} ms, cached {:.1} ms",
            m.message_count,
            cold.as_secs_f64() * 1e3,
            warm.as_secs_f64() * 1e3
        );
    }
}

async fn resolve(n: usize) {
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open_in_memory().unwrap());
    let base = 1_790_000_000_000i64;
    let mut parent: Option<String> = None;
    let t0 = Instant::now();
    for k in 0..n {
        let c = commits::create(
            &*store,
            NewCommit {
                parent: parent.clone(),
                commit_type: CommitType::Delta,
                artifact: Artifact::Messages {
                    messages: vec![json!({"role": "user", "content": format!("m{k}")})],
                },
                template: "bench/1".into(),
                principal: Some("bench@host".into()),
                machine: "m".into(),
                session_id: "bench-resolve".into(),
                trigger: Trigger::Explicit,
                message_count: 1,
                token_count: 1,
                created_at: Some(format_rfc3339_millis(base + k as i64 * 1000)),
                summary: None,
                tip_to: Some(0),
                expect_tip: parent.clone(),
            },
        )
        .await
        .unwrap();
        parent = Some(c.id);
    }
    let build = t0.elapsed();
    let q = 1000;
    let mut lat = Vec::with_capacity(q);
    for i in 0..q {
        let k = (i * 7919) % n;
        let at = format_rfc3339_millis(base + k as i64 * 1000 + 500);
        let t = Instant::now();
        let got = commits::resolve(&*store, &TimelineOf::Principal("bench@host".into()), &at)
            .await
            .unwrap();
        lat.push(t.elapsed().as_secs_f64() * 1e6);
        assert!(got.is_some());
    }
    lat.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "resolve over {n} commits: p50 {:.0} us, p99 {:.0} us, max {:.0} us ({q} queries; building the timeline took {:.1} s, {:.2} ms per commit)",
        lat[q / 2],
        lat[q * 99 / 100],
        lat[q - 1],
        build.as_secs_f64(),
        build.as_secs_f64() * 1e3 / n as f64
    );
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        bytes_and_materialize(env_n("SCM_BENCH_TURNS", 1000)).await;
        resolve(env_n("SCM_BENCH_COMMITS", 10_000)).await;
    });
}
