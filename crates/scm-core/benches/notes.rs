//! Notes and portability benchmark (issue 12): note indexing throughput
//! (`Indexer::index_file` of Markdown notes with frontmatter, tags and 10
//! links each, against the same bytes as `.txt`, which are not parsed), and
//! export / import MB/s of the resulting store.
//!
//! `cargo bench -p scm-core --bench notes -- [embedded] [xtdb]`
//! (`SCM_BENCH_NOTES`, default 2,000 notes).

mod common;

use std::sync::Arc;
use std::time::Instant;

use common::{f1, f2};
use scm_core::fs::indexer::{Indexer, IndexerOptions};
use scm_core::fs::resolver::Resolver;
use scm_core::memory::portable;
use scm_core::store::embedded::EmbeddedStore;
use scm_core::store::Store;

fn note(i: usize, n: usize) -> String {
    let mut s = format!(
        "---\ntitle: Note {i}\ntags: [bench, n{}]\nstatus: draft\n---\n# Note {i}\n\n",
        i % 17
    );
    for k in 0..10 {
        s.push_str(&format!(
            "Paragraph {k} of note {i} mentions [[note{}]] and #topic{} with some more words to make a line.\n",
            (i * 7 + k * 13) % n,
            k % 5
        ));
    }
    while s.len() < 2_000 {
        s.push_str("Filler text for the benchmark that has no links or tags in it at all.\n");
    }
    s
}

fn main() {
    let n: usize = std::env::var("SCM_BENCH_NOTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000);
    common::header("notes");
    let rt = common::runtime();
    for kind in common::backends() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let run = common::unique("notes");
        let ws = root.join(&run);
        std::fs::create_dir_all(&ws).unwrap();
        let mut bytes = 0usize;
        for i in 0..n {
            let text = note(i, n);
            bytes += text.len();
            std::fs::write(ws.join(format!("note{i}.md")), &text).unwrap();
            std::fs::write(ws.join(format!("note{i}.txt")), &text).unwrap();
        }
        let store: Arc<dyn Store> = common::open_store(kind, dir.path(), "notes");
        let resolver = Arc::new(Resolver::new("bench-fs".into(), root.clone(), vec![], true));
        let indexer = Indexer::new(store.clone(), resolver, IndexerOptions::default());
        println!(
            "\n### {kind}: {n} notes of ~2 KB (10 links, 6 tags, frontmatter), {} MB\n",
            f2(bytes as f64 / 1e6)
        );
        println!("| files | files/s | MB/s |");
        println!("|---|---|---|");
        for ext in ["txt", "md"] {
            let t = Instant::now();
            for i in 0..n {
                let p = ws.join(format!("note{i}.{ext}"));
                rt.block_on(indexer.index_file(p.to_str().unwrap()))
                    .unwrap();
            }
            let s = t.elapsed().as_secs_f64();
            println!(
                "| .{ext}{} | {} | {} |",
                if ext == "md" {
                    " (parsed as notes)"
                } else {
                    " (not parsed)"
                },
                f1(n as f64 / s),
                f2(bytes as f64 / 1e6 / s)
            );
        }
        // Parsing alone, in memory.
        let src = scm_core::model::FilesystemSource {
            filesystem_id: "bench-fs".into(),
            path: "/w/note.md".into(),
        };
        let texts: Vec<String> = (0..n).map(|i| note(i, n)).collect();
        let t = Instant::now();
        let mut links = 0usize;
        for text in &texts {
            links += scm_core::memory::notes::parse(&src, text).links.len();
        }
        let s = t.elapsed().as_secs_f64();
        println!(
            "\nparse alone: {} notes/s, {} MB/s ({links} links)\n",
            f1(n as f64 / s),
            f2(bytes as f64 / 1e6 / s)
        );
        if kind == "embedded" {
            let mut file = Vec::new();
            let t = Instant::now();
            let e = rt
                .block_on(portable::export(&*store, None, &mut file))
                .unwrap();
            let s = t.elapsed().as_secs_f64();
            println!(
                "export (whole store): {} versions, {} MB in {} s = {} MB/s",
                e.versions,
                f2(e.bytes as f64 / 1e6),
                f2(s),
                f2(e.bytes as f64 / 1e6 / s)
            );
            let mut targets: Vec<(&str, Arc<dyn Store>)> = vec![(
                "embedded",
                Arc::new(EmbeddedStore::open(dir.path().join("copy.sqlite")).unwrap()),
            )];
            if let Some(url) = common::xtdb_url() {
                let mut o = scm_core::store::xtdb::XtdbOptions::new(url);
                o.request_timeout = std::time::Duration::from_secs(300);
                o.await_timeout = std::time::Duration::from_secs(300);
                targets.push((
                    "xtdb",
                    Arc::new(scm_core::store::xtdb::XtdbStore::new(o).unwrap()),
                ));
            }
            for (name, target) in targets {
                let t = Instant::now();
                let r = rt
                    .block_on(portable::import(&*target, &mut file.as_slice()))
                    .unwrap();
                let s = t.elapsed().as_secs_f64();
                println!(
                    "import into {name}: {} versions in {} transactions, {} s = {} MB/s",
                    r.versions,
                    r.transactions,
                    f2(s),
                    f2(r.bytes as f64 / 1e6 / s)
                );
            }
        }
    }
}
