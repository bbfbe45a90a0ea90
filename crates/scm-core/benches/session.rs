//! `Session::transform_context` latency vs session size (issue 3
//! "Benchmarks", issue 5 target: ≤ 1 ms p99 added per call at 500 turns /
//! 2,000 objects on the embedded store, growing with new messages, not with
//! history), and the resident size of a large session (issue 5 "memory").
//!
//! `cargo bench -p scm-core --bench session -- [embedded] [xtdb] [latency] [memory]`
//!
//! A synthetic session of T turns and N objects: N/2 toolcall objects (bash
//! calls, ~800 B output each, spread evenly over the turns, one model call
//! per tool call) and N/2 file objects (20 read → active, the rest discovery
//! stubs from `ls` output, spread over the turns); `transform_context` runs
//! before every model call while building, as pi calls it. Then each
//! measured call appends **one** message (alternately an assistant tool call
//! and its result) — the cost of a call that adds one message at that size.
//!
//! Env: SCM_BENCH_SAMPLES (measured calls per size, default 200),
//! SCM_BENCH_SIZES (e.g. 50x200,500x2000), SCM_BENCH_LAYOUTS (cache,spec),
//! SCM_BENCH_XTDB_URL.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use common::*;
use scm_core::fs::indexer::{Indexer, IndexerOptions};
use scm_core::fs::resolver::Resolver;
use scm_core::session::{Layout, Session, SessionOptions};
use scm_core::store::embedded::EmbeddedStore;
use scm_core::store::Store;
use serde_json::{json, Value};

const READS: usize = 20;
const OUTPUT_BYTES: usize = 800;

fn env_n(key: &str, default: usize) -> usize {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A growing pi transcript (pi-ai message shapes).
#[derive(Default)]
struct Transcript {
    messages: Vec<Value>,
    ts: i64,
    calls: usize,
}

impl Transcript {
    fn tick(&mut self) -> i64 {
        self.ts += 1;
        1_700_000_000_000 + self.ts
    }
    fn user(&mut self, text: &str) {
        let ts = self.tick();
        self.messages
            .push(json!({"role": "user", "content": text, "timestamp": ts}));
    }
    fn assistant_call(&mut self) -> String {
        let ts = self.tick();
        self.calls += 1;
        let id = format!("call_{:06}", self.calls);
        let cmd = format!(
            "cargo test -p crate{} -- case_{}",
            self.calls % 17,
            self.calls
        );
        self.messages.push(json!({
            "role": "assistant",
            "content": [
                {"type": "text", "text": format!("Running step {} to check the change.", self.calls)},
                {"type": "toolCall", "id": id, "name": "bash", "arguments": {"command": cmd}},
            ],
            "api": "anthropic-messages", "provider": "anthropic", "model": "claude-x",
            "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0},
            "stopReason": "toolUse", "timestamp": ts,
        }));
        id
    }
    fn result(&mut self, id: &str) {
        let ts = self.tick();
        let out = String::from_utf8(text_bytes(OUTPUT_BYTES, self.calls as u64)).unwrap();
        self.messages.push(json!({
            "role": "toolResult", "toolCallId": id, "toolName": "bash",
            "content": [{"type": "text", "text": out}], "isError": false, "timestamp": ts,
        }));
    }
}

struct Built {
    session: Session,
    transcript: Transcript,
    _files: tempfile::TempDir,
    build_s: f64,
}

/// Files on disk for the session's file objects.
fn make_files(dir: &Path, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let rel = format!("pkg{:02}/mod_{:05}.rs", i / 200, i);
            let p = dir.join(&rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, text_bytes(1024, i as u64)).unwrap();
            rel
        })
        .collect()
}

/// `per_call`: transform_context before every model call (as pi does);
/// otherwise once per turn (the memory run: keeps its write volume sane).
async fn build(
    store: Arc<dyn Store>,
    layout: Layout,
    turns: usize,
    objects: usize,
    per_call: bool,
) -> Built {
    let t0 = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let n_files = objects / 2;
    let n_calls = objects - n_files;
    let files = make_files(&root, n_files);
    let resolver = Arc::new(Resolver::new(
        unique("fs-bench"),
        root.clone(),
        vec![],
        true,
    ));
    let indexer = Arc::new(Indexer::new(
        store.clone(),
        resolver,
        IndexerOptions::default(),
    ));
    let mut options = SessionOptions::new(unique("bench"));
    options.system_prompt = Some("You are a coding agent. Be terse.".into());
    options.layout = layout;
    let mut session = Session::open(store, indexer, options).await.unwrap();
    let mut t = Transcript::default();
    let (reads, stubs) = files.split_at(READS.min(files.len()));
    for turn in 0..turns {
        t.user(&format!(
            "Turn {turn}: please continue with the next part of the refactor."
        ));
        // Files entering this turn: reads (active) and an ls listing (stubs).
        let share = |v: &[String]| -> std::ops::Range<usize> {
            (turn * v.len() / turns)..((turn + 1) * v.len() / turns)
        };
        for rel in &reads[share(reads)] {
            assert!(session.read(rel).await.unwrap().ok);
        }
        let listing: Vec<&str> = stubs[share(stubs)].iter().map(String::as_str).collect();
        if !listing.is_empty() {
            let out = session
                .observe_discovery("find", &listing.join("\n"), ".")
                .await
                .unwrap();
            assert!(out.ok, "{}", out.message);
        }
        let calls = (turn + 1) * n_calls / turns - turn * n_calls / turns;
        if calls == 0 {
            session.transform_context(&t.messages).await.unwrap();
        }
        for k in 0..calls {
            if per_call || k == 0 {
                session.transform_context(&t.messages).await.unwrap();
            }
            let id = t.assistant_call();
            t.result(&id);
        }
    }
    session.transform_context(&t.messages).await.unwrap();
    let snap = session.snapshot();
    assert_eq!(snap.metadata_pool.len(), objects, "pool size");
    assert_eq!(session.turn_count(), turns);
    Built {
        session,
        transcript: t,
        _files: dir,
        build_s: t0.elapsed().as_secs_f64(),
    }
}

struct Measured {
    total: Stats,
    assemble: Stats,
    /// assemble of calls without / with an epoch (collapse, maybe fold).
    steady: Stats,
    epoch: Option<Stats>,
    /// assemble's CPU time on its thread (preemption excluded).
    cpu: Stats,
    steady_cpu: Stats,
    /// Messages in the delta's `append`, per call.
    appended: f64,
    flush: Stats,
    noop: Stats,
    out_messages: usize,
}

/// `samples` calls, each appending one message; plus calls with nothing new.
async fn measure(b: &mut Built, samples: usize) -> Measured {
    let (mut total, mut asm, mut fl) = (Vec::new(), Vec::new(), Vec::new());
    let (mut steady, mut epoch) = (Vec::new(), Vec::new());
    let (mut cpus, mut steady_cpu) = (Vec::new(), Vec::new());
    let mut have = None;
    let mut appended_total = 0;
    let mut pending: Option<String> = None;
    let mut out_messages = 0;
    perf_marker();
    for _ in 0..samples {
        match pending.take() {
            None => pending = Some(b.transcript.assistant_call()),
            Some(id) => b.transcript.result(&id),
        }
        let epochs = b.session.cache_stats().epochs;
        // transform_context = ingest_and_assemble + flush; timed in parts.
        // The delta form is what the binding hands over (no parse here).
        let (t, c) = (Instant::now(), thread_cpu_ms());
        let d = b
            .session
            .ingest_and_assemble_delta(&b.transcript.messages, have)
            .unwrap();
        let (a, cpu) = (ms(t.elapsed()), thread_cpu_ms() - c);
        have = Some(d.seq);
        cpus.push(cpu);
        if b.session.cache_stats().epochs == epochs {
            steady.push(a);
            steady_cpu.push(cpu);
        } else {
            epoch.push(a);
        }
        let appended: Vec<Value> = serde_json::from_str(&d.append).unwrap();
        appended_total += appended.len();
        let out = vec![Value::Null; d.keep + appended.len()];
        let t2 = Instant::now();
        b.session.flush().await.unwrap();
        let f = ms(t2.elapsed());
        out_messages = out.len();
        drop(out);
        asm.push(a);
        fl.push(f);
        total.push(a + f);
    }
    if std::env::var("SCM_BENCH_PERF").is_ok() {
        eprintln!("PERF-DONE");
    }
    let mut noop = Vec::new();
    for _ in 0..samples.min(50) {
        let t = Instant::now();
        let out = b
            .session
            .transform_context(&b.transcript.messages)
            .await
            .unwrap();
        noop.push(ms(t.elapsed()));
        drop(out);
    }
    Measured {
        total: stats(&total),
        assemble: stats(&asm),
        steady: stats(&steady),
        epoch: (!epoch.is_empty()).then(|| stats(&epoch)),
        cpu: stats(&cpus),
        steady_cpu: stats(&steady_cpu),
        appended: appended_total as f64 / samples as f64,
        flush: stats(&fl),
        noop: stats(&noop),
        out_messages,
    }
}

/// CPU time of the calling thread, ms (unlike wall time, not inflated when
/// the shared box preempts the bench).
fn thread_cpu_ms() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1e3 + ts.tv_nsec as f64 / 1e6
}

/// `SCM_BENCH_PERF=<file>`: before the measured calls, print the pid and
/// wait until `<file>` exists (a profiler attaches meanwhile).
fn perf_marker() {
    let Ok(path) = std::env::var("SCM_BENCH_PERF") else {
        return;
    };
    eprintln!("PERF-ATTACH {}", std::process::id());
    while !Path::new(&path).exists() {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Stored size of the session's infrastructure documents (what each call rewrites).
async fn doc_sizes(s: &Session) -> (usize, usize) {
    let size = |d: Option<serde_json::Map<String, Value>>| {
        d.map_or(0, |d| serde_json::to_vec(&d).unwrap().len())
    };
    let sid = s.session_id().to_string();
    let chat = size(s.get_object(&format!("chat:{sid}")).await.unwrap());
    let sess = size(s.get_object(&format!("session:{sid}")).await.unwrap());
    (chat, sess)
}

fn latency(rt: &tokio::runtime::Runtime) {
    let samples = env_n("SCM_BENCH_SAMPLES", 200);
    let tmp = tempfile::tempdir().unwrap();
    let mut configs: Vec<(&str, Layout, usize, usize)> = Vec::new();
    let kinds = backends();
    // SCM_BENCH_SIZES=50x200,500x2000 restricts the grid.
    let sizes: Option<Vec<(usize, usize)>> = std::env::var("SCM_BENCH_SIZES").ok().map(|v| {
        v.split(',')
            .filter_map(|p| p.split_once('x'))
            .map(|(t, o)| (t.parse().unwrap(), o.parse().unwrap()))
            .collect()
    });
    let keep = |t: usize, o: usize| sizes.as_ref().is_none_or(|s| s.contains(&(t, o)));
    // The cache layout is what ContextManager uses by default; the spec
    // layout is the drop-in SelfContextManager's.
    // SCM_BENCH_LAYOUTS=cache (or spec) restricts the layouts.
    let layouts = std::env::var("SCM_BENCH_LAYOUTS").unwrap_or_else(|_| "cache,spec".into());
    for layout in [Layout::Cache, Layout::Spec] {
        if !layouts.contains(&format!("{layout:?}").to_lowercase()) {
            continue;
        }
        if kinds.contains(&"embedded") {
            for turns in [50, 200, 500] {
                for objects in [200, 1000, 2000] {
                    if keep(turns, objects) {
                        configs.push(("embedded", layout, turns, objects));
                    }
                }
            }
            if keep(500, 2000) {
                configs.push(("embedded (in-memory SQLite)", layout, 500, 2000));
            }
        }
        if kinds.contains(&"xtdb") {
            // 500/2000 rewrites > 1 GB of chat versions while building: more
            // than an in-memory node's 512 MiB of direct memory holds (use a
            // RocksDB node and SCM_BENCH_SIZES=500x2000 for it).
            for (t, o) in [(50, 200), (200, 1000), (500, 2000)] {
                if (t, o) == (500, 2000) && sizes.is_none() {
                    continue;
                }
                if keep(t, o) {
                    configs.push(("xtdb", layout, t, o));
                }
            }
        }
    }
    let fsync = fsync_baseline(tmp.path());
    println!(
        "\nBaseline in this run: 4 KiB write + fdatasync in the store's directory (the floor of one durable embedded commit): p50 {} ms, p99 {} ms",
        f3(fsync.p50),
        f3(fsync.p99)
    );
    println!(
        "\n## transform_context latency, one new message per call ({samples} calls per size; ms)\n"
    );
    println!("| store | layout | turns | objects | build s | total p50 | total p99 | assemble p50 | assemble p99 | assemble CPU p50 | CPU p99 | steady p50 | steady p99 | steady CPU p99 | epoch calls | epoch p50 | epoch p99 | msgs appended per call | flush p50 | flush p99 | no-new-message p50 | p99 | out msgs | chat doc KiB | session doc KiB | p50 vs smallest |");
    println!(
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    let mut base: HashMap<String, f64> = HashMap::new();
    for (i, (kind, layout, turns, objects)) in configs.into_iter().enumerate() {
        let store: Arc<dyn Store> = match kind {
            "embedded (in-memory SQLite)" => Arc::new(EmbeddedStore::open_in_memory().unwrap()),
            k => open_store(k, tmp.path(), &format!("s{i}")),
        };
        rt.block_on(async {
            let mut b = build(store, layout, turns, objects, true).await;
            let m = measure(&mut b, samples).await;
            let (chat, sess) = doc_sizes(&b.session).await;
            // Baseline: the smallest session of the same store and layout.
            let key = format!("{kind}/{layout:?}");
            let layout_name = format!("{layout:?}").to_lowercase();
            let b0 = *base.entry(key).or_insert(m.total.p50);
            let ratio = format!("{}×", f2(m.total.p50 / b0));
            println!(
                "| {kind} | {} | {turns} | {objects} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                layout_name,
                f1(b.build_s),
                f3(m.total.p50),
                f3(m.total.p99),
                f3(m.assemble.p50),
                f3(m.assemble.p99),
                f3(m.cpu.p50),
                f3(m.cpu.p99),
                f3(m.steady.p50),
                f3(m.steady.p99),
                f3(m.steady_cpu.p99),
                m.epoch.map_or(0, |e| e.n),
                m.epoch.map_or("–".into(), |e| f3(e.p50)),
                m.epoch.map_or("–".into(), |e| f3(e.p99)),
                f1(m.appended),
                f3(m.flush.p50),
                f3(m.flush.p99),
                f3(m.noop.p50),
                f3(m.noop.p99),
                m.out_messages,
                int(chat as f64 / 1024.0),
                int(sess as f64 / 1024.0),
                ratio
            );
            b.session.close().await.unwrap();
        });
    }
    println!("\n(loadavg at end: {})", loadavg());
}

fn status_kib(key: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Runs in a child process: RSS of one session of 10,000 objects / 1,000 turns.
fn memory_child(rt: &tokio::runtime::Runtime) {
    let turns = env_n("SCM_BENCH_MEM_TURNS", 1000);
    let objects = env_n("SCM_BENCH_MEM_OBJECTS", 10_000);
    // The store file on tmpfs when there is one: the session document is
    // rewritten whole per call, and this run should not load the shared disk.
    let shm = Path::new("/dev/shm");
    let tmp = if shm.is_dir() {
        tempfile::tempdir_in(shm).unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    let store = open_store("embedded", tmp.path(), "mem");
    let (rss0, hwm0) = (status_kib("VmRSS:"), status_kib("VmHWM:"));
    let b = rt.block_on(build(store.clone(), Layout::Cache, turns, objects, false));
    let (rss1, hwm1) = (status_kib("VmRSS:"), status_kib("VmHWM:"));
    let msgs = b.transcript.messages.len();
    let transcript_bytes = serde_json::to_vec(&b.transcript.messages).unwrap().len();
    drop(b.transcript);
    let rss_no_transcript = status_kib("VmRSS:");
    // glibc keeps freed memory: trim to see what is live.
    // SAFETY: malloc_trim only releases free heap pages.
    unsafe { libc::malloc_trim(0) };
    let rss_trimmed = status_kib("VmRSS:");
    let (chat, sess) = rt.block_on(doc_sizes(&b.session));
    let build_s = b.build_s;
    drop(b.session);
    // SAFETY: as above.
    unsafe { libc::malloc_trim(0) };
    let rss_dropped = status_kib("VmRSS:");
    let size = |name: &str| std::fs::metadata(tmp.path().join(name)).map_or(0, |m| m.len());
    let db = size("mem.sqlite") + size("mem.sqlite-wal");
    println!(
        "MEMORY turns={turns} objects={objects} messages={msgs} transcript_json_kib={} rss_before_kib={rss0} hwm_before_kib={hwm0} rss_after_kib={rss1} hwm_after_kib={hwm1} rss_without_transcript_kib={rss_no_transcript} rss_trimmed_kib={rss_trimmed} rss_session_dropped_kib={} chat_doc_kib={} session_doc_kib={} store_file_kib={} build_s={:.1}",
        transcript_bytes / 1024,
        rss_dropped,
        chat / 1024,
        sess / 1024,
        db / 1024,
        build_s
    );
}

fn memory() {
    // A separate process, so the figure is this session's and nothing else's.
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .env("SCM_BENCH_MEMORY_CHILD", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(line) = text.lines().find(|l| l.starts_with("MEMORY ")) else {
        panic!(
            "memory child failed: {}\n{}",
            text,
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let kv: std::collections::HashMap<&str, &str> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|p| p.split_once('='))
        .collect();
    let n = |k: &str| kv[k].parse::<f64>().unwrap();
    let mib = |k: &str| f1(n(k) / 1024.0);
    println!(
        "\n## Memory: one session, {} objects, {} turns (separate process, embedded store file on tmpfs, transform_context once per turn while building)\n",
        kv["objects"], kv["turns"]
    );
    println!("| VmRSS before MiB | VmRSS after MiB | VmHWM after MiB | Δ RSS MiB | Δ RSS per object KiB | RSS without transcript MiB | … after malloc_trim (live) MiB | … after dropping the session + trim MiB | transcript JSON MiB | chat doc KiB | session doc KiB | store file + WAL MiB | build s |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    println!(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
        mib("rss_before_kib"),
        mib("rss_after_kib"),
        mib("hwm_after_kib"),
        f1((n("rss_after_kib") - n("rss_before_kib")) / 1024.0),
        f2((n("rss_after_kib") - n("rss_before_kib")) / n("objects")),
        mib("rss_without_transcript_kib"),
        mib("rss_trimmed_kib"),
        mib("rss_session_dropped_kib"),
        mib("transcript_json_kib"),
        int(n("chat_doc_kib")),
        int(n("session_doc_kib")),
        mib("store_file_kib"),
        kv["build_s"]
    );
    println!(
        "({} harness messages; the transcript is held by the bench, as the harness would hold it)",
        kv["messages"]
    );
}

fn main() {
    let rt = runtime();
    if std::env::var("SCM_BENCH_MEMORY_CHILD").is_ok() {
        memory_child(&rt);
        return;
    }
    header("session");
    if wants("latency") {
        latency(&rt);
    }
    if wants("memory") {
        memory();
    }
}
