//! Watcher at scale (issue 5 "indexing and watcher costs at scale"):
//! 10,000 tracked files across 100 directories (setup time, inotify watches),
//! then 1,000 changes on disk → versions, latency from the write to the new
//! version being visible (the callback fires after the version's transaction
//! was acknowledged, i.e. readable by every client).
//!
//! One more embedded run polls every directory (`PollMode::Always`, 1 s):
//! its latency, and the process's CPU time while idle with the poller on.
//!
//! `cargo bench -p scm-core --bench watcher -- [embedded] [xtdb]`
//! Env: SCM_BENCH_TRACKED (default 10000), SCM_BENCH_CHANGES (default 1000),
//! SCM_BENCH_PACE_US (gap between paced writes, default 5000), SCM_BENCH_XTDB_URL.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use scm_core::fs::indexer::{Indexer, IndexerOptions};
use scm_core::fs::resolver::{ResolvedPath, Resolver};
use scm_core::fs::watcher::{PollMode, PollOptions, WatchEvent, Watcher, DEFAULT_DEBOUNCE};
use scm_core::store::Store;
use sha2::{Digest, Sha256};

/// Waiting for events: generous, a failure is a finding, not a hang.
const DEADLINE: Duration = Duration::from_secs(300);

fn env_n(key: &str, default: usize) -> usize {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// inotify watches per inotify fd of this process, from /proc.
fn inotify_watches() -> HashMap<String, usize> {
    let Ok(dir) = std::fs::read_dir("/proc/self/fdinfo") else {
        return HashMap::new();
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| {
            let text = std::fs::read_to_string(e.path()).ok()?;
            let n = text
                .lines()
                .filter(|l| l.starts_with("inotify wd:"))
                .count();
            (n > 0).then(|| (e.file_name().to_string_lossy().into_owned(), n))
        })
        .collect()
}

/// Waits until no inotify fd of an earlier watcher is left, so the next
/// count is this watcher's alone. Polls with a deadline: notify's inotify
/// thread closes its fd after `close()` returns and offers no signal for it.
/// This process's CPU time (user + system), in seconds.
#[cfg(not(unix))]
fn cpu_seconds() -> f64 {
    f64::NAN
}

/// This process's CPU time (user + system), in seconds.
#[cfg(unix)]
fn cpu_seconds() -> f64 {
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid, writable rusage; RUSAGE_SELF is always valid.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn wait_no_inotify() {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !inotify_watches().is_empty() {
        assert!(
            Instant::now() < deadline,
            "an old watcher kept its inotify fd"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

struct Setup {
    root: PathBuf,
    files: Vec<String>,
}

fn make_files(root: &Path, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let rel = format!("d{:03}/f{:05}.txt", i % 100, i);
            let p = root.join(&rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, text_bytes(1024, i as u64)).unwrap();
            rel
        })
        .collect()
}

type Events = mpsc::Receiver<(String, String, Instant)>;

fn start_watcher(
    indexer: Arc<Indexer>,
    rt: &tokio::runtime::Runtime,
    debounce: Duration,
    poll: PollOptions,
) -> (Watcher, Events) {
    let (tx, rx) = mpsc::channel();
    let w = Watcher::with_options(
        indexer,
        rt.handle().clone(),
        Arc::new(move |ev| {
            let now = Instant::now();
            if let WatchEvent::Updated { object_id, doc, .. } = ev {
                let hash = doc["file_hash"].as_str().unwrap_or_default().to_string();
                let _ = tx.send((object_id, hash, now));
            } else if let WatchEvent::Error { message } = ev {
                eprintln!("watcher error: {message}");
            }
        }),
        debounce,
        poll,
    )
    .unwrap();
    (w, rx)
}

/// Writes `changes` files (paced by `gap`, or back to back when zero) and
/// returns write→visible latencies (ms) once every new version arrived.
fn changes(
    s: &Setup,
    resolved: &HashMap<String, ResolvedPath>,
    rx: &Events,
    pick: &[String],
    gap: Duration,
    generation: u64,
) -> (Vec<f64>, f64) {
    let mut want: HashMap<String, (String, Instant)> = HashMap::new();
    let t0 = Instant::now();
    for (i, rel) in pick.iter().enumerate() {
        let bytes = text_bytes(1024, generation * 1_000_003 + i as u64);
        let hash = hex::encode(Sha256::digest(&bytes));
        if !gap.is_zero() {
            // Pacing the writer (a load generator), not waiting for consistency.
            let due = t0 + gap * i as u32;
            if let Some(d) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(d);
            }
        }
        std::fs::write(s.root.join(rel), &bytes).unwrap();
        let id = resolved[rel].source.file_object_id();
        want.insert(id, (hash, Instant::now()));
    }
    let mut lat = Vec::with_capacity(want.len());
    let deadline = Instant::now() + DEADLINE;
    while !want.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        let (id, hash, at) = rx
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("{} changes never became versions", want.len()));
        if let Some((h, wrote)) = want.get(&id) {
            if *h == hash {
                lat.push(ms(at.duration_since(*wrote)));
                want.remove(&id);
            }
        }
    }
    (lat, t0.elapsed().as_secs_f64())
}

fn main() {
    header("watcher");
    let rt = runtime();
    let n = env_n("SCM_BENCH_TRACKED", 10_000);
    let n_changes = env_n("SCM_BENCH_CHANGES", 1_000);
    let pace = Duration::from_micros(env_n("SCM_BENCH_PACE_US", 5_000) as u64);
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap().join("ws");
    let files = make_files(&root, n);
    let s = Setup { root, files };
    println!(
        "- {} tracked files of 1 KiB in 100 directories; {} changes per run (10 per directory); inotify limit max_user_watches = {}",
        n,
        n_changes,
        std::fs::read_to_string("/proc/sys/fs/inotify/max_user_watches")
            .unwrap_or_default()
            .trim()
    );
    println!("\n| store | debounce ms | writes | initial index s | track s | dir watches | inotify watches | changes | write→version p50 ms | p95 ms | p99 ms | max ms | wall s | p50 − debounce ms |");
    println!("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut generation = 1u64;
    for kind in backends() {
        let store: Arc<dyn Store> = open_store(kind, tmp.path(), "watch");
        let resolver = Arc::new(Resolver::new(
            unique("fs-watch"),
            s.root.clone(),
            vec![],
            true,
        ));
        let indexer = Arc::new(Indexer::new(
            store.clone(),
            resolver.clone(),
            IndexerOptions::default(),
        ));
        let t = Instant::now();
        let mut resolved = HashMap::new();
        rt.block_on(async {
            for rel in &s.files {
                indexer.index_file(rel).await.unwrap();
                resolved.insert(rel.clone(), resolver.resolve(rel).unwrap());
            }
        });
        let index_s = t.elapsed().as_secs_f64();
        let native = PollOptions {
            mode: PollMode::Never,
            ..PollOptions::default()
        };
        let polled = PollOptions {
            mode: PollMode::Always,
            interval: Duration::from_secs(1),
        };
        let runs: Vec<(Duration, Duration, PollOptions)> = if kind == "xtdb" {
            vec![(DEFAULT_DEBOUNCE, pace, native)]
        } else {
            vec![
                (DEFAULT_DEBOUNCE, pace, native),
                (DEFAULT_DEBOUNCE, Duration::ZERO, native),
                (Duration::from_millis(20), pace, native),
                (DEFAULT_DEBOUNCE, pace, polled),
            ]
        };
        for (debounce, gap, poll) in runs {
            wait_no_inotify();
            let (w, rx) = start_watcher(indexer.clone(), &rt, debounce, poll);
            let is_polled = poll.mode == PollMode::Always;
            let t = Instant::now();
            for rel in &s.files {
                w.track(&resolved[rel]).unwrap();
            }
            let track_s = t.elapsed().as_secs_f64();
            let watches: usize = inotify_watches().values().sum();
            let dirs = w.watched_dir_count();
            if is_polled {
                // CPU the poller costs while nothing changes: 5 s idle.
                let (cpu0, t0) = (cpu_seconds(), Instant::now());
                std::thread::sleep(Duration::from_secs(5));
                println!(
                    "- polled, idle: {} dirs, {} files: {:.1} ms CPU per second ({:.1} ms per look)",
                    w.polled_dirs().len(),
                    s.files.len(),
                    1000.0 * (cpu_seconds() - cpu0) / t0.elapsed().as_secs_f64(),
                    1000.0 * (cpu_seconds() - cpu0) / 5.0 * poll.interval.as_secs_f64(),
                );
            }
            // 10 files from each directory.
            let pick: Vec<String> = s.files.iter().take(n_changes).cloned().collect();
            let (lat, wall) = changes(&s, &resolved, &rx, &pick, gap, generation);
            generation += 1;
            let st = stats(&lat);
            // Visible to any reader now: check a sample through the store.
            rt.block_on(async {
                for rel in pick.iter().step_by(97) {
                    let id = resolved[rel].source.file_object_id();
                    let d = store.get(&id).await.unwrap().unwrap();
                    let disk =
                        hex::encode(Sha256::digest(std::fs::read(s.root.join(rel)).unwrap()));
                    assert_eq!(d["file_hash"].as_str(), Some(disk.as_str()));
                }
            });
            println!(
                "| {kind} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                if is_polled {
                    format!("polled every {} ms", poll.interval.as_millis())
                } else {
                    debounce.as_millis().to_string()
                },
                if gap.is_zero() {
                    "burst (back to back)".to_string()
                } else {
                    format!("paced, 1 per {} ms", f1(ms(gap)))
                },
                f1(index_s),
                f3(track_s),
                dirs,
                watches,
                lat.len(),
                f1(st.p50),
                f1(st.p95),
                f1(st.p99),
                f1(st.max),
                f1(wall),
                f1(st.p50 - ms(debounce))
            );
            w.close();
            drop(w);
        }
    }
    println!("\n(loadavg at end: {})", loadavg());
}
