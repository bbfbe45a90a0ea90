//! How tool results enter the sets: a read/write/edit result whose file the
//! session shows stays in the session index only (the file's pool line is
//! what the model sees, once); image parts of a result are kept.

mod session_support;

use scm_core::session::{Layout, SessionOptions};
use serde_json::{json, Value};
use session_support::*;

fn pool_ids(s: &scm_core::session::Session) -> Vec<String> {
    s.snapshot()
        .metadata_pool
        .into_iter()
        .map(|e| e.id)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_tool_results_stay_out_of_the_pool_when_the_file_is_shown() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.session("pool-dup").await;
        ws.write("a.txt", "ALPHA-TEXT");
        ws.write("w.txt", "v1");
        let a = ws.file_id("a.txt");
        let w = ws.file_id("w.txt");
        let mut t = Transcript::default();
        t.user("u");
        s.read("a.txt").await.unwrap();
        t.call("r1", "read", json!({"path": "a.txt"}), "ALPHA-TEXT");
        s.observe_write("w.txt").await.unwrap();
        t.call(
            "w1",
            "write",
            json!({"path": "w.txt", "content": "v1"}),
            "Successfully wrote 2 bytes",
        );
        ws.write("w.txt", "v2");
        s.observe_edit("w.txt").await.unwrap();
        t.call(
            "e1",
            "edit",
            json!({"path": "w.txt", "oldText": "v1", "newText": "v2"}),
            "Successfully replaced text",
        );
        let out = s.transform_context(&t.messages).await.unwrap();
        // One pool line per file; the tool calls are indexed, not listed.
        assert_eq!(pool_ids(&s), vec![a.clone(), w.clone()]);
        let snap = s.snapshot();
        for call in ["r1", "w1", "e1"] {
            let tc = toolcall_id(&s, call);
            assert!(snap.session_index.contains(&tc), "{call} not indexed");
            assert!(!pool_text(&out).contains(&tc), "{call} listed in the pool");
        }
        assert_eq!(pool_text(&out).lines().count(), 3, "{}", pool_text(&out));
        assert_eq!(active_ids(&out), vec![a, w]);
        // Still addressable by the harness id (and so by the toolcall_ref in the chat).
        assert!(s.activate("r1").ok);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_tool_result_without_its_file_is_shown_as_a_toolcall() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.session("pool-dup").await;
        let mut t = Transcript::default();
        // The harness read a file the engine did not index (a slice, or
        // the engine's read failed), and a read that failed.
        t.user("u")
            .call(
                "r1",
                "read",
                json!({"path": "big.txt", "offset": 10, "limit": 5}),
                "SLICE-TEXT",
            )
            .assistant("", &[("r2", "read", json!({"path": "nope.txt"}))])
            .result("r2", "read", "ENOENT nope.txt", true);
        let out = s.transform_context(&t.messages).await.unwrap();
        let (r1, r2) = (toolcall_id(&s, "r1"), toolcall_id(&s, "r2"));
        assert_eq!(pool_ids(&s), vec![r1.clone(), r2.clone()]);
        assert_eq!(active_ids(&out), vec![r1, r2]);
        assert_eq!(occurrences(&out, "SLICE-TEXT"), 1);
    }
}

/// A pi read of an image: a text note plus the image part.
fn image_result(t: &mut Transcript, call_id: &str) {
    t.assistant("", &[(call_id, "read", json!({"path": "pic.png"}))]);
    let mut r = json!({
        "role": "toolResult", "toolCallId": call_id, "toolName": "read",
        "content": [
            {"type": "text", "text": "Read image file [image/png]"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
        ],
        "isError": false, "timestamp": 1_800_000_000_000i64,
    });
    r["timestamp"] = json!(1_800_000_000_000i64 + t.messages.len() as i64);
    t.push(r);
}

fn image_parts(out: &[Value]) -> Vec<Value> {
    out.iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|p| p["type"] == "image")
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn image_parts_are_kept_with_the_toolcall_and_shown_while_live_in_the_cache_layout() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws
            .open(SessionOptions {
                layout: Layout::Cache,
                ..SessionOptions::new(unique_id("image"))
            })
            .await;
        let mut t = Transcript::default();
        t.user("look");
        image_result(&mut t, "i1");
        let out = s.transform_context(&t.messages).await.unwrap();
        let expected = json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"});
        assert_eq!(image_parts(&out), vec![expected.clone()]);
        let result = out.iter().find(|m| m["role"] == "toolResult").unwrap();
        assert_eq!(result["content"][0]["type"], "text");
        assert_eq!(result["content"][1], expected);
        // Stored with the toolcall object: a reconstruction shows it too.
        let doc = s.get_object(&toolcall_id(&s, "i1")).await.unwrap().unwrap();
        assert_eq!(doc["images"], json!([expected]));
        assert!(doc["content"]
            .as_str()
            .unwrap()
            .contains("[image image/png"));
        assert_eq!(s.reconstruct_call(0).await.unwrap(), out);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_spec_layout_names_an_image_it_does_not_show() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.session("image-spec").await;
        let mut t = Transcript::default();
        t.user("look");
        image_result(&mut t, "i1");
        let out = s.transform_context(&t.messages).await.unwrap();
        // Known limitation: ACTIVE_CONTENT blocks are text.
        assert_eq!(image_parts(&out), Vec::<Value>::new());
        assert_eq!(occurrences(&out, "[image image/png, 8 bytes]"), 1);
    }
}
