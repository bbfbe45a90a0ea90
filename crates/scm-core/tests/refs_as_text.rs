//! A ref is not file text (docs/design.md §5): a call that would write a
//! ref this session showed — the model copying `[t1 · 3 lines]` into a
//! `write` in place of the text it stands for — is refused before it runs
//! (`Session::ref_as_text`; the pi package blocks the call with its message).
//! Real embedded store (and XTDB when configured), real files, both layouts.

mod session_support;

use std::sync::Arc;

use scm_core::session::{Layout, Session, SessionOptions};
use scm_core::store::Store;
use serde_json::json;
use session_support::*;

const TEXT: &str = "first line of a\nsecond line of a\nthird line of a";

/// A session in `layout` that has read `a.txt` (call `r1`, alias `t1`; the
/// file `f1`), and shown the read to the model.
async fn after_a_read(store: Arc<dyn Store>, layout: Layout) -> (Workspace, Session) {
    let ws = Workspace::new(store);
    let mut o = SessionOptions::new(unique_id("ref-as-text"));
    o.layout = layout;
    let mut s = ws.open(o).await;
    let mut t = Transcript::default();
    ws.write("a.txt", TEXT);
    s.read("a.txt").await.unwrap();
    t.user("tidy a.txt")
        .call("r1", "read", json!({"path": "a.txt"}), TEXT);
    step(&mut s, &t, &mut Vec::new()).await;
    (ws, s)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_writes_a_ref_the_session_showed_is_refused() {
    for store in stores() {
        let (ws, mut s) = after_a_read(store, Layout::Cache).await;
        // The read's output (3 lines) and the file (3 lines): t1 and f1.
        let write = json!({"path": "a.txt", "content": "[t1 · 3 lines]"});
        let r = s.ref_as_text("write", &write).expect("a write of a ref");
        assert_eq!(
            (r.field, r.token.as_str(), r.target.as_str()),
            ("content", "[t1 · 3 lines]", "t1")
        );
        assert!(
            r.message.contains("A ref is not file text") && r.message.contains("activate(t1)"),
            "{}",
            r.message
        );
        let edit = json!({"path": "a.txt", "edits": [
            {"oldText": "second line of a", "newText": "second line\n[f1 · 3 lines]"}
        ]});
        let r = s.ref_as_text("edit", &edit).expect("an edit writing a ref");
        assert_eq!((r.field, r.target.as_str()), ("newText", "f1"));
        let quoted = json!({"path": "a.txt", "oldText": "x [t1 · 3 lines]", "newText": "y"});
        assert_eq!(
            s.ref_as_text("edit", &quoted).map(|r| r.field),
            Some("oldText")
        );

        // What merely looks like a ref goes through: another line count, a
        // call or file the session does not have, a tool that writes no file.
        for (tool, args) in [
            (
                "write",
                json!({"path": "a.txt", "content": "[t1 · 4 lines]"}),
            ),
            (
                "write",
                json!({"path": "a.txt", "content": "[t7 · 3 lines]"}),
            ),
            (
                "write",
                json!({"path": "a.txt", "content": "[f9 · 3 lines]"}),
            ),
            ("bash", json!({"command": "echo '[t1 · 3 lines]' > a.txt"})),
            ("write", json!({"path": "a.txt", "content": "plain text"})),
        ] {
            assert_eq!(s.ref_as_text(tool, &args), None, "{tool} {args}");
        }
        // A file that holds the ref's text already (a document about
        // refs): editing it around that text is not refused.
        ws.write("notes.md", "A ref looks like [t1 · 3 lines].\n");
        let doc = json!({"path": "notes.md", "oldText": "A ref looks like [t1 · 3 lines].",
                         "newText": "A ref looks like [t1 · 3 lines], and it is not text."});
        assert_eq!(s.ref_as_text("edit", &doc), None);
        s.close().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_spec_layout_s_result_ref_is_refused_too() {
    for store in stores() {
        let (_ws, mut s) = after_a_read(store, Layout::Spec).await;
        let id = toolcall_id(&s, "r1");
        let token = format!("toolcall_ref id={id}");
        let write = json!({"path": "b.txt", "content": format!("{token} tool=read status=ok")});
        let r = s
            .ref_as_text("write", &write)
            .expect("a write of a result ref");
        assert_eq!((r.token, r.target), (token, id));
        let other = json!({"path": "b.txt", "content": "toolcall_ref id=toolcall:elsewhere:r1"});
        assert_eq!(s.ref_as_text("write", &other), None);
        s.close().await.unwrap();
    }
}

/// The pointers a result stands for are refs too: `[t2: identical to t1
/// above]` (an identical re-read) and `[f1 is shown above]` (an activation
/// of a file in view). Copied into a file they would put the pointer there
/// in place of the text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pointer_the_session_showed_is_refused_like_a_ref() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut o = SessionOptions::new(unique_id("pointer-as-text"));
        o.layout = Layout::Cache;
        let mut s = ws.open(o).await;
        let mut t = Transcript::default();
        ws.write("a.txt", TEXT);
        s.read("a.txt").await.unwrap();
        s.read("a.txt").await.unwrap();
        t.user("tidy a.txt")
            .call("r1", "read", json!({"path": "a.txt"}), TEXT)
            .call("r2", "read", json!({"path": "a.txt"}), TEXT);
        let op = s.activate("f1");
        assert!(op.ok, "{op:?}");
        t.call("a1", "activate", json!({"id": "f1"}), &op.message);
        let mut outs = Vec::new();
        let out = step(&mut s, &t, &mut outs).await;
        let shown = serde_json::to_string(&out).unwrap();
        for pointer in ["[t2: identical to t1 above]", "[f1 is shown above]"] {
            assert!(shown.contains(pointer), "{pointer} shown: {shown}");
        }

        let write = json!({"path": "b.txt", "content": "[t2: identical to t1 above]"});
        let r = s
            .ref_as_text("write", &write)
            .expect("a write of a pointer");
        assert_eq!(
            (r.field, r.token.as_str(), r.target.as_str()),
            ("content", "[t2: identical to t1 above]", "t2")
        );
        assert!(r.message.contains("activate(t2)"), "{}", r.message);
        let edit = json!({"path": "a.txt", "oldText": "second line of a",
                          "newText": "x\n[f1 is shown above]"});
        let r = s
            .ref_as_text("edit", &edit)
            .expect("an edit writing a note");
        assert_eq!((r.field, r.target.as_str()), ("newText", "f1"));

        // What the session never showed goes through: t1 is no pointer, t3
        // no note, f2 no file of this session.
        for content in [
            "[t1: identical to t2 above]",
            "[t3: identical to t1 above]",
            "[f2 is shown above]",
            "[t3 is shown above]",
            "[t2: identical to FILE f1 above]",
        ] {
            let args = json!({"path": "b.txt", "content": content});
            assert_eq!(s.ref_as_text("write", &args), None, "{content}");
        }
        s.close().await.unwrap();
    }
}
