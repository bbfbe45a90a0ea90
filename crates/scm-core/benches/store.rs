//! Store benchmark: put throughput by transaction size, read latency (latest,
//! as of a tx id, as of a tx time, get_many, history) on the embedded store
//! and, when `SCM_BENCH_XTDB_URL` names a node, on XTDB. Embedded only: what
//! `synchronous = FULL` costs over NORMAL, and what a `spawn_blocking` hop per
//! call would cost over running inline.
//!
//! `cargo bench -p scm-core --bench store -- [embedded] [xtdb] [FILTER…]`
//! (filters: put, get, as_of, get_many, history, sync, hop).

mod common;

use std::sync::Arc;
use std::time::Instant;

use common::{f2, f3, int, ms, stats, timed, Stats};
use scm_core::store::embedded::EmbeddedStore;
use scm_core::store::{AsOf, Document, Store, TxOp, ID_KEY};
use serde_json::json;

/// Distinct objects preloaded for the read benchmarks, each with VERSIONS versions.
const OBJECTS: usize = 2000;
const VERSIONS: usize = 3;

struct Plan {
    /// (docs per tx, number of txs)
    puts: &'static [(usize, usize)],
    reads: usize,
    many: usize,
}

const EMBEDDED: Plan = Plan {
    puts: &[(1, 500), (10, 200), (100, 40)],
    reads: 2000,
    many: 200,
};
const XTDB: Plan = Plan {
    puts: &[(1, 150), (10, 60), (100, 20)],
    reads: 300,
    many: 50,
};

/// A file-object-shaped document of about 1.2 KB.
fn file_doc(id: &str, version: usize) -> Document {
    let content = String::from_utf8(common::text_bytes(1000, version as u64 + 7)).unwrap();
    let v = json!({
        ID_KEY: id,
        "type": "file",
        "source": {"type": "filesystem", "filesystemId": "f".repeat(64), "path": format!("/repo/{id}.rs")},
        "identity_hash": "a".repeat(64),
        "file_hash": "b".repeat(64),
        "content_hash": "c".repeat(64),
        "metadata_hash": "d".repeat(64),
        "object_hash": "e".repeat(64),
        "file_type": "rs",
        "char_count": content.len(),
        "state": "present",
        "content": content,
        "version": version,
    });
    match v {
        serde_json::Value::Object(m) => m,
        _ => unreachable!(),
    }
}

/// Tiny deterministic PRNG so runs are comparable.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

fn row(backend: &str, op: &str, s: &Stats, rate: &str) {
    println!(
        "| {backend} | {op} | {} | {} | {} | {} | {rate} |",
        s.n,
        f3(s.p50),
        f3(s.p99),
        f3(s.max)
    );
}

async fn bench_puts(backend: &str, store: &Arc<dyn Store>, plan: &Plan, run: &str) {
    for &(batch, txs) in plan.puts {
        let mut samples = Vec::with_capacity(txs);
        let started = Instant::now();
        for t in 0..txs {
            let ops = (0..batch)
                .map(|i| TxOp::Put(file_doc(&format!("{run}:put{batch}:{i}"), t)))
                .collect();
            let (r, took) = timed(store.submit(ops)).await;
            assert!(r.unwrap().committed);
            samples.push(took);
        }
        let secs = started.elapsed().as_secs_f64();
        let s = stats(&samples);
        row(
            backend,
            &format!("put, {batch} doc/tx"),
            &s,
            &format!(
                "{} tx/s, {} doc/s",
                int(txs as f64 / secs),
                int((txs * batch) as f64 / secs)
            ),
        );
    }
}

/// Preload OBJECTS × VERSIONS and return the object ids and every version's
/// (tx id, tx time).
async fn preload(store: &Arc<dyn Store>, run: &str) -> (Vec<String>, Vec<(i64, String)>) {
    let ids: Vec<String> = (0..OBJECTS).map(|i| format!("{run}:obj{i}")).collect();
    let mut txs = Vec::new();
    for v in 0..VERSIONS {
        for chunk in ids.chunks(100) {
            let ops = chunk.iter().map(|id| TxOp::Put(file_doc(id, v))).collect();
            let r = store.submit(ops).await.unwrap();
            txs.push((r.tx_id, r.tx_time));
        }
    }
    (ids, txs)
}

async fn bench_reads(backend: &str, store: &Arc<dyn Store>, plan: &Plan, run: &str) {
    let ((ids, txs), t) = timed(preload(store, run)).await;
    eprintln!(
        "{backend}: preloaded {OBJECTS} objects × {VERSIONS} versions in {} s",
        f2(t / 1e3)
    );
    let mut rng = Rng(0x5eed);
    let rate = |s: &Stats| format!("{} op/s", int(1e3 / s.mean));

    if common::wants("get") {
        let mut samples = Vec::new();
        for _ in 0..plan.reads {
            let id = &ids[rng.below(ids.len())];
            let (d, took) = timed(store.get(id)).await;
            assert!(d.unwrap().is_some());
            samples.push(took);
        }
        let s = stats(&samples);
        row(backend, "get latest", &s, &rate(&s));
    }
    if common::wants("as_of") {
        let mut by_id = Vec::new();
        let mut by_time = Vec::new();
        for _ in 0..plan.reads {
            let id = &ids[rng.below(ids.len())];
            let (tx_id, tx_time) = &txs[rng.below(txs.len())];
            let (d, took) = timed(store.get_as_of(id, AsOf::TxId(*tx_id))).await;
            d.unwrap();
            by_id.push(took);
            let (d, took) = timed(store.get_as_of(id, AsOf::TxTime(tx_time))).await;
            d.unwrap();
            by_time.push(took);
        }
        let s = stats(&by_id);
        row(backend, "get as of tx id", &s, &rate(&s));
        let s = stats(&by_time);
        row(backend, "get as of tx time", &s, &rate(&s));
    }
    if common::wants("get_many") {
        let mut samples = Vec::new();
        for _ in 0..plan.many {
            let start = rng.below(ids.len() - 100);
            let mut want: Vec<String> = ids[start..start + 90].to_vec();
            want.extend((0..10).map(|i| format!("{run}:missing{i}")));
            let (d, took) = timed(store.get_many(&want)).await;
            assert_eq!(d.unwrap().len(), 90);
            samples.push(took);
        }
        let s = stats(&samples);
        row(backend, "get_many 100 ids (90 present)", &s, &rate(&s));
        // The same lookups one `get` at a time, for comparison.
        let mut samples = Vec::new();
        for _ in 0..plan.many {
            let start = rng.below(ids.len() - 100);
            let started = Instant::now();
            for id in &ids[start..start + 100] {
                store.get(id).await.unwrap();
            }
            samples.push(ms(started.elapsed()));
        }
        let s = stats(&samples);
        row(backend, "100 × get (for comparison)", &s, &rate(&s));
    }
    if common::wants("history") {
        let mut samples = Vec::new();
        for _ in 0..plan.many {
            let id = &ids[rng.below(ids.len())];
            let (h, took) = timed(store.history(id)).await;
            assert_eq!(h.unwrap().len(), VERSIONS);
            samples.push(took);
        }
        let s = stats(&samples);
        row(
            backend,
            &format!("history ({VERSIONS} versions)"),
            &s,
            &rate(&s),
        );
    }
}

/// What `synchronous = FULL` costs over NORMAL: single-doc commits through
/// raw SQLite on the same schema and the same disk.
fn bench_sync_modes(dir: &std::path::Path) {
    for mode in ["NORMAL", "FULL"] {
        let path = dir.join(format!("sync-{mode}.sqlite"));
        drop(EmbeddedStore::open(&path).unwrap()); // creates the schema
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.pragma_update(None, "synchronous", mode).unwrap();
        let doc = serde_json::to_string(&file_doc("x", 0)).unwrap();
        let mut samples = Vec::new();
        for t in 1..=500_i64 {
            let started = Instant::now();
            conn.execute_batch("BEGIN IMMEDIATE").unwrap();
            conn.execute(
                "INSERT INTO tx VALUES (?1, '2025-01-01T00:00:00.000Z', 1)",
                [t],
            )
            .unwrap();
            conn.execute(
                "INSERT INTO versions VALUES ('x', ?1, ?2)",
                rusqlite::params![t, doc],
            )
            .unwrap();
            conn.execute_batch("COMMIT").unwrap();
            samples.push(ms(started.elapsed()));
        }
        let s = stats(&samples);
        row(
            "raw sqlite",
            &format!("commit 1 doc, synchronous={mode}"),
            &s,
            &format!("{} tx/s", int(1e3 / s.mean)),
        );
    }
}

/// What a `spawn_blocking` hop per call would add to an embedded read.
async fn bench_hop(store: Arc<EmbeddedStore>, id: String) {
    let n = 2000;
    let mut inline = Vec::new();
    let mut hopped = Vec::new();
    for _ in 0..n {
        let (d, took) = timed(store.get(&id)).await;
        assert!(d.unwrap().is_some());
        inline.push(took);
        let (s, i) = (store.clone(), id.clone());
        let (d, took) = timed(async {
            tokio::task::spawn_blocking(move || {
                tokio::runtime::Handle::current().block_on(async { s.get(&i).await })
            })
            .await
            .unwrap()
        })
        .await;
        assert!(d.unwrap().is_some());
        hopped.push(took);
    }
    let s = stats(&inline);
    row("embedded", "get latest, inline (as shipped)", &s, "");
    let s = stats(&hopped);
    row("embedded", "get latest, via spawn_blocking", &s, "");
}

fn main() {
    common::header("store");
    let rt = common::runtime();
    let dir = tempfile::tempdir().unwrap();
    println!(
        "- embedded: a new SQLite file under {} (WAL, synchronous=FULL); docs ~1.2 KB file objects",
        std::env::temp_dir().display()
    );
    println!(
        "- times in ms; p50/p99/max per call; rates from wall time (puts) or mean latency (reads)"
    );
    println!();
    println!("| backend | operation | n | p50 | p99 | max | rate |");
    println!("|---|---|---:|---:|---:|---:|---|");
    for backend in common::backends() {
        let store = common::open_store(backend, dir.path(), "store-bench");
        let plan = if backend == "xtdb" { &XTDB } else { &EMBEDDED };
        let run = common::unique("store-bench");
        rt.block_on(async {
            if common::wants("put") {
                bench_puts(backend, &store, plan, &run).await;
            }
            if ["get", "as_of", "get_many", "history"]
                .iter()
                .any(|p| common::wants(p))
            {
                bench_reads(backend, &store, plan, &run).await;
            }
        });
        if backend == "embedded" {
            if common::wants("sync") {
                bench_sync_modes(dir.path());
            }
            if common::wants("hop") {
                let path = dir.path().join("hop.sqlite");
                let store = Arc::new(EmbeddedStore::open(path).unwrap());
                rt.block_on(async {
                    store
                        .submit(vec![TxOp::Put(file_doc("hop", 0))])
                        .await
                        .unwrap();
                    bench_hop(store, "hop".into()).await;
                });
            }
        }
    }
    println!();
    println!("- loadavg at end: {}", common::loadavg());
}
