//! `SessionHandle`: the session as a host shares it — the product's
//! defaults in one place, write-behind that reads of the store wait for,
//! durable transforms, file operations and closing (issue 15 item 1).

mod session_support;

use scm_core::error::Error;
use scm_core::model::chat_object_id;
use scm_core::session::handle::{HandleOptions, SessionHandle};
use scm_core::session::{FileOp, Layout, SessionOptions};
use session_support::*;

#[test]
fn the_product_defaults_are_the_handle_options() {
    let h = HandleOptions::new("s");
    assert_eq!(h.session.layout, Layout::Cache);
    assert!(!h.durable_transform);
    assert!(!h.session.watch);
    assert!(h.session.render.emit_system_message);
    assert!(h.session.resume_upgrades_stubs);
    // The engine's own default (Rust callers, the drop-in's contract).
    assert_eq!(SessionOptions::new("s").layout, Layout::Spec);
}

#[tokio::test]
async fn write_behind_lands_before_the_store_is_read() {
    for store in stores() {
        let ws = Workspace::new(store.clone());
        let id = unique_id("handle-behind");
        let h = SessionHandle::open(store.clone(), ws.indexer.clone(), HandleOptions::new(&id))
            .await
            .unwrap();
        assert!(h.writes_behind() && h.can_transform_now());
        let mut t = Transcript::default();
        t.user("hello");
        let out = h
            .transform_now(|s| s.ingest_and_assemble(&t.messages).map(Some))
            .unwrap()
            .unwrap();
        assert!(!out.is_empty());
        // The chat's write went behind; a read through the handle waits for it.
        let chat = h.get_object(&chat_object_id(&id)).await.unwrap().unwrap();
        assert!(serde_json::to_string(&chat).unwrap().contains("hello"));
        assert!(!h.with(|s| Ok(s.has_pending())).unwrap());
        h.close().await.unwrap();
    }
}

#[tokio::test]
async fn a_durable_session_awaits_its_write_and_refuses_transform_now() {
    for store in stores() {
        let ws = Workspace::new(store.clone());
        let id = unique_id("handle-durable");
        let mut o = HandleOptions::new(&id);
        o.durable_transform = true;
        let h = SessionHandle::open(store.clone(), ws.indexer.clone(), o)
            .await
            .unwrap();
        assert!(!h.writes_behind() && !h.can_transform_now());
        let mut t = Transcript::default();
        t.user("durable hello");
        let e = h
            .transform_now(|s| s.ingest_and_assemble(&t.messages).map(Some))
            .unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
        h.transform(|s| s.ingest_and_assemble(&t.messages).map(Some))
            .await
            .unwrap();
        // Landed on return: the store itself (not the handle, which would
        // wait) has it.
        let chat = scm_core::session::paged::get(&*store, &chat_object_id(&id))
            .await
            .unwrap()
            .unwrap();
        assert!(serde_json::to_string(&chat)
            .unwrap()
            .contains("durable hello"));
        h.close().await.unwrap();
    }
}

#[tokio::test]
async fn file_operations_and_closing() {
    for store in stores() {
        let ws = Workspace::new(store.clone());
        ws.write("a.txt", "alpha\n");
        let h = SessionHandle::open(
            store.clone(),
            ws.indexer.clone(),
            HandleOptions::new(unique_id("handle-ops")),
        )
        .await
        .unwrap();
        let r = h.file_op(FileOp::Read, "a.txt").await.unwrap();
        assert!(r.ok, "{}", r.message);
        let id = ws.file_id("a.txt");
        assert_eq!(r.id.as_deref(), Some(id.as_str()));
        assert!(h.get_object(&id).await.unwrap().is_some());
        h.close().await.unwrap();
        h.close().await.unwrap(); // idempotent
        assert!(h.closed());
        assert!(matches!(
            h.file_op(FileOp::Read, "a.txt").await,
            Err(Error::SessionClosed)
        ));
    }
}

#[tokio::test]
async fn blank_note_folders_are_refused() {
    let store = stores().remove(0);
    let ws = Workspace::new(store.clone());
    let mut o = HandleOptions::new(unique_id("handle-notes"));
    o.session.note_folders = vec!["  ".into()];
    let e = SessionHandle::open(store, ws.indexer.clone(), o)
        .await
        .err()
        .expect("refused");
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
}
