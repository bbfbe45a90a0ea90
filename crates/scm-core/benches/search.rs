//! Search benchmark (issue 12): `memory::search` latency over N toolcall
//! objects (default 100,000; `SCM_BENCH_SEARCH_OBJECTS` overrides) on the
//! embedded store (FTS5) and, when a node is configured, XTDB (scan on the
//! node). Each object holds 60 words drawn from a 20,000-word vocabulary
//! unique to the run, so a one-word query matches ~300 objects and a
//! two-word query a handful, whatever else the node holds.
//!
//! `cargo bench -p scm-core --bench search -- [embedded] [xtdb]`

mod common;

use std::time::Instant;

use common::{f1, f2, ms, stats};
use scm_core::memory::{self, SearchOptions};
use scm_core::model::{toolcall_document, ToolcallFields};
use scm_core::store::TxOp;

const VOCAB: usize = 20_000;
const WORDS: usize = 60;
const BATCH: usize = 500;

fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed | 1;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

fn word(run: &str, n: u64) -> String {
    format!("{run}w{n}")
}

fn main() {
    let objects: usize = std::env::var("SCM_BENCH_SEARCH_OBJECTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    common::header("search");
    let rt = common::runtime();
    let dir = tempfile::tempdir().unwrap();
    for kind in common::backends() {
        let store: std::sync::Arc<dyn scm_core::store::Store> = if kind == "xtdb" {
            // A busy shared box: large transactions need more than the default 10 s.
            let mut o = scm_core::store::xtdb::XtdbOptions::new(common::xtdb_url().unwrap());
            o.request_timeout = std::time::Duration::from_secs(300);
            o.await_timeout = std::time::Duration::from_secs(300);
            std::sync::Arc::new(scm_core::store::xtdb::XtdbStore::new(o).unwrap())
        } else {
            common::open_store(kind, dir.path(), "search")
        };
        let run: String = common::unique("s")
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .collect::<String>()
            .to_lowercase();
        let mut next = rng(42);
        let started = Instant::now();
        let mut bytes = 0usize;
        for b in 0..objects.div_ceil(BATCH) {
            let mut ops = Vec::with_capacity(BATCH);
            for i in b * BATCH..((b + 1) * BATCH).min(objects) {
                let content: Vec<String> = (0..WORDS)
                    .map(|_| word(&run, next() % VOCAB as u64))
                    .collect();
                let content = content.join(" ");
                bytes += content.len();
                ops.push(TxOp::Put(toolcall_document(
                    &format!("toolcall:{run}:{i}"),
                    ToolcallFields {
                        content,
                        tool: "bash".into(),
                        args: serde_json::json!({"command": format!("step {i}")}),
                        args_display: None,
                        status: "ok".into(),
                        chat_ref: format!("chat:{run}-{}", i % 50),
                        file_refs: None,
                    },
                )));
            }
            rt.block_on(store.submit(ops)).unwrap();
            if (b + 1) % 20 == 0 {
                eprintln!(
                    "{kind}: {} objects in {} s",
                    (b + 1) * BATCH,
                    f1(started.elapsed().as_secs_f64())
                );
            }
        }
        let load_s = started.elapsed().as_secs_f64();
        println!(
            "\n### {kind}: {objects} objects, {} MB of content, loaded in {} s ({} objects/s)\n",
            f1(bytes as f64 / 1e6),
            f1(load_s),
            f1(objects as f64 / load_s)
        );
        let rounds = if kind == "xtdb" { 20 } else { 200 };
        println!("| query | n | hits (mean) | p50 ms | p99 ms | max ms |");
        println!("|---|---|---|---|---|---|");
        for (label, terms) in [
            ("one word (~300 matches)", 1),
            ("two words (~1 match)", 2),
            ("a prefix, w1234* (~1–11 words)", 0),
        ] {
            let mut samples = Vec::new();
            let mut hits = 0usize;
            for _ in 0..rounds {
                let q: Vec<String> = if terms == 0 {
                    vec![format!("{}*", word(&run, 1000 + next() % 999))]
                } else {
                    (0..terms)
                        .map(|_| word(&run, next() % VOCAB as u64))
                        .collect()
                };
                let t = Instant::now();
                let h = rt
                    .block_on(memory::search(
                        &*store,
                        &q.join(" "),
                        &SearchOptions::default(),
                    ))
                    .unwrap();
                samples.push(ms(t.elapsed()));
                hits += h.len();
            }
            let s = stats(&samples);
            println!(
                "| {label} | {} | {} | {} | {} | {} |",
                s.n,
                f1(hits as f64 / rounds as f64),
                f2(s.p50),
                f2(s.p99),
                f2(s.max)
            );
        }
    }
}
