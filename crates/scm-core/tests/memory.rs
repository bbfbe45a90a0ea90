//! Memory across sessions (issue 12, memory-system-v0 §7.3, §8–§14), on
//! every configured store: the embedded one always, a real XTDB node when
//! `SCM_TEST_XTDB_URL` is set (`SCM_REQUIRE_XTDB=1` makes its absence a
//! failure). Real files in a temporary workspace, real sessions.

mod session_support;

use scm_core::memory::{self, VersionRef};
use session_support::*;

// ------------------------------------------------------------ versions

/// Three versions of one file, written by a session: listed oldest first
/// with their transactions, hashes and sizes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versions_list_every_version_with_tx_hashes_and_size() {
    for store in stores() {
        let ws = Workspace::new(store.clone());
        let mut s = ws.session("versions").await;
        let bodies = ["one\n", "one\ntwo\n", "one\n2\nthree\n"];
        ws.write("notes/a.txt", bodies[0]);
        assert!(s.read("notes/a.txt").await.unwrap().ok);
        s.flush().await.unwrap();
        for b in &bodies[1..] {
            ws.write("notes/a.txt", b);
            assert!(s.observe_write("notes/a.txt").await.unwrap().ok);
            s.flush().await.unwrap();
        }
        let id = ws.file_id("notes/a.txt");
        let list = memory::versions(&*store, &id).await.unwrap();
        let history = store.history(&id).await.unwrap();
        assert_eq!(list.len(), 3, "{}: {list:?}", store.kind());
        for (n, (v, h)) in list.iter().zip(&history).enumerate() {
            let doc = h.doc.as_ref().unwrap();
            assert_eq!(v.version, n + 1);
            assert_eq!((v.tx_id, v.tx_time.as_str()), (h.tx_id, h.tx_time.as_str()));
            assert_eq!(v.content_hash.as_deref(), doc["content_hash"].as_str());
            assert_eq!(v.object_hash.as_deref(), doc["object_hash"].as_str());
            assert_eq!(v.metadata_hash.as_deref(), doc["metadata_hash"].as_str());
            assert_eq!(v.size, bodies[n].len() as u64);
            assert_eq!(v.state.as_deref(), Some("present"));
        }
        assert!(list.windows(2).all(|w| w[0].tx_id < w[1].tx_id));
        let text = memory::versions::render_versions(&id, &list);
        assert!(text.starts_with(&format!("{id}: 3 versions")), "{text}");
        assert_eq!(text.lines().count(), 4, "{text}");
        s.close().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_version_by_number_tx_time_and_latest_and_diff_them() {
    for store in stores() {
        let ws = Workspace::new(store.clone());
        let mut s = ws.session("show").await;
        let old = "fn main() {\n    println!(\"hi\");\n}\n";
        let new = "fn main() {\n    println!(\"hello\");\n}\n";
        ws.write("src/main.rs", old);
        assert!(s.read("src/main.rs").await.unwrap().ok);
        s.flush().await.unwrap();
        ws.write("src/main.rs", new);
        assert!(s.observe_edit("src/main.rs").await.unwrap().ok);
        s.flush().await.unwrap();
        let id = ws.file_id("src/main.rs");
        let list = memory::versions(&*store, &id).await.unwrap();
        assert_eq!(list.len(), 2);

        let writes = store.submitted_tx_count();
        let v1 = memory::show_version(&*store, &id, &VersionRef::Number(1))
            .await
            .unwrap();
        assert_eq!(v1.doc["content"], old);
        assert_eq!(v1.of, 2);
        let by_tx = memory::show_version(&*store, &id, &VersionRef::TxId(list[0].tx_id))
            .await
            .unwrap();
        assert_eq!(by_tx, v1);
        // A tx id between the two versions names the older one.
        let between = VersionRef::TxId(list[1].tx_id - 1);
        assert_eq!(
            memory::show_version(&*store, &id, &between)
                .await
                .unwrap()
                .info
                .version,
            1
        );
        let latest = memory::show_version(&*store, &id, &VersionRef::Latest)
            .await
            .unwrap();
        assert_eq!(latest.doc["content"], new);
        let at_time = VersionRef::parse(&list[1].tx_time).unwrap();
        assert_eq!(
            memory::show_version(&*store, &id, &at_time)
                .await
                .unwrap()
                .info
                .version,
            2
        );
        let rendered = v1.render();
        assert!(
            rendered.starts_with(&format!("{id} version 1 of 2 (tx {}", list[0].tx_id)),
            "{rendered}"
        );
        assert!(rendered.ends_with(old), "{rendered}");

        let d = memory::diff_versions(&*store, &id, &VersionRef::Number(1), &VersionRef::Latest)
            .await
            .unwrap();
        assert_eq!(
            d.diff,
            format!(
                "--- {id}@v1 (tx {})\n+++ {id}@v2 (tx {})\n@@ -1,3 +1,3 @@\n fn main() {{\n-    println!(\"hi\");\n+    println!(\"hello\");\n }}\n",
                list[0].tx_id, list[1].tx_id
            )
        );
        let same = memory::diff_versions(&*store, &id, &VersionRef::Number(2), &VersionRef::Latest)
            .await
            .unwrap();
        assert!(same.diff.is_empty());
        assert!(same.render().contains("same text"), "{}", same.render());
        assert_eq!(
            store.submitted_tx_count(),
            writes,
            "reading versions writes nothing"
        );
        s.close().await.unwrap();
    }
}

/// Asking for an older version shows it to the caller only: the session's
/// context keeps exactly one version of the object (§7.3).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn older_versions_never_enter_the_context_unasked() {
    for store in stores() {
        let ws = Workspace::new(store.clone());
        let mut s = ws.session("no-double").await;
        ws.write("a.md", "OLD-BODY-MARKER\n");
        assert!(s.read("a.md").await.unwrap().ok);
        s.flush().await.unwrap();
        ws.write("a.md", "NEW-BODY-MARKER\n");
        assert!(s.observe_edit("a.md").await.unwrap().ok);
        s.flush().await.unwrap();
        let id = ws.file_id("a.md");
        let before = s.snapshot();
        let shown = memory::show_version(&*store, &id, &VersionRef::Number(1))
            .await
            .unwrap();
        assert!(shown.render().contains("OLD-BODY-MARKER"));
        memory::diff_versions(&*store, &id, &VersionRef::Number(1), &VersionRef::Number(2))
            .await
            .unwrap();
        assert_eq!(s.snapshot(), before, "sets untouched");
        let mut t = Transcript::default();
        t.user("go");
        let out = s.ingest_and_assemble(&t.messages).unwrap();
        assert_eq!(occurrences(&out, "OLD-BODY-MARKER"), 0);
        assert_eq!(occurrences(&out, "NEW-BODY-MARKER"), 1);
        s.close().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_objects_and_versions_are_coded_errors() {
    for store in stores() {
        let ws = Workspace::new(store.clone());
        let mut s = ws.session("errors").await;
        ws.write("x.txt", "x\n");
        assert!(s.read("x.txt").await.unwrap().ok);
        s.flush().await.unwrap();
        let id = ws.file_id("x.txt");
        let missing = format!("{id}-missing");
        let e = memory::versions(&*store, &missing).await.unwrap_err();
        assert_eq!(e.code(), "UNKNOWN_OBJECT", "{e}");
        let e = memory::show_version(&*store, &id, &VersionRef::Number(2))
            .await
            .unwrap_err();
        assert_eq!(e.code(), "UNKNOWN_OBJECT");
        assert!(
            e.to_string().contains("no version 2 (it has 1 versions)"),
            "{e}"
        );
        let e = memory::show_version(&*store, &id, &VersionRef::TxId(0))
            .await
            .unwrap_err();
        assert_eq!(e.code(), "UNKNOWN_OBJECT", "{e}");
        let e = memory::diff_versions(&*store, &id, &VersionRef::Number(1), &VersionRef::Number(9))
            .await
            .unwrap_err();
        assert_eq!(e.code(), "UNKNOWN_OBJECT", "{e}");
        s.close().await.unwrap();
    }
}
