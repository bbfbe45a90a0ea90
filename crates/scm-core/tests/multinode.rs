//! Several XTDB nodes on one PostgreSQL-backed log (issue 14): agents on
//! different nodes share one store. Real parts only: the nodes are started
//! by `bash xtdb/cluster.sh start 2` (PostgreSQL from Debian's package, two
//! XTDB 1.24.5 nodes, each with its own RocksDB index), the files are real.
//!
//! `SCM_TEST_XTDB_NODES` = the nodes' URLs, comma-separated (at least two).
//! Without it every test skips with a notice, unless
//! `SCM_REQUIRE_XTDB_NODES=1`. The crash test is `multinode_crash.rs` (its
//! own binary: it kills a node that these tests use).
//!
//! Consistency between nodes is always reached through XTDB's await-tx of
//! the writer's tx id on the reader's node; nothing here sleeps.

mod multinode_support;
mod race_support;
mod session_support;

use std::sync::Arc;

use multinode_support::{content, node_urls, same_history, xtdb, Shared};
use scm_core::store::{Document, Store, TxOp, ID_KEY};
use serde_json::json;
use session_support::{active_ids, occurrences, unique_id, Transcript};
use tokio::sync::Mutex;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_your_writes_on_the_writers_node_and_after_await_tx_on_the_other() {
    let Some(urls) = node_urls() else { return };
    let (n1, n2) = (xtdb(&urls[0]), xtdb(&urls[1]));
    let id = unique_id("mn-ryw");
    let doc = |v: i64| {
        let mut d = Document::new();
        d.insert(ID_KEY.into(), json!(id));
        d.insert("v".into(), json!(v));
        d
    };
    for v in 1..=3 {
        let written_on = if v % 2 == 1 { &n1 } else { &n2 };
        let read_on = if v % 2 == 1 { &n2 } else { &n1 };
        let r = written_on.submit(vec![TxOp::Put(doc(v))]).await.unwrap();
        assert!(r.committed);
        // submit awaited the tx on the writer's node.
        assert_eq!(written_on.get(&id).await.unwrap(), Some(doc(v)));
        read_on.await_tx(r.tx_id).await.unwrap();
        assert_eq!(read_on.get(&id).await.unwrap(), Some(doc(v)));
        assert_eq!(read_on.history(&id).await.unwrap().len(), v as usize);
    }
    // A compare-and-set decided on one node holds on the other: the match
    // is evaluated once, in log order.
    let stale = n2
        .submit(vec![
            TxOp::Match {
                id: id.clone(),
                expected: Some(doc(1)),
            },
            TxOp::Put(doc(9)),
        ])
        .await
        .unwrap();
    assert!(!stale.committed);
    n1.await_tx(stale.tx_id).await.unwrap();
    assert_eq!(n1.get(&id).await.unwrap(), Some(doc(3)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_agents_on_two_nodes_share_objects_and_see_each_others_versions() {
    let Some(urls) = node_urls() else { return };
    let (n1, n2) = (xtdb(&urls[0]), xtdb(&urls[1]));
    let ws = Shared::new();
    ws.write("src/lib.rs", "pub fn one() {}\n");
    ws.write("README.md", "# shared readme\n");
    let mut a = ws.session(n1.clone(), "mn-agent-a").await;
    let mut b = ws.session(n2.clone(), "mn-agent-b").await;

    // The same files give the same object ids on both nodes.
    for rel in ["src/lib.rs", "README.md"] {
        let ra = a.read(rel).await.unwrap();
        let rb = b.read(rel).await.unwrap();
        assert!(ra.ok && rb.ok, "{ra:?} {rb:?}");
        assert_eq!(ra.id, rb.id, "{rel}: object ids differ between nodes");
    }
    let lib = ws
        .indexer(n1.clone())
        .resolver
        .resolve("src/lib.rs")
        .unwrap();
    let lib_id = lib.source.file_object_id();

    // A edits; B reads the edit through its own node.
    ws.write("src/lib.rs", "pub fn one() {}\npub fn two() {}\n");
    assert!(a.observe_edit("src/lib.rs").await.unwrap().ok);
    let a_latest = n1.latest_tx_id().await.unwrap().unwrap();
    assert!(b.read("src/lib.rs").await.unwrap().ok);
    let mut t = Transcript::default();
    t.user("what is in lib?")
        .call("c1", "read", json!({"path": "src/lib.rs"}), "…");
    let out = b.transform_context(&t.messages).await.unwrap();
    assert_eq!(occurrences(&out, "pub fn two() {}"), 1);
    assert!(active_ids(&out).contains(&lib_id));

    // B edits; A sees it. Every version is kept, once, on both nodes.
    ws.write("src/lib.rs", "pub fn three() {}\n");
    assert!(b.observe_edit("src/lib.rs").await.unwrap().ok);
    assert!(a.read("src/lib.rs").await.unwrap().ok);
    let latest = n2.latest_tx_id().await.unwrap().unwrap().max(a_latest);
    let history = same_history(&n1, &n2, &lib_id, latest).await;
    assert_eq!(
        history,
        vec![
            Some("pub fn one() {}\n".to_owned()),
            Some("pub fn one() {}\npub fn two() {}\n".to_owned()),
            Some("pub fn three() {}\n".to_owned()),
        ],
        "one version per content, none lost, none duplicated"
    );
    let out = a.transform_context(&t.messages).await.unwrap();
    assert_eq!(occurrences(&out, "pub fn three() {}"), 1);
    a.close().await.unwrap();
    b.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_write_from_one_node_loses_to_a_newer_one_from_the_other() {
    let Some(urls) = node_urls() else { return };
    race_support::stale_write_loses(xtdb(&urls[0]), xtdb(&urls[1])).await;
}

/// Two writers change three shared files in turn (a lock orders the disk
/// writes, so contents carry an increasing number); an indexer on each node
/// indexes after every change of its own. Every committed version stays in
/// history, no older content ever follows a newer one, no content is
/// stored twice in a row, and the latest version is the disk's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_indexers_on_two_nodes_lose_nothing_and_never_go_back() {
    let Some(urls) = node_urls() else { return };
    let (n1, n2) = (xtdb(&urls[0]), xtdb(&urls[1]));
    let ws = Arc::new(Shared::new());
    const FILES: [&str; 3] = ["a.txt", "b.txt", "c.txt"];
    const ROUNDS: usize = 12;
    let seq = Arc::new(Mutex::new(0u64));
    let mut tasks = Vec::new();
    for (w, store) in [n1.clone(), n2.clone()].into_iter().enumerate() {
        let (ws, seq) = (ws.clone(), seq.clone());
        let indexer = ws.indexer(store);
        tasks.push(tokio::spawn(async move {
            let mut committed = Vec::new();
            for round in 0..ROUNDS {
                let rel = FILES[(round + w) % FILES.len()];
                {
                    let mut n = seq.lock().await;
                    *n += 1;
                    ws.write(rel, &format!("{:06} by writer {w}\n", *n));
                }
                let r = indexer.index_file(rel).await.unwrap();
                if let Some(receipt) = r.receipt {
                    let c = content(&r.doc).unwrap().to_owned();
                    committed.push((r.object_id, c, receipt.tx_id));
                }
            }
            committed
        }));
    }
    let mut committed = Vec::new();
    for t in tasks {
        committed.extend(t.await.unwrap());
    }
    // A last look by both indexers: the disk's content is the latest.
    let (i1, i2) = (ws.indexer(n1.clone()), ws.indexer(n2.clone()));
    let mut last_tx = committed.iter().map(|c| c.2).max().unwrap();
    for rel in FILES {
        for ix in [&i1, &i2] {
            let r = ix.index_file(rel).await.unwrap();
            if let Some(receipt) = &r.receipt {
                last_tx = last_tx.max(receipt.tx_id);
                committed.push((
                    r.object_id.clone(),
                    content(&r.doc).unwrap().into(),
                    receipt.tx_id,
                ));
            }
        }
    }
    for rel in FILES {
        let id = i1.resolver.resolve(rel).unwrap().source.file_object_id();
        let history = same_history(&n1, &n2, &id, last_tx).await;
        let contents: Vec<String> = history.into_iter().map(Option::unwrap).collect();
        for (cid, c, _) in committed.iter().filter(|c| c.0 == id) {
            assert!(
                contents.contains(c),
                "{cid}: committed {c:?} is not in history"
            );
        }
        let numbers: Vec<u64> = contents.iter().map(|c| c[..6].parse().unwrap()).collect();
        assert!(
            numbers.windows(2).all(|w| w[0] < w[1]),
            "{rel}: an older content follows a newer one, or one is stored twice: {numbers:?}"
        );
        let disk = std::fs::read_to_string(ws.root.join(rel)).unwrap();
        assert_eq!(
            contents.last(),
            Some(&disk),
            "{rel}: latest is not the disk's"
        );
    }
}
