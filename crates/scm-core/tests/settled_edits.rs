//! Settled edits (issue 10, "nothing twice"; docs/design.md §5): once an
//! edit succeeded, the text it replaced is gone from the file, so the cache
//! layout shows its `oldText` as a ref from the call's first showing — while
//! the model can still tell where the `newText` went and no line of the file
//! was shown only there. Real embedded store (and XTDB when configured), real
//! files, the cache layout.

mod session_support;

use scm_core::session::{Layout, Session, SessionOptions};
use serde_json::{json, Value};
use session_support::*;

fn opts(prefix: &str) -> SessionOptions {
    let mut o = SessionOptions::new(unique_id(prefix));
    o.layout = Layout::Cache;
    o
}

const V1: &str =
    "fn main() {\n    let greeting = \"hello\";\n    println!(\"{greeting}, world\");\n}\n";

/// The arguments of the only `edit` call in a context, as shown.
fn edit_args(out: &[Value]) -> Value {
    let calls: Vec<&Value> = out
        .iter()
        .filter(|m| m["role"] == "assistant")
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|p| p["type"] == "toolCall" && p["name"] == "edit")
        .collect();
    assert_eq!(calls.len(), 1, "{out:#?}");
    calls[0]["arguments"].clone()
}

/// The assistant message holding the `edit` call, serialised.
fn edit_message(out: &[Value]) -> String {
    let m = out
        .iter()
        .find(|m| {
            m["role"] == "assistant"
                && m["content"]
                    .as_array()
                    .is_some_and(|c| c.iter().any(|p| p["name"] == "edit"))
        })
        .expect("the edit's message");
    serde_json::to_string(m).unwrap()
}

/// `src/main.rs` written with `text`, read whole (call `r1`, alias `t1`).
async fn read_main(
    ws: &Workspace,
    s: &mut Session,
    t: &mut Transcript,
    outs: &mut Vec<Vec<Value>>,
    text: &str,
) {
    ws.write("src/main.rs", text);
    s.read("src/main.rs").await.unwrap();
    t.user("change the greeting")
        .call("r1", "read", json!({"path": "src/main.rs"}), text);
    step(s, t, outs).await;
}

/// The agent's successful edit of `src/main.rs` (call `e1`, alias `t2`),
/// written to disk and reported as pi does.
async fn edit_main(
    ws: &Workspace,
    s: &mut Session,
    t: &mut Transcript,
    from: &str,
    old: &str,
    new: &str,
) {
    ws.write("src/main.rs", &from.replacen(old, new, 1));
    s.observe_edit("src/main.rs").await.unwrap();
    t.call(
        "e1",
        "edit",
        json!({"path": "src/main.rs", "oldText": old, "newText": new}),
        "Successfully replaced text in src/main.rs.",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_successful_edit_shows_the_text_it_replaced_as_a_ref() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.open(opts("settled")).await;
        let mut t = Transcript::default();
        let mut outs = Vec::new();
        read_main(&ws, &mut s, &mut t, &mut outs, V1).await;
        // The last line is kept: the model can tell where the new text went.
        let old = "    let greeting = \"hello\";\n    println!(\"{greeting}, world\");";
        let new = "    let greeting = \"goodbye\";\n    println!(\"{greeting}, world\");";
        edit_main(&ws, &mut s, &mut t, V1, old, new).await;
        let first = step(&mut s, &t, &mut outs).await;
        let args = edit_args(&first);
        assert_eq!(args["oldText"], "[t2 · 2 lines]", "{args:#}");
        assert_eq!(args["newText"], new);
        assert_eq!(args["path"], "src/main.rs");
        // From its first showing on: the cached prefix keeps it as it was.
        t.call(
            "q",
            "bash",
            json!({"command": "pwd"}),
            "/home/agent/workspace",
        );
        let second = step(&mut s, &t, &mut outs).await;
        assert_eq!(edit_message(&first), edit_message(&second));
        // What the model was shown is what reconstruction gives back, and a
        // resumed session shows the same.
        assert_rebuilt(&s, &outs).await;
        let sid = s.session_id().to_string();
        s.close().await.unwrap();
        let mut o = opts("settled");
        o.session_id = sid;
        let mut s = ws.open(o).await;
        let again = s.transform_context(&t.messages).await.unwrap();
        assert_eq!(edit_message(&again), edit_message(&second));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_keeps_its_old_text_when_the_model_may_still_need_it() {
    // (case, file text, oldText, newText, succeeded, the file read first)
    let twice = "fn main() {\n    start_work();\n    let value = compute();\n    finish_work();\n    let value = compute();\n}\n";
    let cases = [
        // pi refused it: the model tries again from what it wrote.
        (
            "failed",
            V1,
            "    let greeting = \"hullo\";",
            "    let greeting = \"bye\";",
            false,
            true,
        ),
        // A line it removed is still in the file, elsewhere: this was the
        // only place the model saw it.
        (
            "removed line still in the file",
            twice,
            "    start_work();\n    let value = compute();",
            "    start_work();",
            true,
            true,
        ),
        // Neither end kept: where the new text went would be a guess.
        (
            "no line kept at either end",
            V1,
            "    let greeting = \"hello\";",
            "    let greeting = \"goodbye\";",
            true,
            true,
        ),
        // The file's text after the edit is not known: whether the replaced
        // text is gone cannot be told.
        (
            "text after the edit unknown",
            V1,
            "    let greeting = \"hello\";\n    println!(\"{greeting}, world\");",
            "    let greeting = \"bye\";\n    println!(\"{greeting}, world\");",
            true,
            false,
        ),
    ];
    for store in stores() {
        for (case, text, old, new, ok, read_first) in cases {
            let ws = Workspace::new(store.clone());
            let mut s = ws.open(opts("kept")).await;
            let mut t = Transcript::default();
            let mut outs = Vec::new();
            if read_first {
                read_main(&ws, &mut s, &mut t, &mut outs, text).await;
            } else {
                t.user("change the greeting");
            }
            if ok && read_first {
                edit_main(&ws, &mut s, &mut t, text, old, new).await;
            } else {
                let result = if ok {
                    "Successfully replaced text in src/main.rs."
                } else {
                    "Could not find the exact text in src/main.rs."
                };
                t.assistant(
                    "",
                    &[(
                        "e1",
                        "edit",
                        json!({"path": "src/main.rs", "oldText": old, "newText": new}),
                    )],
                )
                .result("e1", "edit", result, !ok);
            }
            let out = step(&mut s, &t, &mut outs).await;
            assert_eq!(edit_args(&out)["oldText"], old, "{case}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_shown_before_its_result_stays_as_it_was_shown() {
    // The result comes in the same session, or after a restart.
    for resume in [false, true] {
        for store in stores() {
            let ws = Workspace::new(store);
            let o = opts("shown");
            let mut s = ws.open(o.clone()).await;
            let mut t = Transcript::default();
            let mut outs = Vec::new();
            read_main(&ws, &mut s, &mut t, &mut outs, V1).await;
            let old = "    let greeting = \"hello\";\n    println!(\"{greeting}, world\");";
            let new = "    let greeting = \"goodbye\";\n    println!(\"{greeting}, world\");";
            let args = json!({"path": "src/main.rs", "oldText": old, "newText": new});
            // A host hands the call over before its result (the model was shown it).
            t.assistant("", &[("e1", "edit", args)]);
            let before = step(&mut s, &t, &mut outs).await;
            if resume {
                s.close().await.unwrap();
                s = ws.open(o.clone()).await;
            }
            ws.write("src/main.rs", &V1.replacen(old, new, 1));
            s.observe_edit("src/main.rs").await.unwrap();
            t.result(
                "e1",
                "edit",
                "Successfully replaced text in src/main.rs.",
                false,
            );
            let after = step(&mut s, &t, &mut outs).await;
            assert_eq!(edit_args(&before)["oldText"], old, "resume {resume}");
            assert_eq!(
                edit_message(&before),
                edit_message(&after),
                "resume {resume}"
            );
            assert_rebuilt(&s, &outs).await;
        }
    }
}
