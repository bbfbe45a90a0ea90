//! Tests of the persist module: paged writes materialise to the unpaged
//! documents, resume from unpaged stores.

use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::context::epochs::CachePolicy;
use crate::fs::indexer::{Indexer, IndexerOptions};
use crate::fs::resolver::Resolver;
use crate::session::paged;
use crate::session::{Layout, OrderedSet, SessionOptions};
use crate::store::embedded::EmbeddedStore;
use crate::store::AsOf;

/// The chat document as one document, as it was written before paging.
fn unpaged_chat(s: &Session) -> Document {
    let mut f = Map::new();
    f.insert("turns".into(), serde_json::to_value(&s.chat.turns).unwrap());
    f.insert("session_ref".into(), s.ids.session.clone().into());
    f.insert("turn_count".into(), s.chat.turns.len().into());
    f.insert(
        "toolcall_refs".into(),
        Value::from(s.chat.toolcall_refs.clone()),
    );
    let mut d = assigned_document(&s.ids.chat, ObjectType::Chat, Some(String::new()), f);
    d.insert(
        "cursor".into(),
        json!({"consumed": s.cursor.consumed, "last_fp": s.cursor.last_fp, "first_head": s.cursor.first_head}),
    );
    d.insert(
        "model_calls".into(),
        serde_json::to_value(&s.records.model_calls).unwrap(),
    );
    let (aliases, layout) = s.cache_persisted();
    d.insert("aliases".into(), aliases);
    d.insert("layout".into(), layout);
    d
}

/// The session document as one document, as it was written before paging.
fn unpaged_session(s: &Session) -> Document {
    let ids = |s: &OrderedSet| Value::from(s.to_vec());
    let mut f = Map::new();
    f.insert("session_id".into(), s.options.session_id.clone().into());
    f.insert("chat_ref".into(), s.ids.chat.clone().into());
    f.insert(
        "system_prompt_ref".into(),
        s.ids.system_prompt.clone().into(),
    );
    f.insert("session_index".into(), ids(&s.sets.index));
    f.insert("metadata_pool".into(), ids(&s.sets.pool));
    f.insert("active_set".into(), ids(&s.sets.active));
    f.insert("pinned_set".into(), ids(&s.sets.pinned));
    let mut d = assigned_document(&s.ids.session, ObjectType::Session, None, f);
    d.insert("recent_use".into(), serde_json::to_value(&s.uses).unwrap());
    d
}

fn msg_user(text: &str, ts: i64) -> Value {
    json!({"role": "user", "content": text, "timestamp": ts})
}
fn msg_call(id: &str, cmd: &str, ts: i64) -> Value {
    json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "hmm", "thinkingSignature": "sig"},
            {"type": "toolCall", "id": id, "name": "bash", "arguments": {"command": cmd}}],
        "api": "faux", "provider": "faux", "model": "m", "usage": {"input": 1},
        "stopReason": "toolUse", "timestamp": ts})
}
fn msg_result(id: &str, text: &str, ts: i64) -> Value {
    json!({"role": "toolResult", "toolCallId": id, "toolName": "bash",
        "content": [{"type": "text", "text": text}], "isError": false, "timestamp": ts})
}

/// Materialised chat and session documents equal the unpaged ones, at
/// every write (as of its transaction and in the history), across page
/// boundaries, results completing calls of earlier pages, epochs and a
/// resume.
/// The embedded store, and a real XTDB node when `SCM_TEST_XTDB_URL`
/// names one (as the integration suites do).
fn stores() -> Vec<Arc<dyn Store>> {
    let mut out: Vec<Arc<dyn Store>> = vec![Arc::new(EmbeddedStore::open_in_memory().unwrap())];
    if let Ok(url) = std::env::var("SCM_TEST_XTDB_URL") {
        if !url.trim().is_empty() {
            let opts = crate::store::xtdb::XtdbOptions::new(url);
            out.push(Arc::new(crate::store::xtdb::XtdbStore::new(opts).unwrap()));
        }
    }
    out
}

/// An indexer over a fresh workspace directory.
fn indexer_in(dir: &tempfile::TempDir, store: &Arc<dyn Store>) -> Arc<Indexer> {
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let resolver = Arc::new(Resolver::new("fs-t".into(), root, vec![], true));
    Arc::new(Indexer::new(
        store.clone(),
        resolver,
        IndexerOptions::default(),
    ))
}

fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{prefix}-{nanos}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn materialised_documents_equal_the_unpaged_ones() {
    for store in stores() {
        roundtrip(store).await;
    }
}

async fn roundtrip(store: Arc<dyn Store>) {
    let dir = tempfile::tempdir().unwrap();
    let indexer = indexer_in(&dir, &store);
    let mut opts = SessionOptions::new(unique("paged-roundtrip"));
    opts.layout = Layout::Cache;
    opts.cache = CachePolicy {
        high: 400,
        low: 100,
        fold: 0,
        ..CachePolicy::default()
    };
    opts.system_prompt = Some("sys".into());
    let mut s = Session::open(store.clone(), indexer.clone(), opts.clone())
        .await
        .unwrap();
    let mut msgs: Vec<Value> = Vec::new();
    let mut expected: Vec<(i64, Document, Document)> = Vec::new();
    let mut ts = 0;
    let mut next = || {
        ts += 1;
        ts
    };
    for i in 0..150 {
        if i % 40 == 0 {
            msgs.push(msg_user(&format!("turn {i}"), next()));
        }
        msgs.push(msg_call(&format!("c{i}"), &format!("echo {i}"), next()));
        // Every 7th result arrives one call late: the assistant message
        // it completes sits in an earlier write (and, at times, page).
        // c5's result comes 100 calls late, pages after its call.
        if i % 7 != 6 && i != 5 {
            msgs.push(msg_result(&format!("c{i}"), &"out\n".repeat(60), next()));
        }
        if i == 105 {
            msgs.push(msg_result("c5", "very late", next()));
        }
        if i % 7 == 0 && i > 0 {
            msgs.push(msg_result(&format!("c{}", i - 1), "late", next()));
        }
        s.ingest_and_assemble_json(&msgs).unwrap();
        let chat = unpaged_chat(&s);
        let session = unpaged_session(&s);
        let r = s.flush().await.unwrap().expect("a write");
        expected.push((r.tx_id, chat, session));
    }
    assert!(s.cache_epochs() > 0, "the test needs epochs");
    let (chat_id, session_id) = (s.ids.chat.clone(), s.ids.session.clone());
    let last = expected.last().unwrap();
    assert_eq!(
        paged::get(&*store, &chat_id).await.unwrap().unwrap(),
        last.1
    );
    assert_eq!(
        paged::get(&*store, &session_id).await.unwrap().unwrap(),
        last.2
    );
    for (tx, chat, session) in &expected {
        let at = AsOf::TxId(*tx);
        assert_eq!(
            &paged::get_as_of(&*store, &chat_id, at)
                .await
                .unwrap()
                .unwrap(),
            chat
        );
        assert_eq!(
            &paged::get_as_of(&*store, &session_id, at)
                .await
                .unwrap()
                .unwrap(),
            session
        );
    }
    let history = paged::history(&*store, &chat_id).await.unwrap();
    for (tx, chat, _) in &expected {
        let v = history.iter().find(|v| v.tx_id == *tx).expect("version");
        assert_eq!(v.doc.as_ref().unwrap(), chat);
    }
    // The stored head is small: it holds no turns.
    let head = store.get(&chat_id).await.unwrap().unwrap();
    assert!(head.get("turns").is_none() && head.contains_key(paged::PAGED_KEY));

    // Resumed: the same state, and the next write continues the pages.
    let calls = s.model_call_count();
    drop(s);
    let mut s = Session::open(store.clone(), indexer.clone(), opts)
        .await
        .unwrap();
    assert_eq!(s.model_call_count(), calls);
    // The last record's basis was not written yet: the resume takes it from
    // the chat's history (the write that carried it), to write it next.
    let mut resumed = last.1.clone();
    let records = resumed["model_calls"].as_array_mut().unwrap();
    let stored = records.last_mut().unwrap();
    assert_eq!(stored["basis_tx"], Value::Null, "{stored:?}");
    stored["basis_tx"] = last.0.into();
    assert_eq!(unpaged_chat(&s), resumed);
    assert_eq!(unpaged_session(&s), last.2);
    msgs.push(msg_call("z", "echo z", next()));
    msgs.push(msg_result("z", "zz", next()));
    s.ingest_and_assemble_json(&msgs).unwrap();
    let chat = unpaged_chat(&s);
    s.flush().await.unwrap();
    assert_eq!(paged::get(&*store, &chat_id).await.unwrap().unwrap(), chat);
    for i in 0..s.model_call_count() {
        s.reconstruct_call(i).await.unwrap();
    }
}

/// A document written before paging (one chat document) is read as it
/// is, and the session resumes from it; its next write is paged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resumes_from_an_unpaged_store() {
    for store in stores() {
        resume_unpaged(store).await;
    }
}

async fn resume_unpaged(store: Arc<dyn Store>) {
    let dir = tempfile::tempdir().unwrap();
    let indexer = indexer_in(&dir, &store);
    let sid = unique("unpaged");
    let chat_id = format!("chat:{sid}");
    let opts = SessionOptions::new(sid);
    let mut s = Session::open(store.clone(), indexer.clone(), opts.clone())
        .await
        .unwrap();
    let msgs = vec![
        msg_user("hi", 1),
        msg_call("c1", "echo 1", 2),
        msg_result("c1", "one", 3),
        msg_call("c2", "echo 2", 4),
    ];
    s.ingest_and_assemble_json(&msgs).unwrap();
    s.flush().await.unwrap();
    // Rewrite the heads as the previous version stored them: whole.
    let (chat, session) = (unpaged_chat(&s), unpaged_session(&s));
    store
        .submit(vec![TxOp::Put(chat.clone()), TxOp::Put(session.clone())])
        .await
        .unwrap();
    let turns = s.turn_count();
    drop(s);
    assert_eq!(paged::get(&*store, &chat_id).await.unwrap().unwrap(), chat);
    let mut s = Session::open(store.clone(), indexer.clone(), opts)
        .await
        .unwrap();
    assert_eq!(s.turn_count(), turns);
    assert_eq!(unpaged_chat(&s), chat);
    assert_eq!(unpaged_session(&s), session);
    let mut msgs = msgs;
    msgs.push(msg_result("c2", "two", 5));
    s.ingest_and_assemble_json(&msgs).unwrap();
    let expected = unpaged_chat(&s);
    s.flush().await.unwrap();
    let head = store.get(&chat_id).await.unwrap().unwrap();
    assert!(head.contains_key(paged::PAGED_KEY));
    assert_eq!(
        paged::get(&*store, &chat_id).await.unwrap().unwrap(),
        expected
    );
    for i in 0..s.model_call_count() {
        s.reconstruct_call(i).await.unwrap();
    }
}
