//! One path for a file version (issue 15 item 3): the indexer plans the
//! version, the session queues it with its own documents, and a read, a
//! write or an edit is one store transaction. Two sessions that read the
//! same new file meanwhile end with one version of it.

mod session_support;

use scm_core::session::FileOp;
use session_support::*;

#[tokio::test]
async fn a_read_a_write_and_an_edit_are_one_transaction_each() {
    for store in stores() {
        let ws = Workspace::new(store.clone());
        ws.write("a.txt", "alpha\n");
        let mut s = ws.session("one-tx").await;
        let id = ws.file_id("a.txt");

        let before = store.submitted_tx_count();
        let r = s.read("a.txt").await.unwrap();
        assert!(r.ok, "{}", r.message);
        assert_eq!(
            store.submitted_tx_count() - before,
            1,
            "read: {}",
            r.message
        );
        assert_eq!(store.history(&id).await.unwrap().len(), 1);

        ws.write("a.txt", "beta\n");
        let before = store.submitted_tx_count();
        let r = s.observe_edit("a.txt").await.unwrap();
        assert!(r.ok && r.message.contains("updated"), "{}", r.message);
        assert_eq!(store.submitted_tx_count() - before, 1, "edit");
        let latest = store.get(&id).await.unwrap().unwrap();
        assert_eq!(latest["content"], "beta\n");
        assert_eq!(store.history(&id).await.unwrap().len(), 2);

        ws.write("b.txt", "new file\n");
        let before = store.submitted_tx_count();
        let r = s.observe_write("b.txt").await.unwrap();
        assert!(r.ok && r.message.contains("created"), "{}", r.message);
        assert_eq!(store.submitted_tx_count() - before, 1, "write");

        // Unchanged: no new version, at most the session's own write.
        let before = store.submitted_tx_count();
        let r = s.read("a.txt").await.unwrap();
        assert!(r.ok && r.message.contains("unchanged"), "{}", r.message);
        assert!(store.submitted_tx_count() - before <= 1);
        assert_eq!(store.history(&id).await.unwrap().len(), 2);

        // The session's records name the version that landed with them.
        let shown = s.known_doc(&id).unwrap().clone();
        assert_eq!(shown["object_hash"], latest["object_hash"]);
        s.close().await.unwrap();
    }
}

#[tokio::test]
async fn two_sessions_reading_one_new_file_leave_one_version() {
    for store in stores() {
        let ws = Workspace::new(store.clone());
        ws.write("shared.txt", "same bytes\n");
        let id = ws.file_id("shared.txt");
        let mut a = ws.session("race-a").await;
        let mut b = ws.session("race-b").await;
        // B plans its version before A's lands: both derive from "none".
        let planned = ws.indexer.plan_file("shared.txt").await;
        assert!(a.read("shared.txt").await.unwrap().ok);
        let r = b.apply_file_op_or_read(FileOp::Read, "shared.txt", planned);
        assert!(r.ok, "{}", r.message);
        b.flush().await.unwrap();
        assert_eq!(store.history(&id).await.unwrap().len(), 1);
        let stored = store.get(&id).await.unwrap().unwrap();
        assert_eq!(
            b.known_doc(&id).unwrap()["object_hash"],
            stored["object_hash"]
        );
        assert!(b.write_error().is_none());
    }
}
