//! The words of the set operations (design §0 "Who owns the words"): the
//! session decides a structured outcome, `context/words.rs` says it in the
//! layout's words; a host (pi) passes `text` through. Real files, the real
//! embedded store (and XTDB when configured).

mod session_support;

use scm_core::session::{Layout, SessionOptions, SetOp, SetOutcome};
use session_support::*;

fn opts(prefix: &str, layout: Layout) -> SessionOptions {
    let mut o = SessionOptions::new(unique_id(prefix));
    o.layout = layout;
    o
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_layout_results_are_outcomes_with_text_naming_the_target_as_typed() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.open(opts("words-cache", Layout::Cache)).await;
        ws.write("src/a.ts", "export const a = 1;\n");
        s.read("src/a.ts").await.unwrap();
        let id = ws.file_id("src/a.ts");
        let step = |r: scm_core::session::OpResult| {
            assert!(r.ok, "{r:?}");
            assert_eq!(r.id.as_deref(), Some(id.as_str()));
            (r.outcome.unwrap(), r.text, r.message)
        };

        let (o, text, message) = step(s.activate("f1"));
        assert_eq!(o, SetOutcome::AlreadyActive);
        assert_eq!(text, "activated f1: its content is shown as this result");
        assert_eq!(
            message,
            format!("{id} is already active (its content is in context)")
        );

        let (o, text, _) = step(s.pin("f1"));
        assert_eq!(o, SetOutcome::Pinned);
        assert_eq!(
            text,
            "pinned f1: shown and kept from collapsing until unpin(f1)"
        );
        let (o, text, _) = step(s.pin("src/a.ts"));
        assert_eq!(o, SetOutcome::AlreadyPinned);
        assert_eq!(text, "src/a.ts is already pinned");

        // pi's tools accept "@path": the core reads it; the text keeps it.
        let (o, text, message) = step(s.deactivate("@src/a.ts"));
        assert_eq!(o, SetOutcome::DeactivatedAndUnpinned);
        assert_eq!(
            text,
            "deactivated and unpinned @src/a.ts: it collapses to a ref at the next collapse; activate(@src/a.ts) shows it again"
        );
        assert_eq!(
            message,
            format!("deactivated and unpinned {id}: its metadata stays in the pool")
        );
        let (o, text, _) = step(s.deactivate("f1"));
        assert_eq!(o, SetOutcome::WasNotActive);
        assert_eq!(text, "f1 is not shown (already collapsed)");
        let (o, text, _) = step(s.unpin("id=f1"));
        assert_eq!(o, SetOutcome::WasNotPinned);
        assert_eq!(text, "id=f1 was not pinned");

        let (o, text, _) = step(s.set_op(SetOp::Activate, "f1"));
        assert_eq!(o, SetOutcome::Activated);
        assert_eq!(text, "activated f1: its content is shown as this result");
        let (o, text, _) = step(s.set_op(SetOp::Pin, "f1"));
        assert_eq!(o, SetOutcome::Pinned);
        assert!(text.starts_with("pinned f1: "), "{text}");
        let (o, text, _) = step(s.unpin("f1"));
        assert_eq!(o, SetOutcome::Unpinned);
        assert_eq!(text, "unpinned f1: it may collapse again");

        // The deleted-file note goes with an activation only.
        ws.remove("src/a.ts");
        let (_, text, message) = step(s.activate("f1"));
        assert_eq!(
            text,
            "activated f1: its content is shown as this result (the file is deleted: a note is shown instead of content)"
        );
        assert!(
            message.ends_with("(the file is deleted: a note is shown instead of content)"),
            "{message}"
        );

        // A failure is the engine's message, as before.
        let r = s.activate("@nope.ts");
        assert!(!r.ok);
        assert_eq!(r.outcome, None);
        assert_eq!(r.text, r.message);
        assert!(
            r.message.contains("nope.ts") && !r.message.contains('@'),
            "{}",
            r.message
        );
        s.close().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spec_layout_text_is_the_engine_message() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.open(opts("words-spec", Layout::Spec)).await;
        ws.write("b.md", "# b\n");
        s.read("b.md").await.unwrap();
        let id = ws.file_id("b.md");
        let cases = [
            (SetOp::Pin, SetOutcome::Pinned, format!("pinned {id}: auto-collapse will not hide it (deactivate still does)")),
            (SetOp::Deactivate, SetOutcome::DeactivatedStillPinned, format!("deactivated {id}: its metadata stays in the pool (still pinned: once activated again, auto-collapse will not hide it)")),
            (SetOp::Deactivate, SetOutcome::WasNotActive, format!("{id} was not active")),
            (SetOp::Pin, SetOutcome::AlreadyPinned, format!("{id} is already pinned")),
            (SetOp::Unpin, SetOutcome::Unpinned, format!("unpinned {id}: auto-collapse applies to it again")),
            (SetOp::Pin, SetOutcome::PinnedNotActive, format!("pinned {id}: it is not active; activate it to show its content (auto-collapse will not hide it)")),
            (SetOp::Activate, SetOutcome::Activated, format!("activated {id}: its content appears in context from the next model call")),
            (SetOp::Activate, SetOutcome::AlreadyActive, format!("{id} is already active (its content is in context)")),
        ];
        for (op, outcome, message) in cases {
            let r = s.set_op(op, "@b.md");
            assert!(r.ok, "{r:?}");
            assert_eq!(
                (r.outcome, &r.message, &r.text),
                (Some(outcome), &message, &message),
                "{op:?}"
            );
        }
        s.close().await.unwrap();
    }
}
