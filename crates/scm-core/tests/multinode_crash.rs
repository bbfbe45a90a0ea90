//! A node of the multi-node deployment dies (SIGKILL) mid-session; see
//! `multinode.rs` for the set-up. Its own test binary, so no other test is
//! using node 2 when it is killed. Needs `SCM_TEST_XTDB_NODES` (as
//! `multinode.rs`) and `SCM_TEST_XTDB_KILLABLE=1`: it runs
//! `xtdb/cluster.sh kill 2` and `xtdb/cluster.sh restart 2`.

mod multinode_support;
mod session_support;

use multinode_support::{cluster, content, node_urls, same_history, xtdb, Shared};
use scm_core::fs::indexer::IndexAction;
use scm_core::store::Store;
use serde_json::json;
use session_support::{occurrences, Transcript};

/// Node 2 is SIGKILLed mid-session: the agent on node 1 goes on (reads,
/// edits, context calls); node 2, restarted on its own index, catches up
/// from the shared log (await-tx of node 1's last tx) and the agent on it
/// reads node 1's versions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_node_does_not_stop_the_other_and_catches_up_on_restart() {
    let Some(urls) = node_urls() else { return };
    if std::env::var("SCM_TEST_XTDB_KILLABLE").as_deref() != Ok("1") {
        eprintln!("SKIPPED: set SCM_TEST_XTDB_KILLABLE=1 to let this test kill node 2");
        return;
    }
    let (n1, n2) = (xtdb(&urls[0]), xtdb(&urls[1]));
    let ws = Shared::new();
    ws.write("main.py", "print('v1')\n");
    let mut a = ws.session(n1.clone(), "mn-kill-a").await;
    let mut b = ws.session(n2.clone(), "mn-kill-b").await;
    assert!(a.read("main.py").await.unwrap().ok);
    assert!(b.read("main.py").await.unwrap().ok);
    let id = ws
        .indexer(n1.clone())
        .resolver
        .resolve("main.py")
        .unwrap()
        .source
        .file_object_id();
    let mut t = Transcript::default();
    t.user("edit main");

    cluster(&["kill", "2"]);
    for v in 2..=4 {
        ws.write("main.py", &format!("print('v{v}')\n"));
        let r = a.observe_edit("main.py").await.unwrap();
        assert!(r.ok, "agent on node 1 after node 2 died: {r:?}");
        t.call(&format!("e{v}"), "edit", json!({"path": "main.py"}), "ok");
        let out = a.transform_context(&t.messages).await.unwrap();
        assert_eq!(occurrences(&out, &format!("print('v{v}')")), 1);
    }
    a.flush().await.unwrap();
    let last = n1.latest_tx_id().await.unwrap().unwrap();

    cluster(&["restart", "2"]);
    let history = same_history(&n1, &n2, &id, last).await;
    assert_eq!(
        history,
        (1..=4)
            .map(|v| Some(format!("print('v{v}')\n")))
            .collect::<Vec<_>>()
    );
    // The agent on the restarted node goes on with the versions it missed.
    let r = b.read("main.py").await.unwrap();
    assert!(r.ok, "{r:?}");
    let latest = n2.get(&id).await.unwrap().unwrap();
    assert_eq!(content(&latest), Some("print('v4')\n"));
    let out = b.transform_context(&t.messages).await.unwrap();
    assert_eq!(occurrences(&out, "print('v4')"), 1);
    assert_eq!(
        n2.history(&id).await.unwrap().len(),
        4,
        "no duplicate after restart"
    );
    a.close().await.unwrap();
    b.close().await.unwrap();
    assert_eq!(
        IndexAction::Unchanged,
        ws.indexer(n2.clone())
            .index_file("main.py")
            .await
            .unwrap()
            .action
    );
}
