//! Search through XTDB's term index (issue 12 item 4): prefix terms, the
//! index never shows in documents, and a `match` against a document written
//! before the index (no terms) still commits. Both stores where it applies.

mod session_support;

use scm_core::memory::{self, SearchOptions};
use scm_core::model::{toolcall_document, ToolcallFields};
use scm_core::store::{TxOp, ID_KEY};
use serde_json::json;
use session_support::*;

fn call(id: &str, content: &str) -> scm_core::store::Document {
    toolcall_document(
        id,
        ToolcallFields {
            content: content.into(),
            tool: "bash".into(),
            args: json!({"command": "x"}),
            args_display: None,
            status: "ok".into(),
            chat_ref: "chat:terms".into(),
            file_refs: None,
        },
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefix_and_exact_terms_and_no_terms_in_documents() {
    for store in stores() {
        let tok: String = unique_id("t")
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .collect();
        let tok = tok.to_lowercase();
        let a = call(
            &format!("toolcall:terms:{tok}a"),
            &format!("{tok}alpha and beta"),
        );
        let b = call(
            &format!("toolcall:terms:{tok}b"),
            &format!("{tok}alpine only"),
        );
        store
            .submit(vec![TxOp::Put(a.clone()), TxOp::Put(b.clone())])
            .await
            .unwrap();
        let ids = |hits: Vec<memory::SearchHit>| {
            let mut v: Vec<String> = hits.into_iter().map(|h| h.id).collect();
            v.sort();
            v
        };
        let both = memory::search(&*store, &format!("{tok}alp*"), &SearchOptions::default())
            .await
            .unwrap();
        assert_eq!(
            ids(both),
            vec![a[ID_KEY].as_str().unwrap(), b[ID_KEY].as_str().unwrap()],
            "{}",
            store.kind()
        );
        let one = memory::search(
            &*store,
            &format!("{tok}alpha beta"),
            &SearchOptions::default(),
        )
        .await
        .unwrap();
        assert_eq!(ids(one), vec![a[ID_KEY].as_str().unwrap()]);
        let mixed = memory::search(
            &*store,
            &format!("bet* {tok}alpine"),
            &SearchOptions::default(),
        )
        .await
        .unwrap();
        assert!(mixed.is_empty(), "{mixed:?}");
        // Reads give the document as written, without the index.
        let id = a[ID_KEY].as_str().unwrap().to_owned();
        assert_eq!(store.get(&id).await.unwrap().unwrap(), a);
        assert_eq!(
            store.get_many(std::slice::from_ref(&id)).await.unwrap(),
            vec![a.clone()]
        );
        assert_eq!(store.history(&id).await.unwrap()[0].doc.as_ref(), Some(&a));
        // A match on what was read commits.
        let r = store
            .submit(vec![
                TxOp::Match {
                    id: id.clone(),
                    expected: Some(a.clone()),
                },
                TxOp::Put(call(&id, "changed")),
            ])
            .await
            .unwrap();
        assert!(r.committed, "{}", store.kind());
    }
}

/// A document an earlier build wrote (no terms) still matches what a
/// reader got back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn match_against_a_document_written_without_terms_commits() {
    let Ok(url) = std::env::var("SCM_TEST_XTDB_URL") else {
        return;
    };
    let url = url.trim_end_matches('/').to_owned();
    let store = stores().pop().unwrap();
    let id = format!("toolcall:terms:{}", unique_id("old"));
    let old = call(&id, "written by an older build");
    let http = reqwest::Client::new();
    let tx: serde_json::Value = http
        .post(format!("{url}/_xtdb/submit-tx"))
        .header("accept", "application/json")
        .json(&json!({"tx-ops": [["put", old]]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let tx_id = tx["txId"].as_i64().expect("a tx id");
    http.get(format!("{url}/_xtdb/await-tx?txId={tx_id}"))
        .header("accept", "application/json")
        .send()
        .await
        .unwrap();
    let read = store.get(&id).await.unwrap().unwrap();
    assert_eq!(read, old);
    let r = store
        .submit(vec![
            TxOp::Match {
                id: id.clone(),
                expected: Some(read),
            },
            TxOp::Put(call(&id, "newer")),
        ])
        .await
        .unwrap();
    assert!(r.committed);
    // A wrong expectation still aborts (the retry is not a bypass).
    let r = store
        .submit(vec![
            TxOp::Match {
                id: id.clone(),
                expected: Some(old),
            },
            TxOp::Put(call(&id, "never")),
        ])
        .await
        .unwrap();
    assert!(!r.committed);
    assert_eq!(store.get(&id).await.unwrap().unwrap()["content"], "newer");
}
