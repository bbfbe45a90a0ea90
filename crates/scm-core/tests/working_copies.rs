//! Working copies (issue 10, "one current copy of each file, visible while
//! it is being worked on"): a file the agent edits from memory — quoting
//! text its context no longer shows — is shown once as it is now, and stays
//! shown while the agent works on it. Real embedded store (and XTDB when
//! configured), real files, the cache layout.

mod session_support;

use scm_core::session::{CachePolicy, Layout, Session, SessionOptions};
use serde_json::{json, Value};
use session_support::*;

fn opts(prefix: &str) -> SessionOptions {
    let mut o = SessionOptions::new(unique_id(prefix));
    o.layout = Layout::Cache;
    // Small thresholds: a few calls make an epoch; a view of the plan (its
    // write) is over the views' budget, its copy within the copies'.
    o.cache = CachePolicy {
        high: 300,
        low: 100,
        fold: 0,
        working_calls: 2,
        working_edited_calls: 20,
        working_units: 200,
        working_copy_units: 5_000,
        ..Default::default()
    };
    o
}

/// A plan of `n` distinct checklist lines.
fn plan(n: usize) -> String {
    (0..n)
        .map(|i| format!("- [ ] step {i:03}: do the thing number {i:03} carefully"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Bash output that pushes epochs along.
fn noise(tag: &str) -> String {
    (0..30)
        .map(|i| format!("{tag} output line {i:02} with enough text to count"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn copies_of(out: &[Value], path: &str) -> Vec<String> {
    texts(out)
        .into_iter()
        .filter(|t| t.starts_with("FILE ") && t.lines().next().unwrap_or("").contains(path))
        .collect()
}

/// One call of other work: a bash command with 30 lines of output.
fn make(t: &mut Transcript, i: usize) {
    t.call(
        &format!("b{i}"),
        "bash",
        json!({"command": format!("make step{i}")}),
        &noise(&format!("B{i}")),
    );
}

/// Calls of other work (`make`), each a model call: epochs run.
async fn other_work(
    s: &mut Session,
    t: &mut Transcript,
    outs: &mut Vec<Vec<Value>>,
    calls: std::ops::Range<usize>,
) {
    for i in calls {
        make(t, i);
        step(s, t, outs).await;
    }
}

/// A call with a line of output: the epoch it runs collapses the last
/// `make`, so the next small call runs none.
async fn quiet_call(s: &mut Session, t: &mut Transcript, outs: &mut Vec<Vec<Value>>) {
    t.call(
        "q",
        "bash",
        json!({"command": "pwd"}),
        "/home/agent/workspace",
    );
    step(s, t, outs).await;
}

/// The plan written and read once (call `r0`): its text.
async fn read_plan(
    ws: &Workspace,
    s: &mut Session,
    t: &mut Transcript,
    outs: &mut Vec<Vec<Value>>,
) -> String {
    let v1 = plan(60);
    ws.write("plan.md", &v1);
    s.read("plan.md").await.unwrap();
    t.user("follow the plan")
        .call("r0", "read", json!({"path": "plan.md"}), &v1);
    step(s, t, outs).await;
    v1
}

/// The plan read once, then other work until its read has collapsed.
async fn read_plan_then_work(
    ws: &Workspace,
    s: &mut Session,
    t: &mut Transcript,
    outs: &mut Vec<Vec<Value>>,
) -> String {
    let v1 = read_plan(ws, s, t, outs).await;
    // Other work: the read collapses (its view is over budget, and nothing
    // says yet that the agent will quote it).
    other_work(s, t, outs, 0..4).await;
    v1
}

/// A failed edit of `plan.md` (call `id`), answered with pi's `error`.
fn failed_edit(t: &mut Transcript, id: &str, old: &str, new: &str, error: &str) {
    t.assistant(
        "",
        &[(
            id,
            "edit",
            json!({"path": "plan.md", "oldText": old, "newText": new}),
        )],
    )
    .result(id, "edit", error, true);
}

/// The agent ticks off step `n` of plan text `v` on disk and in an edit
/// (call `id`), as pi does: the new text.
async fn tick_step(
    ws: &Workspace,
    s: &mut Session,
    t: &mut Transcript,
    v: &str,
    n: usize,
    id: &str,
) -> String {
    let old = format!("- [ ] step {n:03}: do the thing number {n:03} carefully");
    let new = old.replace("- [ ]", "- [x]");
    let v2 = v.replace(&old, &new);
    ws.write("plan.md", &v2);
    s.observe_edit("plan.md").await.unwrap(); // as pi does after an edit
    t.call(
        id,
        "edit",
        json!({"path": "plan.md", "oldText": old, "newText": new}),
        "Successfully replaced text in plan.md.",
    );
    v2
}

/// The agent ticks off step 040 of `v1` (call `e1`) whose old text the
/// collapsed read no longer shows: from memory.
async fn tick_step_040(ws: &Workspace, s: &mut Session, t: &mut Transcript, v1: &str) -> String {
    tick_step(ws, s, t, v1, 40, "e1").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_edited_from_memory_is_shown_once_as_it_is_now() {
    for store in stores() {
        let ws = Workspace::new(store);
        let o = opts("copy");
        let mut s = ws.open(o.clone()).await;
        let mut t = Transcript::default();
        let mut outs = Vec::new();
        let v1 = read_plan_then_work(&ws, &mut s, &mut t, &mut outs).await;
        let before = outs.last().unwrap().clone();
        assert_eq!(
            occurrences(&before, "step 040: do the thing"),
            0,
            "the plan's text has collapsed"
        );
        assert_eq!(s.cache_stats().copies, 0);

        // The agent edits it from memory: the edit quotes a line it cannot see.
        let v2 = tick_step_040(&ws, &mut s, &mut t, &v1).await;
        step(&mut s, &t, &mut outs).await;
        // More work: the next epoch shows the plan as it is now, once.
        other_work(&mut s, &mut t, &mut outs, 4..8).await;
        let out = outs.last().unwrap().clone();
        let copies = copies_of(&out, "plan.md");
        assert_eq!(copies.len(), 1, "{:#?}", texts(&out));
        assert!(
            copies[0].starts_with("FILE f1 plan.md as of t"),
            "{}",
            copies[0]
        );
        assert!(copies[0].contains("- [x] step 040"), "the current version");
        assert!(!copies[0].contains("- [ ] step 040"), "not the old one");
        assert_eq!(occurrences(&out, "step 041: do the thing"), 1, "once");
        assert!(s.cache_stats().copies >= 1);

        // A second edit from the same memory quotes text now in view, and
        // after it the copy plus the edit are the current version.
        let v3 = v2.replace("- [ ] step 052", "- [x] step 052");
        ws.write("plan.md", &v3);
        s.observe_edit("plan.md").await.unwrap();
        t.call(
            "e2",
            "edit",
            json!({"path": "plan.md", "oldText": "- [ ] step 052: do the thing number 052 carefully",
                   "newText": "- [x] step 052: do the thing number 052 carefully"}),
            "Successfully replaced text in plan.md.",
        );
        let after = step(&mut s, &t, &mut outs).await;
        assert_eq!(copies_of(&after, "plan.md").len(), 1, "no second copy");

        // Every call is reconstructed exactly, and the state survives a resume.
        assert_rebuilt(&s, &outs).await;
        s.close().await.unwrap();
        let mut s = ws.open(o).await;
        t.user("go on");
        let resumed = s.transform_context(&t.messages).await.unwrap();
        assert_eq!(&resumed[..after.len()], &after[..], "the prefix survives");
        s.close().await.unwrap();
    }
}

/// The call's last message is the plan's working copy (appended: the
/// call before it, `before`, stays the cached prefix) and the plan's text
/// is in view once. The copy's text.
fn assert_copy_appended(out: &[Value], before: &[Value]) -> String {
    assert_eq!(&out[..before.len()], before, "the cached prefix stays");
    let last = texts(out).pop().unwrap();
    assert!(
        last.starts_with("FILE f1 plan.md as of t"),
        "the copy comes last: {:#?}",
        texts(out)
    );
    assert_eq!(occurrences(out, "step 041: do the thing"), 1, "once");
    last
}

/// The agent ticks off step `n` quoting the copy: no second copy; every
/// call so far is reconstructed.
async fn tick_from_copy(
    ws: &Workspace,
    s: &mut Session,
    t: &mut Transcript,
    outs: &mut Vec<Vec<Value>>,
    v: &str,
    n: usize,
) {
    tick_step(ws, s, t, v, n, "e2").await;
    let after = step(s, t, outs).await;
    assert_eq!(
        copies_of(&after, "plan.md").len(),
        1,
        "{:#?}",
        texts(&after)
    );
    assert_rebuilt(s, outs).await;
}

/// A failed edit of text the model did not have in view (pi: the text was
/// not found) says its memory of the file is wrong: the next call shows the
/// file as it is now, appended after the edit's result (what the last call
/// sent stays, byte for byte, cached), rather than at the next epoch — in a
/// live run the agent would otherwise read the file again first. The next
/// edit quotes the copy: no second copy. A failed edit of text in view
/// (pi: "No changes made", the old and new text were the same) gets none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_edit_shows_the_file_as_it_is_now_at_the_next_call() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.open(opts("copy-failed")).await;
        let mut t = Transcript::default();
        let mut outs = Vec::new();
        let v1 = read_plan_then_work(&ws, &mut s, &mut t, &mut outs).await;
        quiet_call(&mut s, &mut t, &mut outs).await;
        // Text in view (the quiet call's output): no copy.
        failed_edit(
            &mut t,
            "e0",
            "/home/agent/workspace",
            "/home/agent/workspace",
            "No changes made to plan.md. The replacement produced identical content.",
        );
        let out = step(&mut s, &t, &mut outs).await;
        assert!(copies_of(&out, "plan.md").is_empty(), "{:#?}", texts(&out));
        let before = out;
        let epochs = s.cache_stats().epochs;

        failed_edit(
            &mut t,
            "e1",
            "- [ ] step 040: do it",
            "- [x] step 040: do it",
            "Could not find the exact text in plan.md. The old text must match exactly including all whitespace and newlines.",
        );
        let out = step(&mut s, &t, &mut outs).await;
        assert_eq!(s.cache_stats().epochs, epochs, "no epoch ran");
        let last = assert_copy_appended(&out, &before);
        assert!(last.contains("- [ ] step 040: do the thing number 040 carefully"));

        // The next edit quotes the copy: no second copy.
        tick_from_copy(&ws, &mut s, &mut t, &mut outs, &v1, 40).await;
        s.close().await.unwrap();
    }
}

/// A successful edit of text the model did not have in view says the
/// same as a failed one: the agent works on the file from memory, and its
/// next edits of it will quote more of what it cannot see. The next call
/// shows the file as it is now (the edit applied), appended after the
/// edit's result, rather than at the next epoch; the edit after it quotes
/// the copy, and no second copy comes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_successful_edit_from_memory_shows_the_file_as_it_is_now_at_the_next_call() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.open(opts("copy-memory")).await;
        let mut t = Transcript::default();
        let mut outs = Vec::new();
        let v1 = read_plan_then_work(&ws, &mut s, &mut t, &mut outs).await;
        quiet_call(&mut s, &mut t, &mut outs).await;
        let before = outs.last().unwrap().clone();
        assert_eq!(
            occurrences(&before, "step 041: do the thing"),
            0,
            "collapsed"
        );
        let epochs = s.cache_stats().epochs;

        let v2 = tick_step_040(&ws, &mut s, &mut t, &v1).await;
        let out = step(&mut s, &t, &mut outs).await;
        assert_eq!(s.cache_stats().epochs, epochs, "no epoch ran");
        let last = assert_copy_appended(&out, &before);
        assert!(last.contains("- [x] step 040"), "the edit applied");
        assert!(!last.contains("- [ ] step 040"));

        // The next edit quotes the copy: no second copy.
        tick_from_copy(&ws, &mut s, &mut t, &mut outs, &v2, 41).await;
        s.close().await.unwrap();
    }
}

/// A failed edit of a file whose current text is in view (its read is
/// still live): the model can see the file, it misquoted it; a copy would
/// show the text twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_edit_of_a_file_in_view_gets_no_copy() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut o = opts("copy-failed-seen");
        o.cache.high = 100_000; // no epoch: the read stays live
        let mut s = ws.open(o).await;
        let mut t = Transcript::default();
        let mut outs = Vec::new();
        read_plan(&ws, &mut s, &mut t, &mut outs).await;
        failed_edit(
            &mut t,
            "e1",
            "- [ ] step 040: do it",
            "- [x] step 040: do it",
            "Could not find the exact text in plan.md.",
        );
        let out = step(&mut s, &t, &mut outs).await;
        assert_eq!(
            occurrences(&out, "step 041: do the thing"),
            1,
            "{:#?}",
            texts(&out)
        );
        assert!(copies_of(&out, "plan.md").is_empty());
        s.close().await.unwrap();
    }
}

/// An epoch's new copy goes right before the first message that epoch
/// rewrote: everything above stays as the last call sent it (cached), and
/// below the copy nothing is sent again that the epoch did not change
/// anyway. With older thinking kept (session 16), the thinking boundary,
/// which never moves then, had put every copy at the top of the chat, so
/// the epoch sent the whole chat again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_copy_goes_before_the_first_message_its_epoch_rewrote() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.open(opts("copy-place")).await;
        let mut t = Transcript::default();
        let mut outs = Vec::new();
        let v1 = read_plan_then_work(&ws, &mut s, &mut t, &mut outs).await;
        tick_step_040(&ws, &mut s, &mut t, &v1).await;
        step(&mut s, &t, &mut outs).await;
        let mut i = 4;
        while copies_of(outs.last().unwrap(), "plan.md").is_empty() {
            assert!(i < 12, "no copy made");
            other_work(&mut s, &mut t, &mut outs, i..i + 1).await;
            i += 1;
        }
        let (now, prev) = (&outs[outs.len() - 1], &outs[outs.len() - 2]);
        let at = now
            .iter()
            .position(|m| {
                m["content"]
                    .as_str()
                    .is_some_and(|c| c.starts_with("FILE f1 plan.md"))
            })
            .unwrap();
        let mut without = now.clone();
        without.remove(at);
        let rewritten = without
            .iter()
            .zip(prev)
            .position(|(a, b)| a != b)
            .unwrap_or(prev.len());
        assert!(at > 1, "not at the top of the chat: {:#?}", texts(now));
        // At a message boundary: the first rewritten message, or the call
        // whose result it is.
        assert!(at <= rewritten, "{:#?}", texts(now));
        assert!(
            without[at..rewritten]
                .iter()
                .all(|m| m["role"] == "assistant" || m["role"] == "toolResult"),
            "{:#?}",
            texts(now)
        );
        assert_rebuilt(&s, &outs).await;
    }
}

/// A resume between the call that made an edit and the call its result
/// arrives with (pi restarted, `/resume`): the edit is still checked against
/// what the model was shown, so a file edited from memory gets its copy as
/// in a session that never closed. Found replaying the recorded session with
/// a resume at every call: resumed at call 50, the plan document lost its
/// working copy for 129 calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_from_memory_right_after_a_resume_still_gets_its_copy() {
    for store in stores() {
        let ws = Workspace::new(store);
        let o = opts("resumed-copy");
        let mut s = ws.open(o.clone()).await;
        let mut t = Transcript::default();
        let mut outs = Vec::new();
        let v1 = read_plan_then_work(&ws, &mut s, &mut t, &mut outs).await;
        assert_eq!(
            occurrences(outs.last().unwrap(), "step 040: do the thing"),
            0
        );

        // The model's edit is under way when the agent stops; it resumes.
        s.close().await.unwrap();
        let mut s = ws.open(o.clone()).await;
        tick_step_040(&ws, &mut s, &mut t, &v1).await;
        step(&mut s, &t, &mut outs).await;
        other_work(&mut s, &mut t, &mut outs, 4..8).await;
        let out = outs.last().unwrap().clone();
        let copies = copies_of(&out, "plan.md");
        assert_eq!(
            copies.len(),
            1,
            "the plan's copy after the resume: {:#?}",
            texts(&out)
        );
        assert!(copies[0].contains("- [x] step 040"), "the current version");
        s.close().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_edited_from_what_is_in_view_gets_no_copy() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.open(opts("nocopy")).await;
        let mut t = Transcript::default();
        let v1 = plan(60);
        ws.write("src.ts", &v1);
        s.read("src.ts").await.unwrap();
        // Read, then edit right away: the quoted line is in view.
        t.user("fix it")
            .call("r1", "read", json!({"path": "src.ts"}), &v1);
        s.transform_context(&t.messages).await.unwrap();
        let v2 = v1.replace("- [ ] step 010", "- [x] step 010");
        ws.write("src.ts", &v2);
        s.observe_edit("src.ts").await.unwrap();
        t.call(
            "e1",
            "edit",
            json!({"path": "src.ts", "oldText": "- [ ] step 010: do the thing number 010 carefully",
                   "newText": "- [x] step 010: do the thing number 010 carefully"}),
            "Successfully replaced text in src.ts.",
        );
        s.transform_context(&t.messages).await.unwrap();
        for i in 0..8 {
            make(&mut t, i);
            let out = s.transform_context(&t.messages).await.unwrap();
            assert!(copies_of(&out, "src.ts").is_empty());
        }
        assert_eq!(s.cache_stats().copies, 0);
        s.close().await.unwrap();
    }
}

/// `src.ts` (a plan of `n` lines) read whole (`r0`, unless `whole` is false:
/// then only a slice of it) and edited from what the model had in view
/// (`e0`), then other work until the read has collapsed. The outputs, and
/// the file's text now.
async fn edit_then_work(
    ws: &Workspace,
    s: &mut Session,
    t: &mut Transcript,
    whole: bool,
    n: usize,
) -> (Vec<Vec<Value>>, String) {
    let mut outs = Vec::new();
    let v1 = plan(n);
    ws.write("src.ts", &v1);
    s.read("src.ts").await.unwrap();
    let first: String = v1.lines().take(12).collect::<Vec<_>>().join("\n");
    if whole {
        t.user("fix it")
            .call("r0", "read", json!({"path": "src.ts"}), &v1);
    } else {
        t.user("fix it").call(
            "r0",
            "read",
            json!({"path": "src.ts", "offset": 1, "limit": 12}),
            &first,
        );
    }
    step(s, t, &mut outs).await;
    let v2 = v1.replace("- [ ] step 010", "- [x] step 010");
    ws.write("src.ts", &v2);
    s.observe_edit("src.ts").await.unwrap();
    t.call(
        "e0",
        "edit",
        json!({"path": "src.ts", "oldText": "- [ ] step 010: do the thing number 010 carefully",
               "newText": "- [x] step 010: do the thing number 010 carefully"}),
        "Successfully replaced text in src.ts.",
    );
    step(s, t, &mut outs).await;
    other_work(s, t, &mut outs, 0..4).await;
    quiet_call(s, t, &mut outs).await;
    (outs, v2)
}

/// [`edit_then_work`], then a slice of `src.ts` (`r1`, `lines` from line 30
/// on, or from line 1 when `lines` is 60: the whole file). The outputs of
/// the calls before the slice, and the slice's call.
async fn edit_then_slice(
    ws: &Workspace,
    s: &mut Session,
    t: &mut Transcript,
    whole: bool,
    lines: usize,
) -> (Vec<Vec<Value>>, Vec<Value>) {
    let (mut outs, v2) = edit_then_work(ws, s, t, whole, 60).await;
    let from = if lines == 60 { 1 } else { 30 };
    let part: String = v2
        .lines()
        .skip(from - 1)
        .take(lines)
        .collect::<Vec<_>>()
        .join("\n");
    t.call(
        "r1",
        "read",
        json!({"path": "src.ts", "offset": from, "limit": lines}),
        &part,
    );
    let before = outs.clone();
    step(s, t, &mut outs).await;
    (before, outs.pop().unwrap())
}

/// A slice of a small file the agent saw whole and is editing, whose whole
/// text is no longer in view: the agent is about to edit it again, quoting
/// lines around the slice from what it remembers of the whole (a real
/// session: `docs/theme.md` read in two slices, then an edit quoting five
/// lines past the second). That call shows the file as it is now, once,
/// appended (the cached prefix stays); the next slice gets no second copy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slice_of_a_small_file_being_edited_shows_it_whole_at_that_call() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.open(opts("slice")).await;
        let mut t = Transcript::default();
        let (mut outs, out) = edit_then_slice(&ws, &mut s, &mut t, true, 5).await;
        let before = outs.last().unwrap().clone();
        assert_eq!(
            occurrences(&before, "step 041: do the thing"),
            0,
            "the read has collapsed: {:#?}",
            texts(&before)
        );
        assert_eq!(&out[..before.len()], &before[..], "the cached prefix stays");
        let copies = copies_of(&out, "src.ts");
        assert_eq!(copies.len(), 1, "{:#?}", texts(&out));
        let last = texts(&out).pop().unwrap();
        assert!(
            last.starts_with("FILE f1 src.ts as of t"),
            "appended: {last}"
        );
        assert!(last.contains("- [x] step 010"), "the current version");
        assert!(!last.contains("- [ ] step 010"));
        assert_eq!(occurrences(&out, "step 041: do the thing"), 1, "once");
        outs.push(out);

        // Another slice: the copy shows the file already.
        t.call(
            "r2",
            "read",
            json!({"path": "src.ts", "offset": 50, "limit": 5}),
            &plan(60)
                .lines()
                .skip(49)
                .take(5)
                .collect::<Vec<_>>()
                .join("\n"),
        );
        let out = step(&mut s, &t, &mut outs).await;
        assert_eq!(copies_of(&out, "src.ts").len(), 1, "{:#?}", texts(&out));
        assert_eq!(occurrences(&out, "step 041: do the thing"), 1, "once");
        assert_rebuilt(&s, &outs).await;
        s.close().await.unwrap();
    }
}

/// A fold at the user's next prompt keeps the slice the agent is editing
/// from: `src.ts` is over the views' budget and over a small copy, so a
/// slice of it gets no copy and its view is not kept; the recency rule kept
/// the slice in the chat, and the fold would cut it away with the turn,
/// leaving the edit's body alone. The agent's next edit quotes the lines
/// around it (on the themes session with files twice as large, the retry of
/// an interrupted edit right after "continue").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fold_keeps_the_slice_of_a_large_file_being_edited() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut o = opts("foldslice");
        o.cache.fold = 150;
        o.cache.working_calls = 6;
        let mut s = ws.open(o).await;
        let mut t = Transcript::default();
        let (mut outs, v2) = edit_then_work(&ws, &mut s, &mut t, true, 150).await;
        // The slice the agent edits in next.
        let part: String = v2.lines().skip(99).take(4).collect::<Vec<_>>().join("\n");
        t.call(
            "r1",
            "read",
            json!({"path": "src.ts", "offset": 100, "limit": 4}),
            &part,
        );
        let out = step(&mut s, &t, &mut outs).await;
        assert_eq!(
            copies_of(&out, "src.ts").len(),
            0,
            "no copy: {:#?}",
            texts(&out)
        );
        let v3 = v2.replace("- [ ] step 101", "- [x] step 101");
        ws.write("src.ts", &v3);
        s.observe_edit("src.ts").await.unwrap();
        t.call(
            "e1",
            "edit",
            json!({"path": "src.ts", "oldText": "- [ ] step 101: do the thing number 101 carefully",
                   "newText": "- [x] step 101: do the thing number 101 carefully"}),
            "Successfully replaced text in src.ts.",
        );
        step(&mut s, &t, &mut outs).await;
        // A build after the edit; then the next prompt, whose first call
        // collapses the build's output: an epoch, and a fold at the prompt.
        make(&mut t, 8);
        step(&mut s, &t, &mut outs).await;
        let folds = s.cache_stats().folds;
        t.user("now the next one");
        quiet_call(&mut s, &mut t, &mut outs).await;
        let out = outs.last().unwrap().clone();
        assert_eq!(
            s.cache_stats().folds,
            folds + 1,
            "a fold: {:#?}",
            texts(&out)
        );
        let block: Vec<String> = texts(&out)
            .into_iter()
            .filter(|x| x.starts_with("PINNED"))
            .collect();
        assert_eq!(block.len(), 1, "{:#?}", texts(&out));
        for line in ["step 100: do the thing", "step 102: do the thing"] {
            assert_eq!(
                occurrences(&out, line),
                1,
                "{line} once, in the block: {:#?}",
                block
            );
            assert!(block[0].contains(line), "{line} in the block: {:#?}", block);
        }
        assert_rebuilt(&s, &outs).await;
        s.close().await.unwrap();
    }
}

/// A slice printed through the shell (`sed -n '30,34p' src.ts`) is a slice
/// as a ranged read is (§5 rule 9): the same copy comes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shell_slice_of_a_small_file_being_edited_shows_it_whole_too() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.open(opts("slice-shell")).await;
        let mut t = Transcript::default();
        let (mut outs, v2) = edit_then_work(&ws, &mut s, &mut t, true, 60).await;
        let before = outs.last().unwrap().clone();
        assert_eq!(occurrences(&before, "step 041: do the thing"), 0);
        let part: String = v2.lines().skip(29).take(5).collect::<Vec<_>>().join("\n");
        let cmd = "sed -n '30,34p' src.ts";
        s.observe_bash(cmd, &part).await.unwrap();
        t.call("r1", "bash", json!({ "command": cmd }), &part);
        let out = step(&mut s, &t, &mut outs).await;
        assert_eq!(&out[..before.len()], &before[..], "the cached prefix stays");
        let last = texts(&out).pop().unwrap();
        assert!(
            last.starts_with("FILE f1 src.ts as of t"),
            "appended: {last}"
        );
        assert!(last.contains("- [x] step 010"), "the current version");
        assert_eq!(occurrences(&out, "step 041: do the thing"), 1, "once");
        assert_rebuilt(&s, &outs).await;
        s.close().await.unwrap();
    }
}

/// No copy for a slice of a file only ever seen in slices (the agent does
/// not remember it whole), nor while its whole read is in view, nor of a
/// file larger than a small copy, nor for a slice that covers the whole
/// file (random seeds 34, 50: check 10).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slice_gets_no_copy_of_a_file_never_seen_whole_in_view_or_large() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut t = Transcript::default();
        let mut s = ws.open(opts("slice-unseen")).await;
        let (_, out) = edit_then_slice(&ws, &mut s, &mut t, false, 5).await;
        assert!(copies_of(&out, "src.ts").is_empty(), "{:#?}", texts(&out));
        s.close().await.unwrap();

        let mut o = opts("slice-in-view");
        o.cache.high = 100_000; // no epoch: the read stays in view
        let mut t = Transcript::default();
        let mut s = ws.open(o).await;
        let (_, out) = edit_then_slice(&ws, &mut s, &mut t, true, 5).await;
        assert!(copies_of(&out, "src.ts").is_empty(), "{:#?}", texts(&out));
        assert_eq!(occurrences(&out, "step 041: do the thing"), 1, "once");
        s.close().await.unwrap();

        let mut o = opts("slice-large");
        o.cache.working_copy_units = 2_800; // a small copy: 700 units, the file 750
        let mut t = Transcript::default();
        let mut s = ws.open(o).await;
        let (_, out) = edit_then_slice(&ws, &mut s, &mut t, true, 5).await;
        assert!(copies_of(&out, "src.ts").is_empty(), "{:#?}", texts(&out));
        s.close().await.unwrap();

        let mut t = Transcript::default();
        let mut s = ws.open(opts("slice-whole")).await;
        let (_, out) = edit_then_slice(&ws, &mut s, &mut t, true, 60).await;
        assert!(copies_of(&out, "src.ts").is_empty(), "{:#?}", texts(&out));
        assert_eq!(occurrences(&out, "step 041: do the thing"), 1, "once");
        s.close().await.unwrap();
    }
}

/// The agent reads the file again and edits from what it read: no new copy
/// is made for it. But it has edited the file from memory once and will
/// again (a real session played through pi: `theme.ts` edited after a grep,
/// then from memory 80 calls on), so the copy shown stays as long as for a
/// file edited from memory, and collapses to a ref once the agent has moved
/// on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_an_edit_from_a_fresh_read_the_copy_stays_and_no_new_one_comes() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.open(opts("copystays")).await;
        let mut t = Transcript::default();
        let mut outs = Vec::new();
        let v1 = read_plan_then_work(&ws, &mut s, &mut t, &mut outs).await;
        let v2 = tick_step_040(&ws, &mut s, &mut t, &v1).await;
        step(&mut s, &t, &mut outs).await;
        other_work(&mut s, &mut t, &mut outs, 4..8).await;
        assert_eq!(copies_of(outs.last().unwrap(), "plan.md").len(), 1);
        let made = s.cache_stats().copies;

        // A ranged read, and an edit quoting it (the copy shows it too).
        let part: String = v2.lines().skip(9).take(4).collect::<Vec<_>>().join("\n");
        t.call(
            "r1",
            "read",
            json!({"path": "plan.md", "offset": 10, "limit": 4}),
            &part,
        );
        step(&mut s, &t, &mut outs).await;
        let v3 = v2.replace("- [ ] step 010", "- [x] step 010");
        ws.write("plan.md", &v3);
        s.observe_edit("plan.md").await.unwrap();
        t.call(
            "e2",
            "edit",
            json!({"path": "plan.md", "oldText": "- [ ] step 010: do the thing number 010 carefully",
                   "newText": "- [x] step 010: do the thing number 010 carefully"}),
            "Successfully replaced text in plan.md.",
        );
        step(&mut s, &t, &mut outs).await;
        // Past `working_edited_calls` (20) after that edit, the copy and the
        // edit after it are still the plan's current text in view (before
        // session 34 the copy had collapsed here: the edit made the file one
        // the agent reads before editing) ...
        other_work(&mut s, &mut t, &mut outs, 8..32).await;
        let out = outs.last().unwrap();
        assert_eq!(copies_of(out, "plan.md").len(), 1, "{:#?}", texts(out));
        let json = serde_json::to_string(out).unwrap();
        assert_eq!(json.matches("- [x] step 010: do the thing").count(), 1);
        assert_eq!(occurrences(out, "step 041: do the thing"), 1, "once");
        // ... no new copy was made for it ...
        assert_eq!(s.cache_stats().copies, made, "no new copy");
        // ... and once the agent has moved on (a small copy stays four
        // times `working_edited_calls`), it collapses to a ref.
        other_work(&mut s, &mut t, &mut outs, 32..100).await;
        let out = outs.last().unwrap();
        assert!(copies_of(out, "plan.md").is_empty(), "{:#?}", texts(out));
        assert!(
            texts(out).iter().any(|x| x.starts_with("[f1 · 60 lines]")),
            "collapsed to a ref: {:#?}",
            texts(out)
        );
        assert_eq!(s.cache_stats().copies, made, "no new copy");
        assert_rebuilt(&s, &outs).await;
        s.close().await.unwrap();
    }
}

/// A file the agent wrote that is larger than the views' budget stays in
/// view where it was written: the agent knows its text and will quote it
/// (a plan written once and edited for hundreds of calls).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_file_the_agent_wrote_stays_in_view() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.open(opts("written")).await;
        let mut t = Transcript::default();
        let mut outs = Vec::new();
        let v1 = plan(60);
        ws.write("plan.md", &v1);
        s.observe_write("plan.md").await.unwrap();
        t.user("write the plan").call(
            "w1",
            "write",
            json!({"path": "plan.md", "content": v1}),
            "Successfully wrote plan.md",
        );
        step(&mut s, &t, &mut outs).await;
        other_work(&mut s, &mut t, &mut outs, 0..8).await;
        let out = outs.last().unwrap();
        assert!(s.cache_stats().epochs >= 2, "{:?}", s.cache_stats());
        assert_eq!(
            occurrences(out, "B0 output line 29"),
            0,
            "other output collapsed"
        );
        let write = out
            .iter()
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .find(|p| p["type"] == "toolCall" && p["name"] == "write")
            .expect("the write call");
        assert_eq!(
            write["arguments"]["content"],
            json!(v1),
            "its body is whole"
        );
        assert_rebuilt(&s, &outs).await;
        s.close().await.unwrap();
    }
}

/// A fold keeps the copies: in its working area, after the header and before
/// the summary, carried to the next fold unchanged while still wanted; every
/// call is reconstructed exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_survive_folds_in_the_working_area() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut o = opts("copyfold");
        o.cache.fold = 150;
        let mut s = ws.open(o).await;
        let mut t = Transcript::default();
        let mut outs = Vec::new();
        let mut v = read_plan(&ws, &mut s, &mut t, &mut outs).await;
        let mut copied_at = None;
        for i in 0..24 {
            t.user(&format!("go on with part {i}"));
            make(&mut t, i);
            if i % 6 == 5 {
                // Tick off a step it has not seen for a while.
                v = tick_step(&ws, &mut s, &mut t, &v, 30 + i, &format!("e{i}")).await;
            }
            let out = step(&mut s, &t, &mut outs).await;
            if copied_at.is_none() && !copies_of(&out, "plan.md").is_empty() {
                copied_at = Some(outs.len());
            }
        }
        let st = s.cache_stats();
        assert!(st.folds >= 2, "{st:?}");
        assert!(copied_at.is_some(), "a copy was shown: {st:?}");
        // From the first copy on, every call shows the plan whole once, as
        // the copy or the copy plus later edits, never two copies.
        for out in &outs[copied_at.unwrap()..] {
            let copies = copies_of(out, "plan.md");
            assert!(copies.len() <= 1, "{copies:#?}");
        }
        let last = outs.last().unwrap();
        let copies = copies_of(last, "plan.md");
        assert_eq!(copies.len(), 1, "{:#?}", texts(last));
        let pos = |needle: &str| {
            texts(last)
                .iter()
                .position(|x| x.starts_with(needle))
                .unwrap_or(usize::MAX)
        };
        assert!(pos("[Earlier turns are folded") < usize::MAX, "folded");
        assert!(
            pos("FILE f1 plan.md") < pos("[Earlier turns are folded"),
            "in the working area, before the summary"
        );
        assert_rebuilt(&s, &outs).await;
        s.close().await.unwrap();
    }
}

/// Two plans (`a.md`, `b.md`) read once, folds on, then other work until
/// their reads have collapsed: the session, transcript, outputs and texts.
async fn two_plans_then_work(
    ws: &Workspace,
    prefix: &str,
) -> (Session, Transcript, Vec<Vec<Value>>, String, String) {
    let mut o = opts(prefix);
    o.cache.fold = 150;
    let mut s = ws.open(o).await;
    let mut t = Transcript::default();
    let mut outs = Vec::new();
    let (a1, b1) = (plan(60), plan(60).replace("do the thing", "make the part"));
    ws.write("a.md", &a1);
    ws.write("b.md", &b1);
    s.read("a.md").await.unwrap();
    s.read("b.md").await.unwrap();
    t.user("follow both plans")
        .call("ra", "read", json!({"path": "a.md"}), &a1)
        .call("rb", "read", json!({"path": "b.md"}), &b1);
    step(&mut s, &t, &mut outs).await;
    other_work(&mut s, &mut t, &mut outs, 0..4).await;
    (s, t, outs, a1, b1)
}

/// Two files edited from memory in one assistant message, with folds
/// running: from the call the copies first show, both are there, once each,
/// and every call is reconstructed exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_files_edited_from_memory_both_keep_one_copy_through_folds() {
    for store in stores() {
        let ws = Workspace::new(store);
        let (mut s, mut t, mut outs, a1, b1) = two_plans_then_work(&ws, "twocopies").await;
        // Both edited from memory, in one assistant message.
        let old_a = "- [ ] step 040: do the thing number 040 carefully";
        let old_b = "- [ ] step 041: make the part number 041 carefully";
        let (a2, b2) = (
            a1.replace(old_a, &old_a.replace("- [ ]", "- [x]")),
            b1.replace(old_b, &old_b.replace("- [ ]", "- [x]")),
        );
        ws.write("a.md", &a2);
        ws.write("b.md", &b2);
        s.observe_edit("a.md").await.unwrap();
        s.observe_edit("b.md").await.unwrap();
        t.assistant(
            "",
            &[
                ("ea", "edit", json!({"path": "a.md", "oldText": old_a, "newText": old_a.replace("- [ ]", "- [x]")})),
                ("eb", "edit", json!({"path": "b.md", "oldText": old_b, "newText": old_b.replace("- [ ]", "- [x]")})),
            ],
        )
        .result("ea", "edit", "Successfully replaced text in a.md.", false)
        .result("eb", "edit", "Successfully replaced text in b.md.", false);
        step(&mut s, &t, &mut outs).await;
        let mut both = false;
        for i in 4..16 {
            t.user(&format!("next {i}"));
            make(&mut t, i);
            let out = step(&mut s, &t, &mut outs).await;
            let (ca, cb) = (copies_of(&out, "a.md"), copies_of(&out, "b.md"));
            assert!(ca.len() <= 1 && cb.len() <= 1);
            if !ca.is_empty() || !cb.is_empty() {
                assert_eq!(
                    (ca.len(), cb.len()),
                    (1, 1),
                    "call {}: {:#?}",
                    outs.len() - 1,
                    texts(&out)
                );
                both = true;
            }
        }
        assert!(both, "copies were shown: {:?}", s.cache_stats());
        assert!(s.cache_stats().folds >= 1, "{:?}", s.cache_stats());
        assert_rebuilt(&s, &outs).await;
        s.close().await.unwrap();
    }
}

/// A fold carries a working-area copy over verbatim only while the copies
/// before it are carried too: after one made anew, the rest of the area is
/// sent again anyway, so a copy whose file changed since is made anew as
/// well, showing the current text rather than an old one plus the edits
/// since (on the second real session, a fold re-sent an unchanged copy
/// behind one it made anew).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_area_copy_behind_one_made_anew_is_made_anew_too() {
    for store in stores() {
        let ws = Workspace::new(store);
        let (mut s, mut t, mut outs, a1, b1) = two_plans_then_work(&ws, "area-order").await;
        let tick = |v: &str, n: usize, what: &str| {
            let old = format!("- [ ] step {n:03}: {what} number {n:03} carefully");
            (old.clone(), v.replace(&old, &old.replace("- [ ]", "- [x]")))
        };
        let edit = |t: &mut Transcript, id: &str, path: &str, old: &str| {
            t.call(
                id,
                "edit",
                json!({"path": path, "oldText": old, "newText": old.replace("- [ ]", "- [x]")}),
                &format!("Successfully replaced text in {path}."),
            );
        };
        // Both edited from memory: both get copies, which a fold puts in
        // its working area.
        let (mut a, mut b) = (a1.clone(), b1.clone());
        for (path, v, what) in [
            ("a.md", &mut a, "do the thing"),
            ("b.md", &mut b, "make the part"),
        ] {
            let (old, new) = tick(v, 40, what);
            ws.write(path, &new);
            s.observe_edit(path).await.unwrap();
            edit(&mut t, &format!("e40{path}"), path, &old);
            *v = new;
        }
        step(&mut s, &t, &mut outs).await;
        let area = |out: &[Value]| -> Vec<String> {
            let all = texts(out);
            let end = all
                .iter()
                .position(|x| x.starts_with("[Earlier turns are folded"))
                .unwrap_or(0);
            all[..end]
                .iter()
                .filter(|x| x.starts_with("FILE "))
                .cloned()
                .collect()
        };
        let mut i = 4;
        while area(outs.last().unwrap()).len() < 2 {
            assert!(i < 40, "no fold with both copies: {:?}", s.cache_stats());
            t.user(&format!("next {i}"));
            make(&mut t, i);
            step(&mut s, &t, &mut outs).await;
            i += 1;
        }
        // The first copy's file changes a lot, the second's a little.
        let order = area(outs.last().unwrap());
        let (first, second) = match order[0].contains("a.md") {
            true => (("a.md", "do the thing"), ("b.md", "make the part")),
            false => (("b.md", "make the part"), ("a.md", "do the thing")),
        };
        let text = |path: &str| if path == "a.md" { a.clone() } else { b.clone() };
        // (Edits of a line and a long note: large enough to count.)
        let mut v1 = text(first.0);
        for n in 10..18 {
            let (old, _) = tick(&v1, n, first.1);
            let new = format!(
                "{}\n  note: {}",
                old.replace("- [ ]", "- [x]"),
                "done and checked ".repeat(20)
            );
            let next = v1.replace(&old, &new);
            ws.write(first.0, &next);
            s.observe_edit(first.0).await.unwrap();
            t.call(
                &format!("f{n}"),
                "edit",
                json!({"path": first.0, "oldText": old, "newText": new}),
                &format!("Successfully replaced text in {}.", first.0),
            );
            v1 = next;
        }
        let v2 = text(second.0);
        let (old, new2) = tick(&v2, 20, second.1);
        ws.write(second.0, &new2);
        s.observe_edit(second.0).await.unwrap();
        edit(&mut t, "s20", second.0, &old);
        step(&mut s, &t, &mut outs).await;
        let folds = s.cache_stats().folds;
        while s.cache_stats().folds == folds {
            assert!(i < 80, "no second fold: {:?}", s.cache_stats());
            t.user(&format!("next {i}"));
            make(&mut t, i);
            step(&mut s, &t, &mut outs).await;
            i += 1;
        }
        let now = area(outs.last().unwrap());
        let copy = |path: &str| {
            now.iter()
                .find(|x| x.lines().next().unwrap_or("").contains(path))
        };
        let c1 = copy(first.0).expect("the first file keeps a copy");
        assert!(c1.contains("- [x] step 017"), "made anew: {c1}");
        let c2 = copy(second.0).expect("the second file keeps a copy");
        assert!(
            c2.contains("- [x] step 020"),
            "behind a copy made anew, made anew too (current text): {c2}"
        );
        assert_rebuilt(&s, &outs).await;
        s.close().await.unwrap();
    }
}

/// Whether `out` has a read result pointing at file `alias`'s working copy.
fn points_at_copy(out: &[Value], alias: &str) -> bool {
    let tail = format!(": identical to FILE {alias} above]");
    texts(out)
        .iter()
        .any(|x| x.starts_with("[t") && x.ends_with(&tail))
}

/// The agent reads a file again while its working copy is in view, and gets
/// the text the copy shows: the read points at the copy rather than show it
/// a second time (nothing twice). While it points, the copy is there; once
/// the agent has moved on, neither shows the text. Random sessions found it
/// (`INV_TWICE`), and the second recorded session does it twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_re_read_of_what_a_working_copy_shows_points_at_the_copy() {
    for store in stores() {
        let ws = Workspace::new(store);
        let o = opts("copyreread");
        let mut s = ws.open(o.clone()).await;
        let mut t = Transcript::default();
        let mut outs = Vec::new();
        let v1 = read_plan_then_work(&ws, &mut s, &mut t, &mut outs).await;
        let v2 = tick_step_040(&ws, &mut s, &mut t, &v1).await;
        step(&mut s, &t, &mut outs).await;
        other_work(&mut s, &mut t, &mut outs, 4..8).await;
        assert_eq!(copies_of(outs.last().unwrap(), "plan.md").len(), 1);

        s.read("plan.md").await.unwrap();
        t.call("r2", "read", json!({"path": "plan.md"}), &v2);
        let out = step(&mut s, &t, &mut outs).await;
        assert_eq!(
            occurrences(&out, "step 041: do the thing"),
            1,
            "the plan once: {:#?}",
            texts(&out)
        );
        assert!(points_at_copy(&out, "f1"), "{:#?}", texts(&out));

        // (The plan was edited from memory: it stays working for 40 calls, its small copy 80.)
        for i in 8..100 {
            make(&mut t, i);
            let out = step(&mut s, &t, &mut outs).await;
            assert!(
                occurrences(&out, "step 041: do the thing") <= 1,
                "call {}: {:#?}",
                outs.len() - 1,
                texts(&out)
            );
            if points_at_copy(&out, "f1") {
                assert_eq!(copies_of(&out, "plan.md").len(), 1, "{:#?}", texts(&out));
            }
        }
        let last = outs.last().unwrap().clone();
        assert_eq!(
            occurrences(&last, "step 041: do the thing"),
            0,
            "moved on: {:#?}",
            texts(&last)
        );
        assert_rebuilt(&s, &outs).await;
        s.close().await.unwrap();
        let mut s = ws.open(o).await;
        t.user("go on");
        let resumed = s.transform_context(&t.messages).await.unwrap();
        assert_eq!(&resumed[..last.len()], &last[..], "the prefix survives");
        s.close().await.unwrap();
    }
}

/// The same through folds: the copy the read points at moves into a fold's
/// working area (or is made again there), and the read, kept after the
/// fold's cut, still has it above, or shows its own text; never both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_re_read_pointing_at_a_copy_stays_true_through_folds() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut o = opts("copyrereadfold");
        o.cache.fold = 150;
        let mut s = ws.open(o).await;
        let mut t = Transcript::default();
        let mut outs = Vec::new();
        let mut v = read_plan(&ws, &mut s, &mut t, &mut outs).await;
        let mut pointed = 0;
        for i in 0..30 {
            t.user(&format!("go on with part {i}"));
            make(&mut t, i);
            if i % 6 == 5 {
                // Tick off a step it has not seen for a while.
                v = tick_step(&ws, &mut s, &mut t, &v, 30 + i, &format!("e{i}")).await;
            }
            // Once a copy is shown, the agent reads the plan again now and then.
            if i % 4 == 3 && !copies_of(outs.last().unwrap(), "plan.md").is_empty() {
                s.read("plan.md").await.unwrap();
                t.call(&format!("r{i}"), "read", json!({"path": "plan.md"}), &v);
            }
            let out = step(&mut s, &t, &mut outs).await;
            assert!(
                occurrences(&out, "step 058: do the thing") <= 1,
                "call {}: {:#?}",
                outs.len() - 1,
                texts(&out)
            );
            if points_at_copy(&out, "f1") {
                pointed += 1;
                assert_eq!(copies_of(&out, "plan.md").len(), 1, "{:#?}", texts(&out));
            }
        }
        assert!(pointed > 0, "a read pointed at the copy");
        assert!(s.cache_stats().folds >= 2, "{:?}", s.cache_stats());
        assert_rebuilt(&s, &outs).await;
        s.close().await.unwrap();
    }
}

/// The agent activates a file whose working copy in view shows its current
/// version: `[f1 is shown above]`, not its text a second time; the copy
/// stays while the activation is in view.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_activation_of_what_a_working_copy_shows_points_at_the_copy() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.open(opts("copyactivate")).await;
        let mut t = Transcript::default();
        let mut outs = Vec::new();
        let v1 = read_plan_then_work(&ws, &mut s, &mut t, &mut outs).await;
        tick_step_040(&ws, &mut s, &mut t, &v1).await;
        step(&mut s, &t, &mut outs).await;
        other_work(&mut s, &mut t, &mut outs, 4..8).await;
        assert_eq!(copies_of(outs.last().unwrap(), "plan.md").len(), 1);

        let op = s.activate("plan.md");
        assert!(op.ok, "{op:?}");
        t.call("a1", "activate", json!({"id": "plan.md"}), &op.message);
        let out = step(&mut s, &t, &mut outs).await;
        assert_eq!(
            occurrences(&out, "step 041: do the thing"),
            1,
            "the plan once: {:#?}",
            texts(&out)
        );
        assert!(
            texts(&out).iter().any(|x| x == "[f1 is shown above]"),
            "{:#?}",
            texts(&out)
        );
        for i in 8..60 {
            make(&mut t, i);
            let out = step(&mut s, &t, &mut outs).await;
            assert!(occurrences(&out, "step 041: do the thing") <= 1);
        }
        assert_rebuilt(&s, &outs).await;
        s.close().await.unwrap();
    }
}

/// The agent pins a file whose working copy in view shows its current
/// version: `[f1 is shown above]`, not its text a second time (a pin of the
/// plan the agent works from is what a model does to keep it); the pin
/// keeps the copy in view after the file is no longer worked on, through
/// folds, until `unpin` lets it go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pin_of_what_a_working_copy_shows_points_at_the_copy_and_keeps_it() {
    for fold in [0, 150] {
        for store in stores() {
            let ws = Workspace::new(store);
            let mut o = opts("copypin");
            o.cache.fold = fold;
            let mut s = ws.open(o).await;
            let mut t = Transcript::default();
            let mut outs = Vec::new();
            let v1 = read_plan_then_work(&ws, &mut s, &mut t, &mut outs).await;
            tick_step_040(&ws, &mut s, &mut t, &v1).await;
            step(&mut s, &t, &mut outs).await;
            other_work(&mut s, &mut t, &mut outs, 4..8).await;
            assert_eq!(copies_of(outs.last().unwrap(), "plan.md").len(), 1);

            let op = s.pin("plan.md");
            assert!(op.ok, "{op:?}");
            t.call("p1", "pin", json!({"id": "plan.md"}), &op.message);
            let out = step(&mut s, &t, &mut outs).await;
            assert!(
                texts(&out).iter().any(|x| x == "[f1 is shown above]"),
                "fold {fold}: {:#?}",
                texts(&out)
            );
            // Pinned: the plan once at every call, long after the agent
            // last worked on it (its small copy stays 80 calls).
            for i in 8..110 {
                t.user(&format!("go on with part {i}"));
                make(&mut t, i);
                let out = step(&mut s, &t, &mut outs).await;
                assert_eq!(
                    occurrences(&out, "step 041: do the thing"),
                    1,
                    "fold {fold}, call {}: {:#?}",
                    outs.len() - 1,
                    texts(&out)
                );
            }
            if fold > 0 {
                assert!(s.cache_stats().folds >= 2, "{:?}", s.cache_stats());
            }
            let op = s.unpin("plan.md");
            assert!(op.ok, "{op:?}");
            t.call("u1", "unpin", json!({"id": "plan.md"}), &op.message);
            step(&mut s, &t, &mut outs).await;
            other_work(&mut s, &mut t, &mut outs, 70..80).await;
            assert_eq!(
                occurrences(outs.last().unwrap(), "step 041: do the thing"),
                0,
                "fold {fold}: unpinned, it goes: {:#?}",
                texts(outs.last().unwrap())
            );
            assert_rebuilt(&s, &outs).await;
            s.close().await.unwrap();
        }
    }
}

/// A pin pointing at the working copy, then `deactivate`: the copy goes
/// with it, and a later `activate` shows the file again rather than point
/// at a copy no longer in view.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deactivated_pin_on_a_copy_hides_it_and_activate_brings_it_back() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.open(opts("copypindeact")).await;
        let mut t = Transcript::default();
        let mut outs = Vec::new();
        let v1 = read_plan_then_work(&ws, &mut s, &mut t, &mut outs).await;
        tick_step_040(&ws, &mut s, &mut t, &v1).await;
        step(&mut s, &t, &mut outs).await;
        other_work(&mut s, &mut t, &mut outs, 4..8).await;
        let op = s.pin("plan.md");
        t.call("p1", "pin", json!({"id": "plan.md"}), &op.message);
        step(&mut s, &t, &mut outs).await;
        // Long past the plan's working window, then hidden on request.
        other_work(&mut s, &mut t, &mut outs, 8..100).await;
        assert_eq!(
            occurrences(outs.last().unwrap(), "step 041: do the thing"),
            1
        );
        let op = s.deactivate("plan.md");
        assert!(op.ok, "{op:?}");
        t.call("d1", "deactivate", json!({"id": "plan.md"}), &op.message);
        step(&mut s, &t, &mut outs).await;
        other_work(&mut s, &mut t, &mut outs, 60..64).await;
        assert_eq!(
            occurrences(outs.last().unwrap(), "step 041: do the thing"),
            0,
            "deactivated: {:#?}",
            texts(outs.last().unwrap())
        );
        let op = s.activate("plan.md");
        assert!(op.ok, "{op:?}");
        t.call("a2", "activate", json!({"id": "plan.md"}), &op.message);
        let out = step(&mut s, &t, &mut outs).await;
        assert_eq!(
            occurrences(&out, "step 041: do the thing"),
            1,
            "activated again: {:#?}",
            texts(&out)
        );
        assert_rebuilt(&s, &outs).await;
        s.close().await.unwrap();
    }
}

/// A file the agent pinned, whose newest whole read (which the pin keeps)
/// shows it as it is now, gets no working copy of that same text when its
/// view grows past the budgets (random seed 44: the text twice for nine
/// calls).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pinned_read_of_the_current_text_gets_no_copy_beside_it() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.open(opts("pinnedread")).await;
        let mut t = Transcript::default();
        let mut outs = Vec::new();
        let v1 = read_plan(&ws, &mut s, &mut t, &mut outs).await;
        let op = s.pin("plan.md");
        t.call("p1", "pin", json!({"id": "plan.md"}), &op.message);
        step(&mut s, &t, &mut outs).await;
        let v2 = tick_step(&ws, &mut s, &mut t, &v1, 3, "e1").await;
        step(&mut s, &t, &mut outs).await;
        s.read("plan.md").await.unwrap();
        t.call("r1", "read", json!({"path": "plan.md"}), &v2);
        step(&mut s, &t, &mut outs).await;
        failed_edit(
            &mut t,
            "e2",
            "no such line",
            "x",
            "Could not find the exact text in plan.md.",
        );
        step(&mut s, &t, &mut outs).await;
        // Ranged reads: the file's view grows well past the file.
        let lines: Vec<&str> = v2.lines().collect();
        for (k, off) in [1usize, 21, 1, 21, 1].iter().enumerate() {
            s.read("plan.md").await.unwrap();
            t.call(
                &format!("g{k}"),
                "read",
                json!({"path": "plan.md", "offset": off, "limit": 20}),
                &lines[off - 1..off + 19].join("\n"),
            );
            step(&mut s, &t, &mut outs).await;
        }
        for i in 0..12 {
            make(&mut t, i);
            let out = step(&mut s, &t, &mut outs).await;
            assert_eq!(
                occurrences(&out, "step 059: do the thing"),
                1,
                "call {}: {:#?}",
                outs.len() - 1,
                texts(&out)
            );
        }
        assert_rebuilt(&s, &outs).await;
        s.close().await.unwrap();
    }
}

/// The plan read, collapsed, ticked off from memory (step 040) and shown
/// by its working copy four calls on: its text now.
async fn plan_with_copy(
    ws: &Workspace,
    s: &mut Session,
    t: &mut Transcript,
    outs: &mut Vec<Vec<Value>>,
) -> String {
    let v1 = read_plan_then_work(ws, s, t, outs).await;
    let v2 = tick_step_040(ws, s, t, &v1).await;
    step(s, t, outs).await;
    other_work(s, t, outs, 4..8).await;
    assert_eq!(copies_of(outs.last().unwrap(), "plan.md").len(), 1);
    v2
}

/// A read covering the whole file arrives at a call whose epoch or fold
/// would make the file a new working copy: the read shows that text, so no
/// copy of it is made beside it (random seed 30: a fold's area copy beside
/// such a read, the text twice for nine calls).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_of_the_whole_file_arriving_with_an_epoch_gets_no_copy_beside_it() {
    for (store, fold) in stores()
        .into_iter()
        .flat_map(|s| [(s.clone(), 0), (s, 150)])
    {
        let ws = Workspace::new(store);
        let mut o = opts("rangedwhole");
        o.cache.fold = fold;
        let mut s = ws.open(o).await;
        let mut t = Transcript::default();
        let mut outs = Vec::new();
        let v2 = plan_with_copy(&ws, &mut s, &mut t, &mut outs).await;
        // Edits from memory again, then a slice that covers the whole file,
        // with enough other output that this call runs an epoch.
        let v3 = tick_step(&ws, &mut s, &mut t, &v2, 50, "e2").await;
        let v4 = tick_step(&ws, &mut s, &mut t, &v3, 51, "e3").await;
        s.read("plan.md").await.unwrap();
        t.call(
            "g1",
            "read",
            json!({"path": "plan.md", "offset": 1, "limit": 100}),
            &v4,
        );
        make(&mut t, 8);
        make(&mut t, 9);
        for i in 10..16 {
            let out = step(&mut s, &t, &mut outs).await;
            assert!(
                texts(&out).iter().filter(|x| x.contains(&v4)).count() <= 1,
                "call {}: {:#?}",
                outs.len() - 1,
                texts(&out)
            );
            make(&mut t, i);
        }
        assert_rebuilt(&s, &outs).await;
        s.close().await.unwrap();
    }
}

/// A read of the plan the agent works on from memory is its view when a
/// fold folds its place: the fold's `PINNED` block shows it, and goes on
/// showing it until the next fold whatever epochs do. A later slice of the
/// plan makes the view too large to keep in place, but the text the block
/// shows is the current one: no working copy of it beside the block (random
/// seed 26: the file's text twice for a call), and the next fold keeps the
/// block's entry as the file's view.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_block_entry_showing_the_current_text_gets_no_copy_beside_it() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut o = opts("blockview");
        // Folds, but not at every epoch: epochs run between them.
        o.cache.fold = 300;
        let mut s = ws.open(o).await;
        let mut t = Transcript::default();
        let mut outs = Vec::new();
        let v1 = read_plan_then_work(&ws, &mut s, &mut t, &mut outs).await;
        // From memory, then a whole read of the plan as it is now (its
        // view, kept in place: no copy).
        let v2 = tick_step_040(&ws, &mut s, &mut t, &v1).await;
        s.read("plan.md").await.unwrap();
        t.call("r1", "read", json!({"path": "plan.md"}), &v2);
        step(&mut s, &t, &mut outs).await;
        // A new turn and other work: a fold puts the read in its block.
        t.user("now the next part");
        let mut folded = false;
        for i in 10..16 {
            make(&mut t, i);
            let out = step(&mut s, &t, &mut outs).await;
            folded = texts(&out).iter().any(|x| {
                x.starts_with("PINNED\n") && x.contains("path=plan.md") && x.contains("step 059")
            });
            if folded {
                break;
            }
        }
        assert!(folded, "{:#?}", texts(outs.last().unwrap()));
        assert!(copies_of(outs.last().unwrap(), "plan.md").is_empty());
        // A slice of the plan, then more work: epochs, and a fold again.
        let lines: Vec<&str> = v2.lines().collect();
        s.read("plan.md").await.unwrap();
        t.call(
            "g1",
            "read",
            json!({"path": "plan.md", "offset": 1, "limit": 20}),
            &lines[..20].join("\n"),
        );
        step(&mut s, &t, &mut outs).await;
        let start = outs.len();
        t.user("and the part after it");
        for i in 16..24 {
            make(&mut t, i);
            step(&mut s, &t, &mut outs).await;
        }
        for (k, out) in outs.iter().enumerate().skip(start) {
            assert_eq!(
                occurrences(out, "step 059: do the thing"),
                1,
                "call {k}: {:#?}",
                texts(out)
            );
        }
        assert!(s.cache_stats().folds >= 2, "{:?}", s.cache_stats());
        assert_rebuilt(&s, &outs).await;
        s.close().await.unwrap();
    }
}

/// The agent edits the plan from memory and activates it in the same turn;
/// the epoch of that call finds the activation (fresh: the model has not
/// seen it) one header over the views' budget but the plan itself within the
/// copies' budget. The activation is the file's view while the epoch keeps
/// it: no working copy of the same text beside it (random seed 611: the text
/// twice for nine calls). The copy comes when the activation collapses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_activation_of_the_current_text_gets_no_copy_beside_it() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut o = opts("freshactivate");
        // The copies' budget fits the plan, not the activation's header too.
        o.cache.working_copy_units = plan(60).len().div_ceil(4) as u32;
        let mut s = ws.open(o).await;
        let mut t = Transcript::default();
        let mut outs = Vec::new();
        let v1 = read_plan_then_work(&ws, &mut s, &mut t, &mut outs).await;
        assert!(copies_of(outs.last().unwrap(), "plan.md").is_empty());
        tick_step_040(&ws, &mut s, &mut t, &v1).await;
        let op = s.activate("plan.md");
        assert!(op.ok, "{op:?}");
        t.call("a1", "activate", json!({"id": "plan.md"}), &op.message);
        let epochs = s.cache_stats().epochs;
        let out = step(&mut s, &t, &mut outs).await;
        assert!(s.cache_stats().epochs > epochs, "an epoch ran at this call");
        assert_eq!(
            occurrences(&out, "step 059: do the thing"),
            1,
            "the plan once: {:#?}",
            texts(&out)
        );
        for i in 4..20 {
            make(&mut t, i);
            let out = step(&mut s, &t, &mut outs).await;
            assert_eq!(
                occurrences(&out, "step 059: do the thing"),
                1,
                "call {}: {:#?}",
                outs.len() - 1,
                texts(&out)
            );
        }
        // The activation has collapsed; the plan is shown by its copy.
        assert_eq!(copies_of(outs.last().unwrap(), "plan.md").len(), 1);
        assert_rebuilt(&s, &outs).await;
        s.close().await.unwrap();
    }
}

/// Every string the model reads in `out`, tool-call arguments included.
fn strings_in_view(out: &[Value]) -> Vec<String> {
    fn walk(v: &Value, into: &mut Vec<String>) {
        match v {
            Value::String(s) => into.push(s.clone()),
            Value::Array(a) => a.iter().for_each(|x| walk(x, into)),
            Value::Object(o) => o.values().for_each(|x| walk(x, into)),
            _ => {}
        }
    }
    let mut v = Vec::new();
    out.iter().for_each(|m| walk(&m["content"], &mut v));
    v
}

/// An edit that replaces the whole of a small file (its `newText` is the
/// file as it is now) arriving at a call whose epoch or fold would make the
/// file a new working copy: the edit's body shows that text, so no copy of
/// it is made beside it (random seed 3362: a fold's area copy beside such an
/// edit, the file's text twice).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_replacing_the_whole_file_gets_no_copy_beside_it() {
    for (store, fold) in stores()
        .into_iter()
        .flat_map(|s| [(s.clone(), 0), (s, 150)])
    {
        let ws = Workspace::new(store);
        let mut o = opts("wholeedit");
        o.cache.fold = fold;
        let mut s = ws.open(o).await;
        let mut t = Transcript::default();
        let mut outs = Vec::new();
        let v2 = plan_with_copy(&ws, &mut s, &mut t, &mut outs).await;
        // The agent rewrites the whole plan with one edit, with enough other
        // output that this call runs an epoch.
        let v3 = v2.replace("- [ ]", "- [x]");
        ws.write("plan.md", &v3);
        s.observe_edit("plan.md").await.unwrap();
        t.call(
            "e2",
            "edit",
            json!({"path": "plan.md", "oldText": v2, "newText": v3}),
            "Successfully replaced text in plan.md.",
        );
        make(&mut t, 8);
        make(&mut t, 9);
        let epochs = s.cache_stats().epochs;
        // Once: the file is being worked on.
        for i in 10..22 {
            let out = step(&mut s, &t, &mut outs).await;
            let shown: usize = strings_in_view(&out)
                .iter()
                .map(|x| x.matches(&v3).count())
                .sum();
            assert!(
                shown == 1,
                "fold {fold}, call {}: {:#?}",
                outs.len() - 1,
                strings_in_view(&out)
            );
            make(&mut t, i);
        }
        assert!(s.cache_stats().epochs > epochs, "epochs ran");
        assert_rebuilt(&s, &outs).await;
        s.close().await.unwrap();
    }
}

/// A pinned file whose working copy (made at a slice of the small file
/// being edited) the agent reads whole, then in a range covering the whole
/// file, both pointing at the copy: when a fold folds the copy away with
/// the whole read in its `PINNED` block and the slice after its cut, the
/// text is shown once — the block's read shows it, the slice collapses to a
/// ref (random seed 6202: both showed it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn re_reads_of_a_copy_the_fold_folds_away_show_its_text_once() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut o = opts("copyrereadsfold");
        o.cache.fold = 400;
        let mut s = ws.open(o).await;
        let mut t = Transcript::default();
        let (mut outs, v2) = sliced_with_copy(&ws, &mut s, &mut t).await;
        let op = s.pin("src.ts");
        t.call("p1", "pin", json!({"id": "src.ts"}), &op.message);
        step(&mut s, &t, &mut outs).await;
        t.assistant("pinned", &[]).user("read it again");
        s.read("src.ts").await.unwrap();
        t.call("r2", "read", json!({"path": "src.ts"}), &v2);
        let whole = points_at_copy(&step(&mut s, &t, &mut outs).await, "f1");
        t.assistant("read", &[]).user("and once more");
        s.observe_partial_read("src.ts").await.unwrap();
        t.call(
            "r3",
            "read",
            json!({"path": "src.ts", "offset": 1, "limit": 100}),
            &v2,
        );
        let sliced = points_at_copy(&step(&mut s, &t, &mut outs).await, "f1");
        let folds = s.cache_stats().folds;
        for i in 0..40 {
            make(&mut t, 10 + i);
            let out = step(&mut s, &t, &mut outs).await;
            assert!(
                occurrences(&out, "step 041: do the thing") <= 1,
                "call {}: {:#?}",
                outs.len() - 1,
                texts(&out)
            );
            if s.cache_stats().folds > folds {
                assert!(
                    block_has(&out, "step 041: do the thing"),
                    "{:#?}",
                    texts(&out)
                );
                assert_eq!(result_of(&out, "t11"), "[t11 · 60 lines]");
                break;
            }
        }
        assert!(whole && sliced, "both reads pointed at the copy");
        assert!(s.cache_stats().folds > folds, "{:?}", s.cache_stats());
        assert_rebuilt(&s, &outs).await;
        s.close().await.unwrap();
    }
}

/// Two whole re-reads of a working copy's text, both pointing at it, then
/// the agent's edit of the file: when a fold folds the copy and the first
/// re-read away (no pin: not in its `PINNED` block) and makes a copy of
/// the edited file, the re-read after the cut shows its text — the folded
/// one shows nothing (random seed 65, late changes: a fresh `cat F`
/// collapsed to a ref as a repeat of a read the fold had folded away, and
/// the model never saw it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_re_read_of_a_copy_after_the_cut_is_no_repeat_of_one_folded_away() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut o = opts("copyrereadfolded");
        o.cache.fold = 400;
        let mut s = ws.open(o).await;
        let mut t = Transcript::default();
        let (mut outs, v2) = sliced_with_copy(&ws, &mut s, &mut t).await;
        t.assistant("sliced", &[]).user("read it again");
        s.read("src.ts").await.unwrap();
        t.call("r2", "read", json!({"path": "src.ts"}), &v2);
        let first = points_at_copy(&step(&mut s, &t, &mut outs).await, "f1");
        t.assistant("read", &[]).user("and once more");
        s.read("src.ts").await.unwrap();
        t.call("r3", "read", json!({"path": "src.ts"}), &v2);
        let out = step(&mut s, &t, &mut outs).await;
        let second = points_at_copy(&out, "f1");
        let r3 = last_result(&out, 0);
        assert!(first && second, "both reads pointed at the copy");
        // The agent's edit: the copy the fold makes is not the reads' text.
        let v3 = v2.replace("- [ ] step 050", "- [x] step 050");
        ws.write("src.ts", &v3);
        s.observe_edit("src.ts").await.unwrap();
        t.call(
            "e9",
            "edit",
            json!({"path": "src.ts", "oldText": "- [ ] step 050: do the thing number 050 carefully",
                   "newText": "- [x] step 050: do the thing number 050 carefully"}),
            "Successfully replaced text in src.ts.",
        );
        step(&mut s, &t, &mut outs).await;
        let folds = s.cache_stats().folds;
        for i in 0..40 {
            // (Its text, or a pointer to a copy of it: not a ref.)
            let before = result_of(outs.last().unwrap(), &r3);
            let live = before == v2 || before.ends_with(": identical to FILE f1 above]");
            make(&mut t, 10 + i);
            let out = step(&mut s, &t, &mut outs).await;
            if s.cache_stats().folds > folds {
                assert!(live, "{r3} was in view before the fold");
                assert_eq!(result_of(&out, &r3), v2, "{:#?}", texts(&out));
                break;
            }
        }
        assert!(s.cache_stats().folds > folds, "{:?}", s.cache_stats());
        assert_rebuilt(&s, &outs).await;
        s.close().await.unwrap();
    }
}

fn block_has(out: &[Value], needle: &str) -> bool {
    texts(out)
        .iter()
        .any(|x| x.starts_with("PINNED") && x.contains(needle))
}

/// The text of call `alias`'s result.
fn result_of(out: &[Value], alias: &str) -> String {
    out.iter()
        .find(|m| m["role"] == "toolResult" && m["toolCallId"] == alias)
        .map(|m| texts(std::slice::from_ref(m)).join("\n"))
        .unwrap_or_default()
}

/// An activation of a file whose working copy shows it (`[f1 is shown
/// above]`), then in one message a re-read of the same text and the
/// agent's write of the file: when the fold at that call folds the copy
/// away (keeping the activation past its cut: a larger `low`), the
/// activation's note has no text to show and collapses, and the re-read
/// shows its text — not collapsed as a repeat of the note (random seed
/// 333, late changes with parallel calls: a fresh `cat F` collapsed in the
/// call it arrived in, and the model never saw it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_re_read_after_an_activation_note_shows_its_text_when_the_copy_is_folded() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut o = opts("copynotefolded");
        o.cache.fold = 400;
        o.cache.low = 2_000;
        let mut s = ws.open(o).await;
        let mut t = Transcript::default();
        let (mut outs, v2) = sliced_with_copy(&ws, &mut s, &mut t).await;
        t.assistant("sliced", &[]).user("show it");
        let op = s.activate("src.ts");
        assert!(op.ok, "{op:?}");
        t.call("a1", "activate", json!({"id": "src.ts"}), &op.message);
        let out = step(&mut s, &t, &mut outs).await;
        assert_eq!(
            result_of(&out, &last_result(&out, 0)),
            "[f1 is shown above]",
            "{:#?}",
            texts(&out)
        );
        // One message: a re-read, a write of the whole file, and a command
        // whose output makes this call fold.
        s.read("src.ts").await.unwrap();
        let v3 = plan(60).replace("- [ ] step 020", "- [x] step 020");
        ws.write("src.ts", &v3);
        s.observe_write("src.ts").await.unwrap();
        t.assistant(
            "",
            &[
                ("r2", "read", json!({"path": "src.ts"})),
                ("w1", "write", json!({"path": "src.ts", "content": v3})),
                ("b1", "bash", json!({"command": "make all"})),
            ],
        )
        .result("r2", "read", &v2, false)
        .result(
            "w1",
            "write",
            "Successfully wrote 2999 bytes to src.ts",
            false,
        )
        .result("b1", "bash", &noise("B1"), false);
        let folds = s.cache_stats().folds;
        let out = step(&mut s, &t, &mut outs).await;
        assert!(s.cache_stats().folds > folds, "{:?}", s.cache_stats());
        assert_eq!(
            result_of(&out, &last_result(&out, 2)),
            v2,
            "{:#?}",
            texts(&out)
        );
        assert_rebuilt(&s, &outs).await;
        s.close().await.unwrap();
    }
}

/// [`edit_then_slice`] of five lines (the file's working copy in view),
/// its contexts so far and the file's text (`v2`).
async fn sliced_with_copy(
    ws: &Workspace,
    s: &mut Session,
    t: &mut Transcript,
) -> (Vec<Vec<Value>>, String) {
    let (mut outs, out) = edit_then_slice(ws, s, t, true, 5).await;
    outs.push(out);
    (outs, plan(60).replace("- [ ] step 010", "- [x] step 010"))
}

/// The alias of the `back`-th tool result from the end of `out` (0: the last).
fn last_result(out: &[Value], back: usize) -> String {
    out.iter()
        .rev()
        .filter(|m| m["role"] == "toolResult")
        .nth(back)
        .and_then(|m| m["toolCallId"].as_str())
        .unwrap_or_default()
        .to_string()
}
