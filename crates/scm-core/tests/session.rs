//! Session engine (SSOT §3, implementation-plan §5, memory-system-v0 §6,
//! §18–§20): sets, agent operations, auto-collapse, observation. Real files,
//! the real embedded store and, when configured, a real XTDB node.

mod session_support;

use scm_core::session::{CollapsePolicy, Layout, SessionOptions};
use serde_json::json;
use session_support::*;

// ---------------------------------------------------------------- sets

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_content_objects_enter_the_sets_and_infrastructure_is_refused() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.session("infra").await;
        ws.write("a.txt", "alpha");
        assert!(s.read("a.txt").await.unwrap().ok);
        let sid = s.session_id().to_string();
        for id in [
            format!("chat:{sid}"),
            format!("session:{sid}"),
            format!("system_prompt:{sid}"),
        ] {
            for r in [s.activate(&id), s.deactivate(&id), s.pin(&id), s.unpin(&id)] {
                assert!(!r.ok, "{id}: {r:?}");
                assert_eq!(r.code.as_deref(), Some("NOT_CONTENT_OBJECT"));
                assert!(
                    r.message.contains("only file and toolcall objects"),
                    "{}",
                    r.message
                );
            }
        }
        let r = s.activate("no-such-object");
        assert!(!r.ok);
        assert_eq!(r.code.as_deref(), Some("UNKNOWN_OBJECT"));
        assert!(r.message.contains("no-such-object"));
        let snap = s.snapshot();
        for id in snap
            .session_index
            .iter()
            .chain(&snap.active_set)
            .chain(&snap.pinned_set)
        {
            assert!(!id.contains(':') || id.starts_with("toolcall:"), "{id}");
        }
        assert!(snap
            .metadata_pool
            .iter()
            .all(|e| e.object_type == "file" || e.object_type == "toolcall"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_shows_the_file_once_and_its_tool_result_as_a_toolcall_ref() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.session("read").await;
        let text = "fn main() { println!(\"unique-read-body\"); }\n";
        ws.write("src/main.rs", text);
        let r = s.read("src/main.rs").await.unwrap();
        assert!(r.ok, "{r:?}");
        let file_id = ws.file_id("src/main.rs");
        assert_eq!(r.id.as_deref(), Some(file_id.as_str()));

        let mut t = Transcript::default();
        t.user("show main")
            .call("c1", "read", json!({"path": "src/main.rs"}), text);
        let out = s.transform_context(&t.messages).await.unwrap();

        assert_eq!(occurrences(&out, "unique-read-body"), 1);
        assert_eq!(active_ids(&out), vec![file_id.clone()]);
        let tc = toolcall_id(&s, "c1");
        let result = out.iter().find(|m| m["role"] == "toolResult").unwrap();
        assert_eq!(result["toolCallId"], "c1");
        assert_eq!(
            result["content"][0]["text"],
            format!("toolcall_ref id={tc} tool=read status=ok")
        );
        let snap = s.snapshot();
        assert!(
            !snap.active_set.contains(&tc),
            "the read's toolcall is not shown"
        );
        // Indexed, not listed: the file's pool line is the one shown.
        assert!(snap.session_index.contains(&tc));
        assert!(!snap.metadata_pool.iter().any(|e| e.id == tc));
        let doc = s.get_object(&tc).await.unwrap().unwrap();
        assert_eq!(doc["file_refs"], json!([file_id]));
        assert_eq!(doc["args_display"], "src/main.rs");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deactivate_keeps_the_object_in_the_pool_and_activate_brings_it_back() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.session("deact").await;
        ws.write("notes.md", "# notes body");
        s.read("notes.md").await.unwrap();
        let id = ws.file_id("notes.md");
        let mut t = Transcript::default();
        t.user("hi");

        let r = s.deactivate("notes.md");
        assert!(r.ok, "{r:?}");
        let out = s.transform_context(&t.messages).await.unwrap();
        assert!(active_ids(&out).is_empty());
        assert_eq!(occurrences(&out, "# notes body"), 0);
        assert!(pool_text(&out).contains(&format!("- id={id} file path=notes.md type=md chars=12")));
        assert!(s.snapshot().metadata_pool.iter().any(|e| e.id == id));

        let r = s.activate(&id);
        assert!(r.ok, "{r:?}");
        assert!(
            r.message.starts_with("activated"),
            "re-activating a deactivated object says it was activated: {r:?}"
        );
        assert!(s.activate(&id).message.contains("already active"));
        let out = s.transform_context(&t.messages).await.unwrap();
        assert_eq!(active_ids(&out), vec![id.clone()]);
        assert_eq!(occurrences(&out, "# notes body"), 1);
        assert!(s.deactivate(&id).ok);
        assert!(s.deactivate(&id).message.contains("was not active"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_resolve_from_harness_call_ids_hash_prefixes_and_paths() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.session("ids").await;
        ws.write("lib.rs", "pub fn x() {}");
        s.read("lib.rs").await.unwrap();
        let file_id = ws.file_id("lib.rs");
        let mut t = Transcript::default();
        t.user("go")
            .call("call_abc", "bash", json!({"command": "ls"}), "lib.rs");
        s.transform_context(&t.messages).await.unwrap();
        let tc = toolcall_id(&s, "call_abc");

        assert_eq!(s.deactivate("call_abc").id.as_deref(), Some(tc.as_str()));
        assert_eq!(
            s.deactivate(&file_id[..8]).id.as_deref(),
            Some(file_id.as_str())
        );
        assert_eq!(s.activate("lib.rs").id.as_deref(), Some(file_id.as_str()));
        assert_eq!(
            s.activate(&format!("id={tc}")).id.as_deref(),
            Some(tc.as_str())
        );
        let r = s.activate(&file_id[..4]);
        assert!(!r.ok, "prefixes shorter than 6 are not ids: {r:?}");
        ws.write("other.rs", "x");
        let r = s.activate("other.rs");
        assert!(!r.ok && r.message.contains("read it first"), "{r:?}");
    }
}

// ------------------------------------------------------------ collapse

fn policy(per_turn: usize, turns_back: usize) -> CollapsePolicy {
    CollapsePolicy {
        per_turn,
        turns_back,
        ..CollapsePolicy::default()
    }
}

async fn open_with(ws: &Workspace, prefix: &str, p: CollapsePolicy) -> scm_core::session::Session {
    let mut o = SessionOptions::new(unique_id(prefix));
    o.policy = p;
    ws.open(o).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn collapse_keeps_the_most_recent_per_turn_within_the_last_turns() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = open_with(&ws, "window", policy(2, 2)).await;
        let mut t = Transcript::default();
        // Turn 0: three results → only the two most recent stay active.
        t.user("turn 0");
        for c in ["a", "b", "c"] {
            t.call(
                c,
                "bash",
                json!({"command": format!("echo {c}")}),
                &format!("out-{c}"),
            );
        }
        s.transform_context(&t.messages).await.unwrap();
        let active = s.snapshot().active_set;
        assert_eq!(active, vec![toolcall_id(&s, "b"), toolcall_id(&s, "c")]);

        // Turn 1: one result; turn 0 is still inside the 2-turn window.
        t.user("turn 1")
            .call("d", "bash", json!({"command": "echo d"}), "out-d");
        s.transform_context(&t.messages).await.unwrap();
        let active = s.snapshot().active_set;
        assert_eq!(active.len(), 3, "{active:?}");

        // Turn 2: turn 0 falls out of the window; its objects stay in the pool.
        t.user("turn 2");
        s.transform_context(&t.messages).await.unwrap();
        let snap = s.snapshot();
        assert_eq!(snap.active_set, vec![toolcall_id(&s, "d")]);
        assert!(snap
            .metadata_pool
            .iter()
            .any(|e| e.id == toolcall_id(&s, "a")));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_is_a_user_message_and_every_model_call_until_the_next() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = open_with(&ws, "turns", policy(1, 1)).await;
        let mut t = Transcript::default();
        t.user("one prompt");
        // Many model calls within one turn: one window slot for all of them.
        for c in ["a", "b", "c"] {
            t.call(c, "bash", json!({"command": c}), c);
            s.transform_context(&t.messages).await.unwrap();
        }
        assert_eq!(s.turn_count(), 1);
        assert_eq!(s.snapshot().active_set, vec![toolcall_id(&s, "c")]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pinned_objects_survive_auto_collapse() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = open_with(&ws, "pin", policy(1, 1)).await;
        let mut t = Transcript::default();
        t.user("u")
            .call("a", "bash", json!({"command": "a"}), "out-a");
        s.transform_context(&t.messages).await.unwrap();
        let a = toolcall_id(&s, "a");
        assert!(s.pin(&a).ok);
        t.call("b", "bash", json!({"command": "b"}), "out-b");
        t.user("next turn")
            .call("c", "bash", json!({"command": "c"}), "out-c");
        let out = s.transform_context(&t.messages).await.unwrap();
        assert!(active_ids(&out).contains(&a));
        assert_eq!(s.snapshot().pinned_set, vec![a.clone()]);
        assert!(s.unpin(&a).ok);
        t.user("later");
        s.transform_context(&t.messages).await.unwrap();
        assert!(!s.snapshot().active_set.contains(&a));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_tools_do_not_count_and_are_never_auto_activated() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = open_with(&ws, "ctxtools", policy(2, 1)).await;
        let mut t = Transcript::default();
        t.user("u");
        t.call("a", "bash", json!({"command": "a"}), "out-a");
        t.call("b", "bash", json!({"command": "b"}), "out-b");
        for (i, tool) in ["activate", "deactivate", "pin", "unpin"]
            .iter()
            .enumerate()
        {
            t.call(&format!("x{i}"), tool, json!({"id": "whatever"}), "done");
        }
        let out = s.transform_context(&t.messages).await.unwrap();
        let snap = s.snapshot();
        assert_eq!(
            snap.active_set,
            vec![toolcall_id(&s, "a"), toolcall_id(&s, "b")]
        );
        let x0 = toolcall_id(&s, "x0");
        assert!(snap.session_index.contains(&x0));
        assert!(!snap.metadata_pool.iter().any(|e| e.id == x0));
        // Their results still keep a matching toolcall_ref in the chat.
        assert!(out.iter().any(|m| m["toolCallId"] == "x0"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explicit_activation_counts_as_fresh_use() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = open_with(&ws, "fresh", policy(2, 1)).await;
        let mut t = Transcript::default();
        t.user("u");
        for c in ["a", "b", "c"] {
            t.call(c, "bash", json!({"command": c}), c);
        }
        s.transform_context(&t.messages).await.unwrap();
        let a = toolcall_id(&s, "a");
        assert!(!s.snapshot().active_set.contains(&a));
        assert!(s.activate("a").ok);
        t.call("act", "activate", json!({"id": "a"}), "activated");
        s.transform_context(&t.messages).await.unwrap();
        let active = s.snapshot().active_set;
        assert!(active.contains(&a), "{active:?}");
        assert!(!active.contains(&toolcall_id(&s, "b")), "{active:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_collapse_only_when_the_policy_says_so() {
    for store in stores() {
        let ws = Workspace::new(store);
        for collapse_files in [false, true] {
            let mut p = policy(1, 1);
            p.collapse_files = collapse_files;
            let mut s = open_with(&ws, "files", p).await;
            ws.write("f1.txt", "one");
            ws.write("f2.txt", "two");
            let mut t = Transcript::default();
            t.user("u");
            s.read("f1.txt").await.unwrap();
            s.read("f2.txt").await.unwrap();
            s.transform_context(&t.messages).await.unwrap();
            let active = s.snapshot().active_set;
            assert_eq!(
                active.contains(&ws.file_id("f1.txt")),
                !collapse_files,
                "{active:?}"
            );
            assert!(active.contains(&ws.file_id("f2.txt")));
        }
    }
}

// ------------------------------------------------------- stubs, discovery

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn activating_a_stub_reads_and_upgrades_it() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.session("stub").await;
        ws.write("dir/found.txt", "found-body");
        let r = s
            .observe_discovery("ls", "found.txt\n", &ws.root.join("dir").to_string_lossy())
            .await
            .unwrap();
        assert!(r.ok, "{r:?}");
        let id = ws.file_id("dir/found.txt");
        let mut t = Transcript::default();
        t.user("u");
        let out = s.transform_context(&t.messages).await.unwrap();
        assert!(pool_text(&out).contains(&format!(
            "- id={id} file path=dir/found.txt type=txt chars=0 [unread]"
        )));
        assert!(active_ids(&out).is_empty());

        let r = s.activate(&id);
        assert!(r.ok, "{r:?}");
        let out = s.transform_context(&t.messages).await.unwrap();
        assert!(
            pool_text(&out).contains(&format!(
                "- id={id} file path=dir/found.txt type=txt chars=10\n"
            )) || pool_text(&out).ends_with(&format!(
                "- id={id} file path=dir/found.txt type=txt chars=10"
            ))
        );
        assert_eq!(occurrences(&out, "found-body"), 1);
        let stored = s.get_object(&id).await.unwrap().unwrap();
        assert_eq!(stored["state"], "present");
        assert_eq!(stored["content"], "found-body");
        assert_eq!(
            s.history(&id).await.unwrap().len(),
            2,
            "stub + upgraded version"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn activating_a_vanished_stub_fails_and_it_stays_a_stub() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.session("vanish").await;
        ws.write("gone.txt", "bye");
        s.observe_discovery("find", "gone.txt", &ws.root.to_string_lossy())
            .await
            .unwrap();
        ws.remove("gone.txt");
        let id = ws.file_id("gone.txt");
        let r = s.activate(&id);
        assert!(!r.ok);
        assert_eq!(r.code.as_deref(), Some("FILE_NOT_FOUND"));
        let snap = s.snapshot();
        assert!(!snap.active_set.contains(&id));
        let e = snap.metadata_pool.iter().find(|e| e.id == id).unwrap();
        assert_eq!(e.state.as_deref(), Some("stub"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_stubs_paths_from_ls_find_and_grep_and_ignores_junk() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.session("disc").await;
        ws.write("src/a.rs", "a");
        ws.write("src/b.rs", "b");
        ws.write("docs/c.md", "c");
        ws.write("d.txt", "d");
        let src = ws.root.join("src").to_string_lossy().into_owned();
        let root = ws.root.to_string_lossy().into_owned();

        // ls lines are relative to the listed directory; directories and notes are not files.
        let r = s
            .observe_discovery("ls", "a.rs\nb.rs\nnested/\n(2 entries)\n", &src)
            .await
            .unwrap();
        assert!(r.ok && r.message.starts_with("discovered 2 files"), "{r:?}");
        // find lines are paths relative to the search root.
        s.observe_discovery("find", "docs/c.md\nno/such/file.rs\n\n", &root)
            .await
            .unwrap();
        // grep prefixes `path:line:`; junk lines ignored.
        s.observe_discovery("grep", "d.txt:1:d\n--\nBinary file x matches\n", &root)
            .await
            .unwrap();

        let snap = s.snapshot();
        let ids = ["src/a.rs", "src/b.rs", "docs/c.md", "d.txt"].map(|p| ws.file_id(p));
        assert_eq!(snap.session_index, ids.to_vec());
        assert!(snap.active_set.is_empty(), "discovery never activates");
        assert!(snap
            .metadata_pool
            .iter()
            .all(|e| e.state.as_deref() == Some("stub")));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_never_overwrites_an_indexed_file() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.session("nooverwrite").await;
        ws.write("k.txt", "kept");
        s.read("k.txt").await.unwrap();
        s.observe_discovery("ls", "k.txt", &ws.root.to_string_lossy())
            .await
            .unwrap();
        let id = ws.file_id("k.txt");
        assert_eq!(s.history(&id).await.unwrap().len(), 1);
        assert!(s.snapshot().active_set.contains(&id));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bash_observation_stubs_existing_files_under_the_workspace() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.session("bash").await;
        ws.write("src/x.py", "print(1)");
        ws.write("out.log", "log");
        let r = s
            .observe_bash(
                "python3 src/x.py > out.log && cat /etc/hostname",
                "src/x.py:1: ok\nmissing.txt",
            )
            .await
            .unwrap();
        assert!(r.ok, "{r:?}");
        let idx = s.snapshot().session_index;
        assert_eq!(idx, vec![ws.file_id("src/x.py"), ws.file_id("out.log")]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_and_edit_observation_index_a_new_active_version() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.session("write").await;
        ws.write("w.txt", "v1");
        let r = s.observe_write("w.txt").await.unwrap();
        assert!(r.ok && r.message.starts_with("wrote w.txt"), "{r:?}");
        ws.write("w.txt", "v2-edited");
        let r = s.observe_edit("w.txt").await.unwrap();
        assert!(r.ok && r.message.contains("updated"), "{r:?}");
        let id = ws.file_id("w.txt");
        assert_eq!(s.history(&id).await.unwrap().len(), 2);
        let mut t = Transcript::default();
        t.user("u").call(
            "e1",
            "edit",
            json!({"path": "w.txt", "oldText": "v1", "newText": "v2-edited"}),
            "Successfully replaced text",
        );
        let out = s.transform_context(&t.messages).await.unwrap();
        assert_eq!(active_ids(&out), vec![id]);
        assert_eq!(
            occurrences(&out, "v2-edited"),
            1,
            "text parts: only the active file"
        );
        assert!(!s.snapshot().active_set.contains(&toolcall_id(&s, "e1")));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreadable_reads_are_coded_and_change_nothing() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.session("unreadable").await;
        std::fs::create_dir_all(ws.root.join("adir")).unwrap();
        let before = s.snapshot();
        let r = s.read("missing.txt").await.unwrap();
        assert_eq!((r.ok, r.code.as_deref()), (false, Some("FILE_NOT_FOUND")));
        let r = s.read("adir").await.unwrap();
        assert_eq!((r.ok, r.code.as_deref()), (false, Some("NOT_A_FILE")));
        assert_eq!(s.snapshot(), before);
    }
}

// ------------------------------------------------------------- toolcalls

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_harness_ids_become_distinct_toolcalls() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.session("repeat").await;
        let mut t = Transcript::default();
        t.user("u")
            .call("call_0", "bash", json!({"command": "echo 1"}), "one");
        t.user("v")
            .call("call_0", "bash", json!({"command": "echo 2"}), "two");
        let out = s.transform_context(&t.messages).await.unwrap();
        let first = toolcall_id(&s, "call_0");
        let second = format!("{first}:2");
        let idx = s.snapshot().session_index;
        assert_eq!(idx, vec![first.clone(), second.clone()]);
        assert_eq!(
            s.get_object(&second).await.unwrap().unwrap()["content"],
            "two"
        );
        let refs: Vec<&str> = out
            .iter()
            .filter(|m| m["role"] == "toolResult")
            .map(|m| m["content"][0]["text"].as_str().unwrap())
            .collect();
        assert_eq!(
            refs,
            vec![
                format!("toolcall_ref id={first} tool=bash status=ok"),
                format!("toolcall_ref id={second} tool=bash status=ok")
            ]
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn toolcall_ids_are_unique_across_sessions_on_one_store() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut a = ws.session("uniq-a").await;
        let mut b = ws.session("uniq-b").await;
        let mut t = Transcript::default();
        t.user("u")
            .call("call_1", "bash", json!({"command": "x"}), "same");
        a.transform_context(&t.messages).await.unwrap();
        b.transform_context(&t.messages).await.unwrap();
        let (ia, ib) = (toolcall_id(&a, "call_1"), toolcall_id(&b, "call_1"));
        assert_ne!(ia, ib);
        assert_eq!(ws.store.history(&ia).await.unwrap().len(), 1);
        assert_eq!(ws.store.history(&ib).await.unwrap().len(), 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn toolcall_objects_carry_text_args_status_and_refs() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.session("tcfields").await;
        let mut t = Transcript::default();
        let long = format!("cargo test {}", "x".repeat(200));
        t.user("u")
            .assistant("", &[("c1", "bash", json!({"command": long}))]);
        t.push(json!({"role": "toolResult", "toolCallId": "c1", "toolName": "bash",
            "content": [{"type": "text", "text": "line1"}, {"type": "image", "data": "..", "mimeType": "image/png"}, {"type": "text", "text": "line2"}],
            "isError": true, "timestamp": 5}));
        s.transform_context(&t.messages).await.unwrap();
        let doc = s.get_object(&toolcall_id(&s, "c1")).await.unwrap().unwrap();
        assert_eq!(doc["content"], "line1\n[image image/png, 1 bytes]\nline2");
        assert_eq!(doc["images"][0]["data"], "..");
        assert_eq!(doc["status"], "fail");
        assert_eq!(doc["tool"], "bash");
        assert_eq!(doc["args"], json!({"command": long}));
        assert_eq!(doc["chat_ref"], format!("chat:{}", s.session_id()));
        let display = doc["args_display"].as_str().unwrap();
        assert!(
            display.starts_with("cargo test xxx")
                && display.ends_with('…')
                && display.chars().count() == 121
        );
    }
}

// --------------------------------------------------- sharing, batching

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sessions_share_file_objects_but_not_sets() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut a = ws.session("share-a").await;
        let mut b = ws.session("share-b").await;
        ws.write("shared.txt", "shared");
        let ra = a.read("shared.txt").await.unwrap();
        let rb = b.read("shared.txt").await.unwrap();
        assert_eq!(ra.id, rb.id);
        assert_eq!(
            ws.store
                .history(ra.id.as_deref().unwrap())
                .await
                .unwrap()
                .len(),
            1
        );
        assert!(b.deactivate("shared.txt").ok);
        assert!(a.snapshot().active_set.contains(ra.id.as_ref().unwrap()));
        assert!(!b.snapshot().active_set.contains(rb.id.as_ref().unwrap()));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_call_and_op_is_one_transaction() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.session("batch").await;
        let mut t = Transcript::default();
        t.user("u");
        for i in 0..6 {
            t.call(
                &format!("c{i}"),
                "bash",
                json!({"command": i.to_string()}),
                &format!("o{i}"),
            );
        }
        let before = ws.store.submitted_tx_count();
        s.transform_context(&t.messages).await.unwrap();
        assert_eq!(
            ws.store.submitted_tx_count() - before,
            1,
            "6 toolcalls + chat + session in one tx"
        );
        // Sync ops queue; the next flush writes them together.
        let before = ws.store.submitted_tx_count();
        s.deactivate("c1");
        s.deactivate("c2");
        s.pin("c3");
        assert_eq!(ws.store.submitted_tx_count(), before);
        s.flush().await.unwrap();
        assert_eq!(ws.store.submitted_tx_count() - before, 1);
        assert!(
            s.flush().await.unwrap().is_none(),
            "nothing queued → no write"
        );
        let stored =
            scm_core::session::paged::get(&*ws.store, &format!("session:{}", s.session_id()))
                .await
                .unwrap()
                .unwrap();
        assert_eq!(stored["pinned_set"], json!([toolcall_id(&s, "c3")]));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_sessions_refuse_operations() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.session("closed").await;
        s.close().await.unwrap();
        s.close().await.unwrap();
        assert_eq!(s.activate("x").code.as_deref(), Some("SESSION_CLOSED"));
        let e = s.transform_context(&[]).await.unwrap_err();
        assert_eq!(e.code(), "SESSION_CLOSED");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_session_ids_are_invalid_arguments() {
    for store in stores() {
        let ws = Workspace::new(store);
        for bad in ["", "a\nb"] {
            let e = scm_core::session::Session::open(
                ws.store.clone(),
                ws.indexer.clone(),
                SessionOptions::new(bad),
            )
            .await
            .unwrap_err();
            assert_eq!(e.code(), "INVALID_ARGUMENT");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_that_failed_is_retried_by_the_next_flush() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.session("retry").await;
        let mut t = Transcript::default();
        t.user("u")
            .call("c1", "bash", json!({"command": "x"}), "out");
        s.ingest_and_assemble_json(&t.messages).unwrap();
        // The binding's split path: take, (submission fails), restore.
        let pending = s.take_pending().unwrap();
        let ops = pending.op_count() - pending.page_count();
        assert_eq!(ops, 3, "toolcall + chat and session heads (+ their pages)");
        s.restore_pending(pending);
        assert!(s.has_pending());
        let receipt = s.flush().await.unwrap().unwrap();
        let tc = toolcall_id(&s, "c1");
        assert!(ws.store.get(&tc).await.unwrap().is_some());
        let stored =
            scm_core::session::paged::get(&*ws.store, &format!("session:{}", s.session_id()))
                .await
                .unwrap()
                .unwrap();
        assert_eq!(stored["active_set"], json!([tc]));
        assert_eq!(s.model_call(0).unwrap().basis_tx, Some(receipt.tx_id));
    }
}

/// SSOT §3.1 "Pinned set" (spec layout): a pin only exempts an object from
/// auto-collapse. It does not activate it; an explicit deactivate hides it
/// and keeps the pin; both survive a resume, as does a later unpin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spec_layout_pin_only_exempts_and_deactivate_keeps_the_pin() {
    for store in stores() {
        let ws = Workspace::new(store);
        ws.write("p.md", "PIN-BODY");
        let sid = unique_id("pinspec");
        let id = ws.file_id("p.md");
        let mut t = Transcript::default();
        {
            let mut s = ws.open(SessionOptions::new(&sid)).await;
            s.read("p.md").await.unwrap();
            assert!(s.deactivate(&id).ok);
            let r = s.pin(&id);
            assert!(r.ok && r.message.contains("not active"), "{r:?}");
            assert!(!s.snapshot().active_set.contains(&id));
            t.user("one");
            let out = s.transform_context(&t.messages).await.unwrap();
            assert_eq!(occurrences(&out, "PIN-BODY"), 0);
            assert!(s.activate(&id).ok);
            let r = s.deactivate(&id);
            assert!(r.ok && r.message.contains("still pinned"), "{r:?}");
            assert_eq!(s.snapshot().pinned_set, vec![id.clone()]);
            assert!(!s.snapshot().active_set.contains(&id));
            s.close().await.unwrap();
        }
        {
            let mut s = ws.open(SessionOptions::new(&sid)).await;
            assert_eq!(s.snapshot().pinned_set, vec![id.clone()]);
            assert!(!s.snapshot().active_set.contains(&id));
            assert!(s.unpin(&id).ok);
            s.close().await.unwrap();
        }
        let s = ws.open(SessionOptions::new(&sid)).await;
        assert!(s.snapshot().pinned_set.is_empty());
        assert!(!s.snapshot().active_set.contains(&id));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blank_session_id_is_refused() {
    let ws = Workspace::new(stores().remove(0));
    for sid in ["", "   ", "\t "] {
        let err = scm_core::session::Session::open(
            ws.store.clone(),
            ws.indexer.clone(),
            SessionOptions::new(sid),
        )
        .await
        .unwrap_err();
        assert_eq!(err.code(), "INVALID_ARGUMENT", "{sid:?}");
    }
}

/// Issue 14, defect 6: without watchers, a read that finds the file gone
/// (or replaced by a directory) records the deletion, and activating a file
/// that vanished since it was read does not call the old content current.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_or_activate_that_finds_the_file_gone_records_the_deletion() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.session("gone").await;
        ws.write("a.txt", "ALPHA-BODY");
        ws.write("b.txt", "BRAVO-BODY");
        ws.write("c.txt", "CHARLIE-BODY");
        for p in ["a.txt", "b.txt", "c.txt"] {
            assert!(s.read(p).await.unwrap().ok);
        }
        let (a, b, c) = (
            ws.file_id("a.txt"),
            ws.file_id("b.txt"),
            ws.file_id("c.txt"),
        );
        let mut t = Transcript::default();
        t.user("u");
        s.transform_context(&t.messages).await.unwrap();

        ws.remove("a.txt");
        let r = s.read("a.txt").await.unwrap();
        assert_eq!(r.code.as_deref(), Some("FILE_NOT_FOUND"));
        ws.remove("b.txt");
        std::fs::create_dir(ws.root.join("b.txt")).unwrap();
        let r = s.read("b.txt").await.unwrap();
        assert_eq!(r.code.as_deref(), Some("NOT_A_FILE"));
        ws.remove("c.txt");
        assert!(s.activate(&c).ok);
        t.user("v");
        let out = s.transform_context(&t.messages).await.unwrap();
        for (id, body) in [(&a, "ALPHA-BODY"), (&b, "BRAVO-BODY"), (&c, "CHARLIE-BODY")] {
            let h = ws.store.history(id).await.unwrap();
            assert_eq!(h.len(), 2, "{id}");
            let last = h.last().unwrap().doc.as_ref().unwrap();
            assert_eq!(last["state"], "deleted", "{id}");
            assert!(last["content"].is_null());
            assert_eq!(occurrences(&out, body), 0, "{body} is not shown as current");
        }
        let snap = s.snapshot();
        for e in snap
            .metadata_pool
            .iter()
            .filter(|e| [&a, &b, &c].contains(&&e.id))
        {
            assert_eq!(e.state.as_deref(), Some("deleted"), "{}", e.id);
        }
    }
}

/// Issue 14, defect 2: a read of a file on the secret list (or outside the
/// workspace) stores neither its bytes (file object) nor pi's tool result
/// (the toolcall keeps one line saying why), and the model is shown that
/// line, never the bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_withheld_file_read_is_neither_stored_nor_shown() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.session("secret").await;
        ws.write(".env", "API_KEY=SECRET-ENV-VALUE");
        let outside = tempfile::tempdir().unwrap();
        let shadow = outside.path().join("shadow");
        std::fs::write(&shadow, "root:SECRET-SHADOW").unwrap();
        let shadow = shadow.to_string_lossy().into_owned();
        let mut t = Transcript::default();
        t.user("u");
        for (c, p, body) in [
            ("c1", ".env", "API_KEY=SECRET-ENV-VALUE"),
            ("c2", shadow.as_str(), "root:SECRET-SHADOW"),
        ] {
            let r = s.read(p).await.unwrap();
            assert!(r.ok && r.message.contains("metadata only"), "{r:?}");
            t.call(c, "read", json!({"path": p}), body);
        }
        let out = s.transform_context(&t.messages).await.unwrap();
        let shown = serde_json::to_string(&out).unwrap();
        assert!(!shown.contains("SECRET"), "{shown}");
        assert!(shown.contains("[withheld: secret]"), "{shown}");
        assert!(shown.contains("[withheld: outside_workspace]"), "{shown}");
        s.flush().await.unwrap();
        let sid = s.session_id().to_string();
        let mut ids = vec![
            ws.file_id(".env"),
            toolcall_id(&s, "c1"),
            toolcall_id(&s, "c2"),
        ];
        ids.push(format!("chat:{sid}"));
        for id in ids {
            let h = s.history(&id).await.unwrap();
            assert!(!h.is_empty(), "{id}");
            let stored = serde_json::to_string(&h).unwrap();
            assert!(!stored.contains("SECRET"), "{id}: {stored}");
        }
        s.close().await.unwrap();
    }
}

/// Nothing leaked: a secret printed by a tool (`cat .env`, `env`), typed in
/// a command (`curl -H "Authorization: Bearer …"`), printed by the user's
/// `!cmd`, or written by the model into a file on the secret list, is
/// neither stored (toolcall, chat, search) nor shown, in both layouts; the
/// rest of the output is kept, and so is a read of an ordinary file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_in_tool_output_and_commands_are_neither_stored_nor_shown() {
    for store in stores() {
        for layout in [Layout::Cache, Layout::Spec] {
            let ws = Workspace::new(store.clone());
            let mut o = SessionOptions::new(unique_id("redact"));
            o.layout = layout;
            let mut s = ws.open(o).await;
            let key = format!("sk-ant-api03-{}", "Zq9".repeat(12));
            let gh = format!("ghp_{}", "x7".repeat(18));
            ws.write(
                "src/config.ts",
                "export const port = 8080; // PLAIN-CODE-KEPT",
            );
            ws.write(".env", "DATABASE_PASSWORD=SECRET-DB-PASS\nPORT=8080\n");
            let mut t = Transcript::default();
            t.user("check the config");
            assert!(s.read("src/config.ts").await.unwrap().ok);
            t.call(
                "c0",
                "read",
                json!({"path": "src/config.ts"}),
                "export const port = 8080; // PLAIN-CODE-KEPT",
            );
            t.call(
                "c1",
                "bash",
                json!({"command": "cat .env; env | grep TOKEN"}),
                &format!(
                    "DATABASE_PASSWORD=SECRET-DB-PASS\nPORT=8080\nGITHUB_TOKEN={gh}\nVISIBLE-LINE"
                ),
            );
            t.call(
                "c2",
                "bash",
                json!({"command": format!("curl -H 'x-api-key: {key}' https://api.example.com")}),
                "{\"ok\":true}",
            );
            t.call(
                "c3",
                "write",
                json!({"path": ".env", "content": "API_TOKEN=SECRET-WRITTEN\n"}),
                "Successfully wrote 25 bytes to .env",
            );
            t.messages.push(json!({
                "role": "bashExecution", "command": "cat .env",
                "output": "DATABASE_PASSWORD=SECRET-DB-PASS", "exitCode": 0,
                "cancelled": false, "truncated": false, "timestamp": 1_700_000_000_999i64
            }));
            t.user("and now?");
            let out = s.transform_context(&t.messages).await.unwrap();
            let shown = serde_json::to_string(&out).unwrap();
            for secret in [
                "SECRET-DB-PASS",
                "SECRET-WRITTEN",
                key.as_str(),
                gh.as_str(),
            ] {
                assert!(
                    !shown.contains(secret),
                    "{layout:?} shows {secret}: {shown}"
                );
            }
            for kept in [
                "PORT=8080",
                "VISIBLE-LINE",
                "PLAIN-CODE-KEPT",
                "DATABASE_PASSWORD=[redacted: secret]",
            ] {
                assert!(shown.contains(kept), "{layout:?} lost {kept}: {shown}");
            }
            s.flush().await.unwrap();
            let mut ids: Vec<String> = ["c1", "c2", "c3"]
                .iter()
                .map(|c| toolcall_id(&s, c))
                .collect();
            ids.push(format!("chat:{}", s.session_id()));
            for id in ids {
                let stored = serde_json::to_string(&s.history(&id).await.unwrap()).unwrap();
                for secret in [
                    "SECRET-DB-PASS",
                    "SECRET-WRITTEN",
                    key.as_str(),
                    gh.as_str(),
                ] {
                    assert!(!stored.contains(secret), "{id} stores {secret}");
                }
            }
            for q in ["SECRET-DB-PASS", "SECRET-WRITTEN"] {
                let hits = scm_core::memory::search(&*ws.store, q, &Default::default())
                    .await
                    .unwrap();
                assert!(hits.is_empty(), "search finds {q}: {hits:#?}");
            }
            s.close().await.unwrap();
        }
    }
}

/// Issue 14, defect 7: a read of a name pi finds only through its fallbacks
/// (NFD, curly quote, AM/PM with U+202F, Unicode spaces) is indexed under
/// the file pi read, and its tool call refers to that object (the content
/// is shown once).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_follow_pis_path_fallbacks() {
    for store in stores() {
        let ws = Workspace::new(store);
        let mut s = ws.session("fallbacks").await;
        let cases = [
            // (on disk, as the model typed it)
            (
                "Capture d\u{2019}e\u{301}cran.txt",
                "Capture d'\u{e9}cran.txt",
                "BODY-FR",
            ),
            (
                "Shot 10.00.01\u{202F}AM.txt",
                "Shot 10.00.01 AM.txt",
                "BODY-AMPM",
            ),
            ("cafe\u{301}.txt", "caf\u{e9}.txt", "BODY-NFD"),
            ("two words.txt", "two\u{a0}words.txt", "BODY-SPACE"),
        ];
        let mut t = Transcript::default();
        t.user("u");
        for (i, (disk, typed, body)) in cases.iter().enumerate() {
            ws.write(disk, body);
            let r = s.read(typed).await.unwrap();
            assert!(r.ok, "{typed}: {r:?}");
            assert_eq!(r.id.as_deref(), Some(ws.file_id(disk).as_str()), "{typed}");
            t.call(&format!("c{i}"), "read", json!({"path": typed}), body);
        }
        let out = s.transform_context(&t.messages).await.unwrap();
        for (disk, _, body) in cases {
            assert_eq!(occurrences(&out, body), 1, "{disk}");
        }
    }
}
