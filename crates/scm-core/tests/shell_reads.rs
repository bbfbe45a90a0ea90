//! Shell reads (context/shell_read.rs): a `bash` command that only prints a
//! file is a read of it — indexed and tracked like `read`, pointed at when
//! printed again unchanged, withheld when the file is. Real embedded store
//! (and XTDB when configured), real files.

mod session_support;

use scm_core::session::{CachePolicy, Layout, SessionOptions};
use serde_json::json;
use session_support::*;

fn cache_opts(prefix: &str) -> SessionOptions {
    let mut o = SessionOptions::new(unique_id(prefix));
    o.layout = Layout::Cache;
    o.cache = CachePolicy {
        high: 100_000,
        ..Default::default()
    };
    o
}

fn body(tag: &str, lines: usize) -> String {
    (0..lines)
        .map(|i| format!("{tag} line {i:03} of the file, padded to a realistic width"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `cat F` and `sed -n` / `head` index the file with its text (tracked, so
/// a change reaches the model) and put it in the pool, without making it
/// active (bash observation updates the index and pool only); before, both
/// left the file a discovery stub the watcher did not follow.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_printed_through_bash_is_indexed_and_tracked() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.session("shell-read").await;
        let a = body("ALPHA", 12);
        let b = body("BRAVO", 12);
        ws.write("src/a.ts", &a);
        ws.write("src/b.ts", &b);
        assert!(s.observe_bash("cat src/a.ts", &a).await.unwrap().ok);
        assert!(
            s.observe_bash("cd src && sed -n '2,3p' b.ts", "")
                .await
                .unwrap()
                .ok
        );
        let (ida, idb) = (ws.file_id("src/a.ts"), ws.file_id("src/b.ts"));
        for (id, text) in [(&ida, &a), (&idb, &b)] {
            let doc = s.get_object(id).await.unwrap().expect(id);
            assert_eq!(doc["content"].as_str(), Some(text.as_str()), "{id}");
            assert_ne!(doc["state"], "stub", "{id}");
        }
        let snap = s.snapshot_now();
        for id in [&ida, &idb] {
            assert!(!snap.active_set.contains(id), "{id} made active");
            assert!(snap.metadata_pool.iter().any(|e| &e.id == id), "{id}");
        }
        // An ordinary command still only discovers.
        ws.write("src/c.ts", "CHARLIE");
        assert!(s.observe_bash("grep -n x src/c.ts", "").await.unwrap().ok);
        let c = s
            .get_object(&ws.file_id("src/c.ts"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(c["state"], "stub");
    }
}

/// The same text printed again while the first print is in view points at
/// it, as an identical re-read does; a changed file's print is shown. Before,
/// every print was a new text in view.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_printed_again_unchanged_points_at_its_first_print() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.open(cache_opts("shell-dedupe")).await;
        let v1 = body("VERSIONONE", 10);
        let v2 = body("VERSIONTWO", 10);
        let mut t = Transcript::default();
        t.user("look twice")
            .call("c1", "bash", json!({"command": "cat src/a.ts"}), &v1)
            .call("c2", "bash", json!({"command": "cat src/a.ts"}), &v1)
            .call("c3", "read", json!({"path": "src/a.ts"}), &v1)
            .call(
                "c4",
                "bash",
                json!({"command": "cat src/a.ts | head -n 400"}),
                &v1,
            )
            .call("c5", "bash", json!({"command": "cat src/a.ts"}), &v2);
        let out = s.transform_context(&t.messages).await.unwrap();
        assert!(result_text(&out, "t1").contains("VERSIONONE"));
        assert_eq!(result_text(&out, "t2"), "[t2: identical to t1 above]");
        assert_eq!(result_text(&out, "t3"), "[t3: identical to t1 above]");
        // A slice that covers the whole file: the same text twice otherwise.
        assert_eq!(result_text(&out, "t4"), "[t4: identical to t1 above]");
        assert!(result_text(&out, "t5").contains("VERSIONTWO"));
        assert_eq!(s.cache_stats().dedupes, 3);
    }
}

/// `cat .env` is a read of a file on the secret list: its bytes are neither
/// stored nor shown, as for `read` (before, only what looked like a secret
/// in the output was masked).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_file_printed_through_bash_is_withheld() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.open(cache_opts("shell-secret")).await;
        let secret = "GREETING=hello-SECRETWORD\nMODE=SECRETMODE";
        ws.write(".env", secret);
        s.observe_bash("cat .env", secret).await.unwrap();
        let mut t = Transcript::default();
        t.user("show me the env")
            .call("c1", "bash", json!({"command": "cat .env"}), secret);
        let out = s.transform_context(&t.messages).await.unwrap();
        let shown = serde_json::to_string(&out).unwrap();
        assert!(!shown.contains("SECRET"), "{shown}");
        assert!(result_text(&out, "t1").starts_with("[withheld: secret]"));
        s.flush().await.unwrap();
        let stored =
            serde_json::to_string(&s.history(&toolcall_id(&s, "c1")).await.unwrap()).unwrap();
        assert!(!stored.contains("SECRET"), "{stored}");
    }
}

/// The spec layout (the drop-in's contract): a file the agent read is active
/// and shown as ACTIVE_CONTENT; a `cat` of it afterwards is a read of an
/// active file, so its output stays out of the active set (no double
/// injection, memory-system-v0 §7.3), as a `read` of it would. Before, the
/// printed text was active beside the file's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_the_spec_layout_a_print_of_an_active_file_is_not_shown_twice() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.session("shell-spec").await;
        let a = body("ACTIVEFILE", 6);
        ws.write("a.ts", &a);
        assert!(s.read("a.ts").await.unwrap().ok);
        s.observe_bash("cat a.ts", &a).await.unwrap();
        let mut t = Transcript::default();
        t.user("look")
            .call("c1", "read", json!({"path": "a.ts"}), &a)
            .call("c2", "bash", json!({"command": "cat a.ts"}), &a)
            .call("c3", "bash", json!({"command": "echo other"}), "other");
        let out = s.transform_context(&t.messages).await.unwrap();
        let active = active_ids(&out);
        assert!(active.contains(&ws.file_id("a.ts")), "{active:?}");
        assert!(!active.contains(&toolcall_id(&s, "c2")), "{active:?}");
        assert!(active.contains(&toolcall_id(&s, "c3")), "{active:?}");
        assert_eq!(occurrences(&out, "ACTIVEFILE line 000"), 1);
    }
}

/// A file outside the workspace printed through bash (`cat /etc/os-release`)
/// is a command's output like `uname -a`'s: shown, with what looks like a
/// secret redacted, where pi's `read` of it would be withheld (the model asked
/// the shell, as for any system fact). A file in the workspace printed so is
/// its text exactly, as a read's is: an edit quotes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_outside_the_workspace_printed_through_bash_is_shown_redacted() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.open(cache_opts("shell-outside")).await;
        let outside = tempfile::tempdir().unwrap();
        let path = outside.path().join("os-release");
        let text = "NAME=Debian\nAPI_TOKEN=abcdefgh-OUTSIDE-TOKEN";
        std::fs::write(&path, text).unwrap();
        let path = path.to_string_lossy().into_owned();
        let inside = "const API_TOKEN = \"abcdefgh-INSIDE-LITERAL\";";
        ws.write("src/config.ts", inside);
        let mut t = Transcript::default();
        t.user("which system")
            .call(
                "c1",
                "bash",
                json!({"command": format!("cat {path}")}),
                text,
            )
            .call(
                "c2",
                "bash",
                json!({"command": "cat src/config.ts"}),
                inside,
            );
        let out = s.transform_context(&t.messages).await.unwrap();
        let shown = result_text(&out, "t1");
        assert!(shown.contains("NAME=Debian"), "{shown}");
        assert!(!shown.contains("OUTSIDE-TOKEN"), "{shown}");
        assert_eq!(result_text(&out, "t2"), inside);
    }
}
