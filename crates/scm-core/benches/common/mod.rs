//! Shared by the benches (not a bench target itself): percentiles, the
//! machine/load header, store selection and markdown output.
//!
//! Benches are plain `std::time` programs (`harness = false`), run with
//! `cargo bench -p scm-core --bench NAME -- [embedded] [xtdb] [FILTER…]`.
//! XTDB runs only when `SCM_BENCH_XTDB_URL` (or `SCM_TEST_XTDB_URL`) names a
//! node started with `xtdb/start.sh`.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use scm_core::store::embedded::EmbeddedStore;
use scm_core::store::xtdb::{XtdbOptions, XtdbStore};
use scm_core::store::Store;

/// Latency summary of one measurement, in milliseconds.
#[derive(Debug, Clone, Copy)]
pub struct Stats {
    pub n: usize,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
}

/// Nearest-rank percentiles over `samples` (milliseconds).
pub fn stats(samples: &[f64]) -> Stats {
    assert!(!samples.is_empty(), "no samples");
    let mut v = samples.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let rank = |p: f64| {
        let i = ((p / 100.0) * v.len() as f64).ceil() as usize;
        v[i.clamp(1, v.len()) - 1]
    };
    Stats {
        n: v.len(),
        p50: rank(50.0),
        p95: rank(95.0),
        p99: rank(99.0),
        max: v[v.len() - 1],
        mean: v.iter().sum::<f64>() / v.len() as f64,
    }
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Time one future, in milliseconds.
pub async fn timed<T>(f: impl std::future::Future<Output = T>) -> (T, f64) {
    let t = Instant::now();
    let out = f.await;
    (out, ms(t.elapsed()))
}

/// `/proc/loadavg`'s first three fields (the box is shared: report the load).
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "?".into())
}

fn cmd(program: &str, args: &[&str]) -> String {
    std::process::Command::new(program)
        .args(args)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// Header every bench prints: what, when, where, under which load.
pub fn header(bench: &str) {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_default();
    let mem = cmd("sh", &["-c", "free -h | awk '/^Mem:/ {print $2}'"]);
    println!("# bench {bench}");
    println!(
        "- date: {} · machine: {cpu}, nproc {}, RAM {mem} · loadavg at start: {}",
        cmd("date", &["-u", "+%Y-%m-%dT%H:%M:%SZ"]),
        cmd("nproc", &[]),
        loadavg()
    );
    println!(
        "- command: cargo bench -p scm-core --bench {bench} -- {} · tree: {} ({} files modified, uncommitted work of others included)",
        args().join(" "),
        cmd("git", &["rev-parse", "--short", "HEAD"]),
        cmd("sh", &["-c", "git status --porcelain --untracked-files=no | wc -l"])
    );
}

/// Arguments after the ones cargo adds (`--bench`).
pub fn args() -> Vec<String> {
    std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect()
}

/// Whether the named part should run: no positional filter runs everything
/// (XTDB only when a node is configured).
pub fn wants(part: &str) -> bool {
    let a = args();
    let filters: Vec<&String> = a
        .iter()
        .filter(|x| !matches!(x.as_str(), "embedded" | "xtdb"))
        .collect();
    filters.is_empty() || filters.iter().any(|f| part.contains(f.as_str()))
}

pub fn xtdb_url() -> Option<String> {
    ["SCM_BENCH_XTDB_URL", "SCM_TEST_XTDB_URL"]
        .iter()
        .filter_map(|k| std::env::var(k).ok())
        .find(|u| !u.trim().is_empty())
}

/// Which backends to run: `embedded` / `xtdb` on the command line restrict;
/// XTDB needs a node URL.
pub fn backends() -> Vec<&'static str> {
    let a = args();
    let explicit: Vec<&str> = a
        .iter()
        .filter_map(|x| match x.as_str() {
            "embedded" => Some("embedded"),
            "xtdb" => Some("xtdb"),
            _ => None,
        })
        .collect();
    let asked_xtdb = explicit.contains(&"xtdb");
    let mut out = if explicit.is_empty() {
        vec!["embedded", "xtdb"]
    } else {
        explicit
    };
    if xtdb_url().is_none() {
        if asked_xtdb {
            eprintln!("xtdb requested but SCM_BENCH_XTDB_URL is unset: skipped");
        }
        out.retain(|b| *b != "xtdb");
    }
    out
}

/// A fresh store of `kind`: embedded = a new SQLite file under `dir` (WAL,
/// synchronous=FULL, as the product default), xtdb = the configured node.
pub fn open_store(kind: &str, dir: &std::path::Path, name: &str) -> Arc<dyn Store> {
    match kind {
        "embedded" => Arc::new(EmbeddedStore::open(dir.join(format!("{name}.sqlite"))).unwrap()),
        "xtdb" => Arc::new(XtdbStore::new(XtdbOptions::new(xtdb_url().unwrap())).unwrap()),
        other => panic!("unknown backend {other}"),
    }
}

/// A string no earlier run against the same XTDB node used.
pub fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{prefix}-{}-{nanos}", std::process::id())
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Deterministic printable ASCII (lines of lowercase words): valid UTF-8, no
/// NUL, so the indexer stores it as text content.
pub fn text_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(len);
    let mut col = 0;
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let c = (x % 32) as u8;
        let b = match c {
            0..=25 => b'a' + c,
            26..=29 => b' ',
            _ => b'_',
        };
        col += 1;
        if col == 80 {
            out.push(b'\n');
            col = 0;
        } else {
            out.push(b);
        }
    }
    out.truncate(len);
    out
}

pub fn f1(x: f64) -> String {
    format!("{x:.1}")
}

pub fn f2(x: f64) -> String {
    format!("{x:.2}")
}

pub fn f3(x: f64) -> String {
    format!("{x:.3}")
}

/// Thousands separators for counts and rates.
pub fn int(x: f64) -> String {
    let s = format!("{:.0}", x);
    let (sign, digits) = s.strip_prefix('-').map_or(("", s.as_str()), |d| ("-", d));
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    format!("{sign}{out}")
}

/// One durable 4 KiB write: what an embedded commit (WAL, synchronous=FULL)
/// cannot beat on this disk.
pub fn fsync_baseline(dir: &std::path::Path) -> Stats {
    use std::io::{Seek, SeekFrom, Write};
    let mut f = std::fs::File::create(dir.join("fsync-probe")).unwrap();
    let block = vec![b'x'; 4096];
    let mut lat = Vec::new();
    for i in 0..200u64 {
        let t = Instant::now();
        f.seek(SeekFrom::Start((i % 16) * 4096)).unwrap();
        f.write_all(&block).unwrap();
        f.sync_data().unwrap();
        lat.push(ms(t.elapsed()));
    }
    stats(&lat)
}
