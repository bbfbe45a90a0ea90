//! Memory across sessions (issue 12, memory-system-v0 §7.3, §8–§14), on
//! every configured store: the embedded one always, a real XTDB node when
//! `SCM_TEST_XTDB_URL` is set (`SCM_REQUIRE_XTDB=1` makes its absence a
//! failure). Real files in a temporary workspace, real sessions.

mod session_support;

use scm_core::memory::{self, SearchOptions, VersionRef};
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

// ------------------------------------------------------------ search

/// A word no other test (or earlier run on the shared XTDB node) wrote.
fn token(prefix: &str) -> String {
    unique_id(prefix)
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect::<String>()
        .to_lowercase()
}

fn opts(f: impl FnOnce(&mut SearchOptions)) -> SearchOptions {
    let mut o = SearchOptions::default();
    f(&mut o);
    o
}

/// Two sessions on one store: a search finds files and toolcalls of both,
/// ranked; types, sessions, since and limit filter; only latest versions
/// are searchable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_spans_sessions_with_ranking_and_filters() {
    for store in stores() {
        let tok = token("zq");
        let ws = Workspace::new(store.clone());
        let mut s1 = ws.session("search1").await;
        let mut s2 = ws.session("search2").await;
        let filler = "lorem ipsum dolor sit amet ".repeat(40);
        ws.write("notes/long.md", &format!("{filler} {tok} {filler}\n"));
        ws.write("notes/dense.md", &format!("{tok} {tok} {tok} plan\n"));
        assert!(s1.read("notes/long.md").await.unwrap().ok);
        let mut t = Transcript::default();
        t.user("run it").call(
            "call-1",
            "bash",
            serde_json::json!({"command": "grep -r plan"}),
            &format!("found {tok} in the build log"),
        );
        s1.ingest_and_assemble(&t.messages).unwrap();
        s1.flush().await.unwrap();
        assert!(s2.read("notes/dense.md").await.unwrap().ok);
        s2.flush().await.unwrap();

        let all = memory::search(&*store, &tok, &SearchOptions::default())
            .await
            .unwrap();
        let kinds: Vec<(&str, Option<&str>)> = all
            .iter()
            .map(|h| (h.object_type.as_str(), h.path.as_deref()))
            .collect();
        assert_eq!(all.len(), 3, "{}: {all:#?}", store.kind());
        assert_eq!(
            all[0].path.as_deref(),
            Some(ws.root.join("notes/dense.md").to_str().unwrap()),
            "three occurrences in a short note rank first: {kinds:?}"
        );
        assert!(all.windows(2).all(|w| w[0].score >= w[1].score));
        assert!(
            all[0].snippet.contains(&format!("[{tok}]")),
            "{}",
            all[0].snippet
        );
        let call = all.iter().find(|h| h.object_type == "toolcall").unwrap();
        assert_eq!(call.tool.as_deref(), Some("bash"));
        assert_eq!(call.session.as_deref(), Some(s1.session_id()));
        assert!(
            call.snippet.contains(&format!("[{tok}]")),
            "{}",
            call.snippet
        );

        // Filters.
        let tools = memory::search(
            &*store,
            &tok,
            &opts(|o| o.types = Some(vec!["toolcall".into()])),
        )
        .await
        .unwrap();
        assert_eq!(tools.iter().map(|h| &h.id).collect::<Vec<_>>(), [&call.id]);
        let of_s2 = memory::search(
            &*store,
            &tok,
            &opts(|o| o.sessions = Some(vec![s2.session_id().to_owned()])),
        )
        .await
        .unwrap();
        assert_eq!(of_s2.len(), 1, "{of_s2:#?}");
        assert_eq!(of_s2[0].id, ws.file_id("notes/dense.md"));
        let of_s1 = memory::search(
            &*store,
            &tok,
            &opts(|o| o.sessions = Some(vec![s1.session_id().to_owned()])),
        )
        .await
        .unwrap();
        assert_eq!(of_s1.len(), 2, "s1's file and toolcall: {of_s1:#?}");
        let later = memory::search(
            &*store,
            &tok,
            &opts(|o| o.since = Some("2999-01-01T00:00:00Z".into())),
        )
        .await
        .unwrap();
        assert!(later.is_empty());
        let earlier = memory::search(
            &*store,
            &tok,
            &opts(|o| o.since = Some("2000-01-01T00:00:00Z".into())),
        )
        .await
        .unwrap();
        assert_eq!(earlier.len(), 3);
        let one = memory::search(&*store, &tok, &opts(|o| o.limit = Some(1)))
            .await
            .unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].id, all[0].id);
        // Two terms: both must occur, in the content or the label (the
        // toolcall has `plan` in its arguments only).
        let both = memory::search(&*store, &format!("{tok} plan"), &SearchOptions::default())
            .await
            .unwrap();
        let mut ids: Vec<&str> = both.iter().map(|h| h.id.as_str()).collect();
        ids.sort_unstable();
        let dense = ws.file_id("notes/dense.md");
        let mut want = vec![call.id.as_str(), dense.as_str()];
        want.sort_unstable();
        assert_eq!(ids, want, "{both:#?}");
        // Metadata is searchable too: the path.
        let by_path = memory::search(&*store, &format!("dense {tok}"), &SearchOptions::default())
            .await
            .unwrap();
        assert_eq!(by_path.len(), 1);

        // Only the latest version is searchable.
        let old = format!("{tok}old");
        ws.write("notes/dense.md", &format!("{old} draft\n"));
        assert!(s2.observe_edit("notes/dense.md").await.unwrap().ok);
        s2.flush().await.unwrap();
        assert_eq!(
            memory::search(&*store, &old, &SearchOptions::default())
                .await
                .unwrap()
                .len(),
            1
        );
        ws.write("notes/dense.md", "rewritten\n");
        assert!(s2.observe_edit("notes/dense.md").await.unwrap().ok);
        s2.flush().await.unwrap();
        assert!(memory::search(&*store, &old, &SearchOptions::default())
            .await
            .unwrap()
            .is_empty());
        assert_eq!(
            memory::search(&*store, &tok, &SearchOptions::default())
                .await
                .unwrap()
                .len(),
            2
        );
        s1.close().await.unwrap();
        s2.close().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_search_arguments_are_invalid_argument() {
    for store in stores() {
        for (q, o) in [
            (" -- ", SearchOptions::default()),
            ("x", opts(|o| o.types = Some(vec!["chat".into()]))),
            ("x", opts(|o| o.limit = Some(0))),
            ("x", opts(|o| o.limit = Some(100_000))),
            ("x", opts(|o| o.since = Some("yesterday".into()))),
        ] {
            let e = memory::search(&*store, q, &o).await.unwrap_err();
            assert_eq!(e.code(), "INVALID_ARGUMENT", "{q:?} {o:?}: {e}");
        }
    }
}

/// A second session activates the first one's toolcall by the id a search
/// returned: it joins the index and pool, and its content is in context.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_sessions_object_can_be_activated_by_id() {
    for store in stores() {
        let tok = token("act");
        let ws = Workspace::new(store.clone());
        let mut s1 = ws.session("owner").await;
        let mut t = Transcript::default();
        t.user("look").call(
            "c1",
            "bash",
            serde_json::json!({"command": "cat log"}),
            &format!("OUTPUT-{tok}"),
        );
        s1.ingest_and_assemble(&t.messages).unwrap();
        s1.close().await.unwrap();

        let mut s2 = ws.session("reader").await;
        let hit = &memory::search(&*store, &format!("output {tok}"), &SearchOptions::default())
            .await
            .unwrap()[0];
        let first = s2.activate(&hit.id);
        assert_eq!(first.code.as_deref(), Some("UNKNOWN_OBJECT"));
        let id = memory::adopt::store_candidate(&hit.id, &first).expect("a store id");
        let doc = memory::adopt::fetch(&*store, &id)
            .await
            .unwrap()
            .expect("a content object");
        assert_eq!(s2.adopt(doc).unwrap(), hit.id);
        let r = s2.activate(&hit.id);
        assert!(r.ok, "{r:?}");
        let snap = s2.snapshot();
        assert!(snap.session_index.contains(&hit.id) && snap.active_set.contains(&hit.id));
        let mut t2 = Transcript::default();
        t2.user("go");
        let out = s2.ingest_and_assemble(&t2.messages).unwrap();
        assert_eq!(occurrences(&out, &format!("OUTPUT-{tok}")), 1);
        // Infrastructure objects are not adopted.
        let chat = format!("chat:{}", s2.session_id());
        s2.flush().await.unwrap();
        assert!(memory::adopt::fetch(&*store, &chat)
            .await
            .unwrap()
            .is_none());
        // A path of a file never read is not a store candidate.
        let r = s2.activate("never/read.txt");
        assert!(memory::adopt::store_candidate("never/read.txt", &r).is_none() || r.id.is_none());
        s2.close().await.unwrap();
    }
}

/// A store file written before the index existed (or by a build without
/// it) is indexed when opened: what was written is searchable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedded_file_without_the_index_is_indexed_on_open() {
    use scm_core::store::embedded::EmbeddedStore;
    use scm_core::store::{Store, TxOp};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let tok = token("old");
    {
        let store = EmbeddedStore::open(&path).unwrap();
        let doc = scm_core::model::toolcall_document(
            "toolcall:old:1",
            scm_core::model::ToolcallFields {
                content: format!("legacy {tok}"),
                tool: "bash".into(),
                args: serde_json::json!({"command": "ls"}),
                args_display: None,
                status: "ok".into(),
                chat_ref: "chat:old".into(),
                file_refs: None,
            },
        );
        store.submit(vec![TxOp::Put(doc)]).await.unwrap();
    }
    let raw = rusqlite::Connection::open(&path).unwrap();
    raw.execute_batch("DROP TABLE search_fts; DROP TABLE search_docs; DROP TABLE search_state;")
        .unwrap();
    drop(raw);
    let store: std::sync::Arc<dyn Store> = std::sync::Arc::new(EmbeddedStore::open(&path).unwrap());
    let hits = memory::search(&*store, &tok, &SearchOptions::default())
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].id, "toolcall:old:1");
    assert_eq!(hits[0].session.as_deref(), Some("old"));
}
