//! Export/import (issue 12 item 6, memory-system-v0 §11.6): SQLite → XTDB
//! → SQLite round-trips to identical documents and history. The XTDB leg
//! runs when `SCM_TEST_XTDB_URL` is set (`SCM_REQUIRE_XTDB=1` makes its
//! absence a failure); without it the middle store is a second SQLite one.

mod session_support;

use std::sync::Arc;

use scm_core::memory::portable;
use scm_core::store::embedded::EmbeddedStore;
use scm_core::store::Store;
use serde_json::json;
use session_support::*;

/// A session with notes (several versions), a toolcall, a discovered stub
/// and pages, written to `store`; returns the session id.
async fn populate(ws: &Workspace) -> String {
    let mut s = ws.session("portable").await;
    let sid = s.session_id().to_owned();
    ws.write("notes/b.md", "B\n");
    ws.write("notes/a.md", "---\ntags: [x]\n---\nsee [[b]] and [[c]]\n");
    assert!(s.read("notes/a.md").await.unwrap().ok);
    ws.write("notes/a.md", "---\ntags: [x, y]\n---\nsee [[b]]\n");
    assert!(s.observe_edit("notes/a.md").await.unwrap().ok);
    let mut t = Transcript::default();
    t.user("go").call(
        "c1",
        "bash",
        json!({"command": "ls"}),
        "out \u{1F600} \"q\"\n",
    );
    s.transform_context(&t.messages).await.unwrap();
    s.close().await.unwrap();
    sid
}

async fn histories(store: &dyn Store, ids: &[String]) -> Vec<(String, Vec<serde_json::Value>)> {
    let mut out = Vec::new();
    for id in ids {
        let h = store.history(id).await.unwrap();
        out.push((id.clone(), h.into_iter().map(|v| json!(v.doc)).collect()));
    }
    out
}

fn middle_store() -> Arc<dyn Store> {
    stores().pop().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_to_xtdb_to_sqlite_round_trips_documents_and_history() {
    let a: Arc<dyn Store> = Arc::new(EmbeddedStore::open_in_memory().unwrap());
    let ws = Workspace::new(a.clone());
    let sid = populate(&ws).await;
    let ids = a.all_ids().await.unwrap();
    assert!(ids.iter().any(|i| i.starts_with("page:")), "{ids:?}");
    assert!(ids.iter().any(|i| i.starts_with("toolcall:")), "{ids:?}");
    let before = histories(&*a, &ids).await;
    assert!(
        before.iter().any(|(_, h)| h.len() > 1),
        "some object has versions"
    );

    // Whole store out of SQLite.
    let mut file = Vec::new();
    let out = portable::export(&*a, None, &mut file).await.unwrap();
    assert_eq!(out.objects, ids.len() as u64);
    assert_eq!(out.bytes, file.len() as u64);
    let text = String::from_utf8(file.clone()).unwrap();
    assert_eq!(text.lines().count() as u64, out.versions + 1);
    assert!(text.starts_with("{\"format\":\"scm-export\""), "{text}");

    // Into the middle store (XTDB when configured), then the session back
    // out of it (the node is shared, so not the whole store).
    let b = middle_store();
    let inn = portable::import(&*b, &mut file.as_slice()).await.unwrap();
    assert_eq!(
        (inn.versions, inn.transactions),
        (out.versions, out.transactions)
    );
    let mut again = Vec::new();
    portable::export(&*b, Some(std::slice::from_ref(&sid)), &mut again)
        .await
        .unwrap();

    // Into a fresh SQLite store: identical documents, same history.
    let c: Arc<dyn Store> = Arc::new(EmbeddedStore::open_in_memory().unwrap());
    portable::import(&*c, &mut again.as_slice()).await.unwrap();
    assert_eq!(c.all_ids().await.unwrap(), ids, "{}", b.kind());
    assert_eq!(histories(&*c, &ids).await, before);
    // Versions written together stay together.
    let tx_of = |h: &Vec<scm_core::store::Version>| h.iter().map(|v| v.tx_id).collect::<Vec<_>>();
    let mut groups_a = Vec::new();
    let mut groups_c = Vec::new();
    for id in &ids {
        groups_a.push(tx_of(&a.history(id).await.unwrap()).len());
        groups_c.push(tx_of(&c.history(id).await.unwrap()).len());
    }
    assert_eq!(groups_a, groups_c);
    // Backlinks and search work on the imported store.
    let b_id = ws.file_id("notes/b.md");
    assert_eq!(
        c.backlinks(&b_id).await.unwrap(),
        vec![ws.file_id("notes/a.md")]
    );

    // Importing the same file again writes nothing.
    let twice = portable::import(&*c, &mut again.as_slice()).await.unwrap();
    assert_eq!((twice.versions, twice.transactions), (0, 0));
    assert_eq!(twice.skipped, inn.versions);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_files_are_invalid_argument() {
    let c: Arc<dyn Store> = Arc::new(EmbeddedStore::open_in_memory().unwrap());
    for (text, needle) in [
        ("", "empty file"),
        ("{\"format\":\"other\"}\n", "not an scm-export file"),
        ("{\"format\":\"scm-export\",\"version\":9}\n", "unsupported version"),
        ("{\"format\":\"scm-export\",\"version\":1}\nnot json\n", "line 2"),
        (
            "{\"format\":\"scm-export\",\"version\":1}\n{\"tx\":2,\"tx_time\":\"t\",\"doc\":{\"xt/id\":\"a\"}}\n{\"tx\":1,\"tx_time\":\"t\",\"doc\":{\"xt/id\":\"b\"}}\n",
            "not in tx order",
        ),
    ] {
        let e = portable::import(&*c, &mut text.as_bytes()).await.unwrap_err();
        assert_eq!(e.code(), "INVALID_ARGUMENT");
        assert!(e.to_string().contains(needle), "{e}");
    }
    let e = portable::export(&*c, Some(&["no-such-session".into()]), &mut Vec::new())
        .await
        .unwrap_err();
    assert_eq!(e.code(), "UNKNOWN_OBJECT");
}
