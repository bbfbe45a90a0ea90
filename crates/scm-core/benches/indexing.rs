//! Indexing throughput (issue 2 §10, issue 5 "indexing at scale"):
//! discovery stubs/s by batch size, full-index MiB/s of hashed content,
//! unchanged and changed re-index, and store reads on the indexed objects
//! (latest get, as-of tx id, get_many) — on the embedded store and XTDB.
//! Baseline measured in the same run: raw SHA-256 of the same bytes.
//!
//! `cargo bench -p scm-core --bench indexing -- [embedded] [xtdb] [discover|index|reads]`
//! Env: SCM_BENCH_XTDB_URL (XTDB node), SCM_BENCH_DISCOVER (files, default
//! 10000), SCM_BENCH_SMALL (4 KiB files, default 2000), SCM_BENCH_BIG (1 MiB
//! files, default 32), SCM_BENCH_XTDB_SINGLE (files discovered one per call
//! on XTDB, default = SCM_BENCH_DISCOVER).

mod common;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use common::*;
use scm_core::fs::indexer::{IndexAction, Indexer, IndexerOptions};
use scm_core::fs::resolver::Resolver;
use scm_core::store::{AsOf, Store};
use sha2::{Digest, Sha256};

const SMALL: usize = 4 * 1024;
const BIG: usize = 1024 * 1024;
const MIB: f64 = 1024.0 * 1024.0;

fn env_n(key: &str, default: usize) -> usize {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

struct Corpus {
    root: PathBuf,
    /// Relative paths of the discovery set (100 per directory).
    discover: Vec<String>,
    small: Vec<String>,
    big: Vec<String>,
}

fn make_corpus(root: &Path, n_discover: usize, n_small: usize, n_big: usize) -> Corpus {
    let mut discover = Vec::new();
    for i in 0..n_discover {
        let rel = format!("src/d{:03}/f{:05}.rs", i / 100, i);
        discover.push(rel);
    }
    // Discovered files exist on disk (their parent directories are
    // canonicalised by the resolver) but are never read by discovery.
    for rel in &discover {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, b"x").unwrap();
    }
    let write_set = |prefix: &str, n: usize, size: usize| -> Vec<String> {
        (0..n)
            .map(|i| {
                let rel = format!("{prefix}/d{:02}/f{:05}.txt", i / 100, i);
                let p = root.join(&rel);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(&p, text_bytes(size, (size + i) as u64)).unwrap();
                rel
            })
            .collect()
    };
    let small = write_set("small", n_small, SMALL);
    let big = write_set("big", n_big, BIG);
    Corpus {
        root: root.to_path_buf(),
        discover,
        small,
        big,
    }
}

fn indexer(store: Arc<dyn Store>, root: &Path, fs_id: &str) -> Indexer {
    let resolver = Arc::new(Resolver::new(
        fs_id.to_string(),
        root.to_path_buf(),
        vec![],
        true,
    ));
    Indexer::new(store, resolver, IndexerOptions::default())
}

/// Raw SHA-256 of the same files' bytes, per file: in memory (the hash alone)
/// and read-from-page-cache + hash (what an index must do at least).
fn sha_baseline(c: &Corpus, set: &[String]) -> (f64, f64) {
    let bytes: Vec<Vec<u8>> = set
        .iter()
        .map(|r| std::fs::read(c.root.join(r)).unwrap())
        .collect();
    let total: usize = bytes.iter().map(Vec::len).sum();
    let mut best_mem = f64::MAX;
    let mut best_read = f64::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        for b in &bytes {
            std::hint::black_box(Sha256::digest(b));
        }
        best_mem = best_mem.min(t.elapsed().as_secs_f64());
        let t = Instant::now();
        for r in set {
            let b = std::fs::read(c.root.join(r)).unwrap();
            std::hint::black_box(Sha256::digest(&b));
        }
        best_read = best_read.min(t.elapsed().as_secs_f64());
    }
    (
        total as f64 / MIB / best_mem,
        total as f64 / MIB / best_read,
    )
}

fn main() {
    header("indexing");
    let rt = runtime();
    let n_discover = env_n("SCM_BENCH_DISCOVER", 10_000);
    let n_small = env_n("SCM_BENCH_SMALL", 2_000);
    let n_big = env_n("SCM_BENCH_BIG", 32);
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let t = Instant::now();
    let corpus = make_corpus(&root.join("ws"), n_discover, n_small, n_big);
    println!(
        "- corpus: {} discovery paths in {} dirs, {} × 4 KiB, {} × 1 MiB text files under {} (ext4, page cache warm), built in {:.1} s",
        n_discover,
        n_discover.div_ceil(100),
        n_small,
        n_big,
        root.display(),
        t.elapsed().as_secs_f64()
    );

    let (small_mem, small_read) = sha_baseline(&corpus, &corpus.small);
    let (big_mem, big_read) = sha_baseline(&corpus, &corpus.big);
    println!("\n## Baseline: raw SHA-256 of the same bytes (best of 3)\n");
    println!("| files | sha256 in memory MiB/s | read + sha256 MiB/s |");
    println!("|---|---:|---:|");
    println!(
        "| {n_small} × 4 KiB | {} | {} |",
        f1(small_mem),
        f1(small_read)
    );
    println!("| {n_big} × 1 MiB | {} | {} |", f1(big_mem), f1(big_read));
    let fsync = fsync_baseline(&root);
    println!(
        "\nBaseline: 4 KiB write + fdatasync in the same directory (the floor of one durable embedded commit), 200 samples: p50 {} ms, p99 {} ms",
        f3(fsync.p50),
        f3(fsync.p99)
    );

    for backend in backends() {
        rt.block_on(run_backend(
            backend, &corpus, &root, small_mem, big_mem, n_discover,
        ));
    }
}

async fn run_backend(
    backend: &str,
    c: &Corpus,
    root: &Path,
    small_sha: f64,
    big_sha: f64,
    n_discover: usize,
) {
    println!("\n## {backend} store (loadavg {})\n", loadavg());
    if wants("discover") {
        println!("### Discovery (stubs, never read; one lookup + ≤ 1 write per batch)\n");
        println!("| batch | files | calls | total s | stubs/s | per call p50 ms | per call p99 ms | max ms | txs | vs batch 10,000 |");
        println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        let mut rows = Vec::new();
        for batch in [10_000usize, 100, 1] {
            let n = if backend == "xtdb" && batch == 1 {
                env_n("SCM_BENCH_XTDB_SINGLE", n_discover)
            } else {
                n_discover
            };
            let paths = &c.discover[..n];
            let store = open_store(backend, root, &format!("disc-{batch}"));
            let idx = indexer(store.clone(), &c.root, &unique(&format!("fs-disc-{batch}")));
            let tx0 = store.submitted_tx_count();
            let mut lat = Vec::new();
            let t = Instant::now();
            for chunk in paths.chunks(batch) {
                let chunk: Vec<String> = chunk.to_vec();
                let (r, dt) = timed(idx.discover_files(&chunk)).await;
                let r = r.unwrap();
                assert!(r.iter().all(|x| x.action == IndexAction::Created));
                lat.push(dt);
            }
            let total = t.elapsed().as_secs_f64();
            let txs = store.submitted_tx_count() - tx0;
            let s = stats(&lat);
            let rate = n as f64 / total;
            rows.push((batch, n, lat.len(), total, rate, s, txs));
            // Re-discovering known files: lookups only, zero writes.
            if batch == 10_000 {
                let tx1 = store.submitted_tx_count();
                let (r, dt) = timed(idx.discover_files(paths)).await;
                assert!(r
                    .unwrap()
                    .iter()
                    .all(|x| x.action == IndexAction::Unchanged));
                assert_eq!(store.submitted_tx_count(), tx1, "re-discovery wrote");
                println!(
                    "<!-- re-discovery of {n} known files in one call: {} ms, {} lookups/s, 0 writes -->",
                    f1(dt),
                    int(n as f64 / (dt / 1e3))
                );
            }
        }
        let base = rows[0].4;
        for (batch, n, calls, total, rate, s, txs) in rows {
            println!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {}× |",
                int(batch as f64),
                int(n as f64),
                int(calls as f64),
                f2(total),
                int(rate),
                f3(s.p50),
                f3(s.p99),
                f1(s.max),
                txs,
                f3(rate / base)
            );
        }
    }

    if wants("index") || wants("reads") {
        println!("\n### Full index, unchanged and changed re-index (one file per call)\n");
        println!("| set | pass | files | MiB | s | files/s | MiB/s | per file p50 ms | p99 ms | max ms | txs | MiB/s ÷ raw sha256 |");
        println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        let store = open_store(backend, root, "index");
        let idx = indexer(store.clone(), &c.root, &unique("fs-index"));
        let mut first_tx: Vec<(String, i64, String)> = Vec::new();
        for (label, set, size, sha) in [
            ("4 KiB", &c.small, SMALL, small_sha),
            ("1 MiB", &c.big, BIG, big_sha),
        ] {
            let mib = (set.len() * size) as f64 / MIB;
            for pass in ["full (created)", "unchanged", "changed (updated)"] {
                if pass.starts_with("changed") {
                    // New bytes on every run (each backend changes them again).
                    static GENERATION: AtomicU64 = AtomicU64::new(1);
                    let g = GENERATION.fetch_add(1, Ordering::Relaxed);
                    for (i, rel) in set.iter().enumerate() {
                        let seed = g * 1_000_003 + (size + i) as u64;
                        std::fs::write(c.root.join(rel), text_bytes(size, seed)).unwrap();
                    }
                }
                let tx0 = store.submitted_tx_count();
                let mut lat = Vec::with_capacity(set.len());
                let t = Instant::now();
                for rel in set.iter() {
                    let (r, dt) = timed(idx.index_file(rel)).await;
                    let r = r.unwrap();
                    let want = match pass {
                        "unchanged" => IndexAction::Unchanged,
                        p if p.starts_with("full") => IndexAction::Created,
                        _ => IndexAction::Updated,
                    };
                    assert_eq!(r.action, want, "{rel}");
                    if want == IndexAction::Created && label == "4 KiB" {
                        let hash = r.doc["file_hash"].as_str().unwrap().to_string();
                        first_tx.push((r.object_id.clone(), r.receipt.unwrap().tx_id, hash));
                    }
                    lat.push(dt);
                }
                let secs = t.elapsed().as_secs_f64();
                let txs = store.submitted_tx_count() - tx0;
                if pass == "unchanged" {
                    assert_eq!(txs, 0, "unchanged re-index wrote");
                }
                let s = stats(&lat);
                println!(
                    "| {} × {label} | {pass} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {}× |",
                    set.len(),
                    set.len(),
                    f1(mib),
                    f2(secs),
                    int(set.len() as f64 / secs),
                    f1(mib / secs),
                    f3(s.p50),
                    f3(s.p99),
                    f1(s.max),
                    txs,
                    f3(mib / secs / sha)
                );
            }
        }

        if wants("reads") {
            // Every 4 KiB object now has two versions; as-of the first
            // version's tx must return the old one.
            println!(
                "\n### Store reads on the indexed objects ({} objects with 2 versions)\n",
                first_tx.len()
            );
            println!("| read | calls | p50 ms | p99 ms | max ms | calls/s |");
            println!("|---|---:|---:|---:|---:|---:|");
            let n = first_tx.len().min(1000);
            let ids: Vec<String> = first_tx.iter().map(|(id, _, _)| id.clone()).collect();
            for round in [
                "get (latest)",
                "get_as_of(tx id)",
                "get_many(100 ids)",
                "get × 100 (the same ids one get_many fetches)",
            ] {
                let mut lat = Vec::new();
                let t = Instant::now();
                match round {
                    "get (latest)" => {
                        for (id, _, _) in first_tx.iter().take(n) {
                            let (d, dt) = timed(store.get(id)).await;
                            assert!(d.unwrap().is_some());
                            lat.push(dt);
                        }
                    }
                    "get_as_of(tx id)" => {
                        for (id, tx, hash) in first_tx.iter().take(n) {
                            let (d, dt) = timed(store.get_as_of(id, AsOf::TxId(*tx))).await;
                            let d = d.unwrap().unwrap();
                            assert_eq!(
                                d["file_hash"].as_str(),
                                Some(hash.as_str()),
                                "as-of returned the wrong version"
                            );
                            lat.push(dt);
                        }
                    }
                    "get × 100 (the same ids one get_many fetches)" => {
                        for chunk in ids.chunks(100).take(20) {
                            let t1 = Instant::now();
                            for id in chunk {
                                assert!(store.get(id).await.unwrap().is_some());
                            }
                            lat.push(ms(t1.elapsed()));
                        }
                    }
                    _ => {
                        for chunk in ids.chunks(100).take(20) {
                            let (d, dt) = timed(store.get_many(chunk)).await;
                            assert_eq!(d.unwrap().len(), chunk.len());
                            lat.push(dt);
                        }
                    }
                }
                let secs = t.elapsed().as_secs_f64();
                let s = stats(&lat);
                println!(
                    "| {round} | {} | {} | {} | {} | {} |",
                    lat.len(),
                    f3(s.p50),
                    f3(s.p99),
                    f3(s.max),
                    int(lat.len() as f64 / secs)
                );
            }
        }
    }
}
