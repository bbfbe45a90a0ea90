//! Notes, links, backlinks and expand (issue 12 items 1–2,
//! memory-system-v0 §3.1, §5.2, §8–§10, §12.1) on every configured store:
//! the embedded one always, a real XTDB node when `SCM_TEST_XTDB_URL` is
//! set. Real files in a temporary workspace, real sessions.

mod session_support;

use scm_core::memory::expand::{self, Select};
use scm_core::memory::links;
use serde_json::json;
use session_support::*;

const NOTE: &str = "---\ntitle: Plan\ntags: [plan, alpha]\nrelated: \"[[later]]\"\n---\n# Plan\n\nSee [[b|the b note]] and [code](../src/lib.rs#L3), #beta.\nAlso [[sub/c#Setup]].\n";

/// A note's frontmatter, tags and links are stored structure; links carry
/// the target's id, path and where they sit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_note_is_parsed_into_frontmatter_tags_and_links() {
    for store in stores() {
        let ws = Workspace::new(store.clone());
        let mut s = ws.session("parse").await;
        ws.write("notes/a.md", NOTE);
        ws.write("notes/b.md", "B body\n");
        assert!(s.read("notes/a.md").await.unwrap().ok);
        s.flush().await.unwrap();
        let doc = store.get(&ws.file_id("notes/a.md")).await.unwrap().unwrap();
        assert_eq!(doc["frontmatter"]["title"], "Plan", "{}", store.kind());
        assert_eq!(doc["tags"], json!(["plan", "alpha", "beta"]));
        let ids: Vec<String> = [
            "notes/later.md",
            "notes/b.md",
            "src/lib.rs",
            "notes/sub/c.md",
        ]
        .iter()
        .map(|p| ws.file_id(p))
        .collect();
        assert_eq!(doc["link_ids"], json!(ids));
        let l = &doc["links"][1];
        assert_eq!(l["alias"], "the b note");
        assert_eq!(l["kind"], "wikilink");
        assert_eq!(l["line"], 8);
        assert_eq!(doc["links"][0]["field"], "frontmatter.related");
        assert_eq!(doc["links"][3]["heading"], "Setup");
        // The hashed fields are the plan's: the structure is derived.
        let plain = store.get(&ws.file_id("notes/a.md")).await.unwrap().unwrap();
        assert_eq!(plain["metadata_hash"], doc["metadata_hash"]);
        s.close().await.unwrap();
    }
}

/// Backlinks are a store query over latest versions; a link to a file that
/// does not exist yet resolves (same id) when the file appears.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backlinks_and_links_that_resolve_later() {
    for store in stores() {
        let ws = Workspace::new(store.clone());
        let mut s = ws.session("backlinks").await;
        ws.write("notes/a.md", NOTE);
        ws.write("notes/b.md", "B body, links back to [[a]]\n");
        assert!(s.read("notes/a.md").await.unwrap().ok);
        assert!(s.read("notes/b.md").await.unwrap().ok);
        s.flush().await.unwrap();
        let (a, b) = (ws.file_id("notes/a.md"), ws.file_id("notes/b.md"));
        assert_eq!(store.backlinks(&b).await.unwrap(), vec![a.clone()]);
        assert_eq!(store.backlinks(&a).await.unwrap(), vec![b.clone()]);
        let later = ws.file_id("notes/later.md");
        let bl = links::backlinks(&*store, &later).await.unwrap();
        assert_eq!(bl.len(), 1);
        assert_eq!(bl[0].at[0].field, "frontmatter.related");
        // `later.md` does not exist: a [not found] line, nothing stored.
        assert!(store.get(&later).await.unwrap().is_none());
        let mut t = Transcript::default();
        t.user("go");
        let out = s.ingest_and_assemble(&t.messages).unwrap();
        let all = texts(&out).join("\n");
        assert!(all.contains(&format!("- link id={later} path=")), "{all}");
        assert!(all.contains("later.md [not found]"), "{all}");
        // It appears: the same id, now a stored object.
        ws.write("notes/later.md", "now here\n");
        assert!(s.read("notes/later.md").await.unwrap().ok);
        s.flush().await.unwrap();
        assert!(store.get(&later).await.unwrap().is_some());
        let out = s.ingest_and_assemble(&t.messages).unwrap();
        let all = texts(&out).join("\n");
        assert!(!all.contains("later.md [not found]"), "{all}");
        // A new version without the link drops the backlink.
        ws.write("notes/b.md", "no links any more\n");
        assert!(s.observe_edit("notes/b.md").await.unwrap().ok);
        s.flush().await.unwrap();
        assert!(store.backlinks(&a).await.unwrap().is_empty());
        s.close().await.unwrap();
    }
}

/// Activating a note shows one metadata line per target (type, size,
/// [unread]) without activating the targets; `expand` activates them, all
/// or a selection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn link_lines_then_expand_with_select() {
    for store in stores() {
        let ws = Workspace::new(store.clone());
        let mut s = ws.session("expand").await;
        ws.write("notes/b.md", "B-BODY-MARKER\n");
        ws.write("src/lib.rs", "LIB-BODY-MARKER\n");
        ws.write("notes/sub/c.md", "C-BODY-MARKER\n");
        ws.write("notes/a.md", NOTE);
        assert!(s.read("notes/a.md").await.unwrap().ok);
        s.flush().await.unwrap();
        let mut t = Transcript::default();
        t.user("go");
        let out = s.ingest_and_assemble(&t.messages).unwrap();
        let all = texts(&out).join("\n");
        let b = ws.file_id("notes/b.md");
        assert!(all.contains(links::LINKS_HEADER), "{all}");
        assert!(
            all.contains(&format!("- link id={b} file path="))
                && all.contains("type=md chars=0 [unread]"),
            "{all}"
        );
        assert_eq!(occurrences(&out, "B-BODY-MARKER"), 0, "metadata only");
        assert!(
            s.snapshot().metadata_pool.iter().any(|e| e.id == b),
            "targets join the pool"
        );
        assert!(!s.snapshot().active_set.contains(&b));

        // Selection by type (notes only) and position.
        let a = ws.file_id("notes/a.md");
        let sel = Select {
            types: Some(vec!["note".into()]),
            positions: Some(vec![2, 3]),
            ..Select::default()
        };
        let items = s.expand(&a, &sel).await.unwrap();
        assert_eq!(items.len(), 1, "{items:?}");
        assert_eq!(items[0].id, b);
        assert_eq!(items[0].outcome, "activated");
        let out = s.ingest_and_assemble(&t.messages).unwrap();
        assert_eq!(occurrences(&out, "B-BODY-MARKER"), 1);
        assert_eq!(occurrences(&out, "LIB-BODY-MARKER"), 0);
        // By path pattern.
        let items = s
            .expand(
                "notes/a.md",
                &Select {
                    path: Some("*.rs".into()),
                    ..Select::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(items.len(), 1);
        assert_eq!(
            items[0].path.as_deref().map(|p| p.ends_with("src/lib.rs")),
            Some(true)
        );
        // Everything: the missing target is reported, the rest activated.
        let items = s.expand(&a, &Select::default()).await.unwrap();
        let outcomes: Vec<&str> = items.iter().map(|i| i.outcome.as_str()).collect();
        assert_eq!(
            outcomes,
            vec!["not found", "already active", "already active", "activated"]
        );
        let out = s.ingest_and_assemble(&t.messages).unwrap();
        assert_eq!(occurrences(&out, "C-BODY-MARKER"), 1);
        // Bad selections are coded errors.
        let e = s
            .expand(
                &a,
                &Select {
                    positions: Some(vec![9]),
                    ..Select::default()
                },
            )
            .await
            .unwrap_err();
        assert_eq!(e.code(), "INVALID_ARGUMENT");
        let e = s
            .expand("no-such-object", &Select::default())
            .await
            .unwrap_err();
        assert_eq!(e.code(), "UNKNOWN_OBJECT");
        s.close().await.unwrap();
    }
}

/// A note written in one session is found, activated and expanded from a
/// new session on the same store (memory across sessions).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_note_survives_its_session_and_is_found_by_search() {
    for store in stores() {
        let ws = Workspace::new(store.clone());
        let tok = format!("zebra{}", unique_id("n").replace(['-', '_', ':'], ""));
        let mut s1 = ws.session("writer").await;
        ws.write("notes/b.md", "B-BODY-MARKER\n");
        ws.write("notes/mem.md", &format!("# Memory {tok}\n\nSee [[b]].\n"));
        assert!(s1.observe_write("notes/mem.md").await.unwrap().ok);
        s1.close().await.unwrap();

        let mut s2 = ws.session("reader").await;
        let hits = scm_core::memory::search(&*store, &tok, &Default::default())
            .await
            .unwrap();
        assert_eq!(hits.len(), 1, "{hits:?}");
        let items = s2.expand(&hits[0].id, &Select::default()).await.unwrap();
        assert_eq!(items[0].id, ws.file_id("notes/b.md"));
        let mut t = Transcript::default();
        t.user("go");
        let out = s2.ingest_and_assemble(&t.messages).unwrap();
        assert_eq!(occurrences(&out, "B-BODY-MARKER"), 1);
        s2.close().await.unwrap();
    }
}

/// Cache layout: an activated note's result shows its content, then the
/// link lines as they were at activation (persisted with the result).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_layout_activation_shows_link_lines() {
    for store in stores() {
        let ws = Workspace::new(store.clone());
        let mut o = scm_core::session::SessionOptions::new(unique_id("cache-links"));
        o.layout = scm_core::session::Layout::Cache;
        let mut s = ws.open(o).await;
        ws.write("notes/b.md", "B-BODY-MARKER\n");
        ws.write("notes/a.md", "A-BODY-MARKER see [[b]]\n");
        assert!(s.read("notes/a.md").await.unwrap().ok);
        let b = ws.file_id("notes/b.md");
        let mut t = Transcript::default();
        t.user("go")
            .call("a1", "activate", json!({"id": "notes/a.md"}), "ok");
        let out = s.transform_context(&t.messages).await.unwrap();
        let all = texts(&out).join("\n");
        let body_at = all.find("A-BODY-MARKER").expect("content shown");
        let line_at = all
            .find(&format!("- link id={b} file path="))
            .unwrap_or_else(|| panic!("{all}"));
        assert!(line_at > body_at, "after the content");
        assert!(all.contains("chars=0 [unread]"), "{all}");
        assert_eq!(occurrences(&out, "B-BODY-MARKER"), 0);
        // The cache layout lists nothing new for a note's links (no FILES
        // entry, no alias): the lines are all the model sees of them.
        assert!(!s.snapshot().metadata_pool.iter().any(|e| e.id == b));
        // (An alias is `f2` before a path; a 64-hex id can end in "f2".)
        assert!(
            !all.contains("notes/b.md (") && !all.contains("f2 notes/b.md"),
            "{all}"
        );
        s.close().await.unwrap();
    }
}

/// Cache layout: an `expand` call's result shows what it activated, like
/// an activate result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_layout_expand_result_shows_the_targets() {
    for store in stores() {
        let ws = Workspace::new(store.clone());
        let mut o = scm_core::session::SessionOptions::new(unique_id("cache-expand"));
        o.layout = scm_core::session::Layout::Cache;
        let mut s = ws.open(o).await;
        ws.write("notes/b.md", "B-BODY-MARKER\n");
        ws.write("notes/a.md", "A-BODY-MARKER see [[b]]\n");
        assert!(s.read("notes/a.md").await.unwrap().ok);
        let items = s.expand("notes/a.md", &Select::default()).await.unwrap();
        let text = expand::render_expand("a", &items);
        let mut t = Transcript::default();
        t.user("go")
            .call("e1", "expand", json!({"id": "notes/a.md"}), &text);
        let out = s.transform_context(&t.messages).await.unwrap();
        assert_eq!(occurrences(&out, "B-BODY-MARKER"), 1, "{:?}", texts(&out));
        s.close().await.unwrap();
    }
}

/// A past model call that showed a note is rebuilt with its link lines, in
/// both layouts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconstructed_calls_show_the_same_link_lines() {
    for store in stores() {
        for layout in [
            scm_core::session::Layout::Spec,
            scm_core::session::Layout::Cache,
        ] {
            let ws = Workspace::new(store.clone());
            let mut o = scm_core::session::SessionOptions::new(unique_id("recon-links"));
            o.layout = layout;
            let mut s = ws.open(o).await;
            ws.write("notes/b.md", "B\n");
            ws.write("notes/a.md", "A see [[b]] and [[gone]]\n");
            assert!(s.read("notes/a.md").await.unwrap().ok);
            let mut t = Transcript::default();
            t.user("go")
                .call("a1", "activate", json!({"id": "notes/a.md"}), "ok");
            let out = s.transform_context(&t.messages).await.unwrap();
            assert!(texts(&out).join("\n").contains("- link id="), "{layout:?}");
            let again = s.reconstruct_call(s.model_call_count() - 1).await.unwrap();
            assert_eq!(again, out, "{layout:?} on {}", store.kind());
            s.close().await.unwrap();
        }
    }
}

/// A link pinned to a version (`[[b@v1]]`, `[[b@<hash prefix>]]`) keeps the
/// pin in its link entry; its metadata line shows the pin and that newer
/// versions exist; `expand` shows that version in its result and never
/// activates the latest in its place (§7.2, §7.3, §9, §11.2). A pin that
/// names no version is reported, not an error; unpinned links are as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pinned_links_show_their_version() {
    for store in stores() {
        let ws = Workspace::new(store.clone());
        let mut s = ws.session("pins").await;
        ws.write("notes/b.md", "B-V1-MARKER\n");
        assert!(s.read("notes/b.md").await.unwrap().ok);
        ws.write("notes/b.md", "B-V2-MARKER\n");
        assert!(s.observe_edit("notes/b.md").await.unwrap().ok);
        assert!(s.deactivate("notes/b.md").ok);
        s.flush().await.unwrap();
        let b = ws.file_id("notes/b.md");
        let vs = scm_core::memory::versions(&*store, &b).await.unwrap();
        assert_eq!(vs.len(), 2, "{}", store.kind());
        let h1 = vs[0].content_hash.clone().unwrap()[..10].to_owned();
        ws.write(
            "notes/a.md",
            &format!(
                "old [[b@v1]], by hash [[b@{h1}|first b]], now [[b]], bad [[b@v9]], [[b@v2]]\n"
            ),
        );
        assert!(s.read("notes/a.md").await.unwrap().ok);
        s.flush().await.unwrap();
        let a = ws.file_id("notes/a.md");
        let doc = store.get(&a).await.unwrap().unwrap();
        assert_eq!(doc["links"][0]["pin"], "v1");
        assert_eq!(doc["links"][1]["pin"], json!(h1));
        assert!(doc["links"][2].get("pin").is_none());
        assert_eq!(doc["link_ids"], json!([b.clone()]), "one target");
        assert_eq!(store.backlinks(&b).await.unwrap(), vec![a.clone()]);

        let mut t = Transcript::default();
        t.user("go");
        let out = s.ingest_and_assemble(&t.messages).unwrap();
        let all = texts(&out).join("\n");
        let lines: Vec<&str> = all
            .lines()
            .filter(|l| l.starts_with(&format!("- link id={b}")))
            .collect();
        assert_eq!(lines.len(), 5, "{all}");
        assert!(
            lines[0].ends_with(" pinned=v1 [newer versions exist]"),
            "{all}"
        );
        assert!(lines[1].ends_with(&format!(" pinned={h1} [newer versions exist]")));
        assert!(!lines[2].contains("pinned="), "{}", lines[2]);
        assert!(lines[3].ends_with(" pinned=v9 [no such version]"), "{all}");
        assert!(lines[4].ends_with(" pinned=v2 (the latest)"), "{all}");

        // Expanding the pinned links shows version 1, activates nothing.
        let items = s
            .expand(
                &a,
                &Select {
                    positions: Some(vec![1, 2, 4]),
                    ..Select::default()
                },
            )
            .await
            .unwrap();
        let outcomes: Vec<&str> = items.iter().map(|i| i.outcome.as_str()).collect();
        assert_eq!(
            outcomes,
            vec!["version shown", "version shown", "no such version"]
        );
        for i in &items[..2] {
            let v = i.version.as_deref().unwrap();
            assert!(
                v.contains("B-V1-MARKER") && !v.contains("B-V2-MARKER"),
                "{v}"
            );
            assert!(v.contains("version 1 of 2"), "{v}");
        }
        assert!(items[2].message.contains("no version 9"), "{:?}", items[2]);
        assert!(!s.snapshot().active_set.contains(&b), "not activated");
        let text = expand::render_expand(&a, &items);
        assert!(text.contains("B-V1-MARKER"), "{text}");
        assert!(expand::expanded_ids(&text).is_empty(), "{text}");
        let out = s.ingest_and_assemble(&t.messages).unwrap();
        assert_eq!(occurrences(&out, "B-V1-MARKER"), 0);
        assert_eq!(occurrences(&out, "B-V2-MARKER"), 0);

        // The unpinned link activates the latest, as before.
        let items = s
            .expand(
                &a,
                &Select {
                    positions: Some(vec![3]),
                    ..Select::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(items[0].outcome, "activated");
        let out = s.ingest_and_assemble(&t.messages).unwrap();
        assert_eq!(occurrences(&out, "B-V2-MARKER"), 1);
        assert_eq!(occurrences(&out, "B-V1-MARKER"), 0);
        s.close().await.unwrap();
    }
}

/// Polls the store until `ok` holds for the latest version of `id` (10 s
/// deadline). Polling because a watcher's writes for a note folder have no
/// completion signal: they concern objects outside the session, whose
/// events the session drops.
async fn until_stored(
    store: &std::sync::Arc<dyn scm_core::store::Store>,
    id: &str,
    ok: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let doc = store.get(id).await.unwrap();
        if let Some(d) = doc {
            let v = serde_json::Value::Object(d);
            if ok(&v) {
                return v;
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{id} not as expected in time"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Every Markdown file under a configured note folder is indexed as a note
/// when a session opens — never read by the agent, found by `search`,
/// backlinks work, hidden folders and other files are left out — and the
/// watcher keeps them current: changed, new (also in a new subfolder) and
/// deleted notes become new versions; a session opened later sees changes
/// made while none ran.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn note_folders_are_indexed_at_start_and_watched() {
    for store in stores() {
        let ws = Workspace::new(store.clone());
        let tok = format!("okapi{}", unique_id("f").replace(['-', '_', ':'], ""));
        ws.write(
            "vault/alpha.md",
            &format!("---\ntags: [zoo]\n---\n# Alpha {tok}\n\nSee [[beta]] #animal\n"),
        );
        ws.write("vault/beta.md", "Beta body\n");
        ws.write("vault/.obsidian/hidden.md", &format!("{tok} hidden\n"));
        ws.write("vault/other.txt", &format!("{tok} not a note\n"));
        let mut o = scm_core::session::SessionOptions::new(unique_id("folders"));
        o.note_folders = vec!["vault".into(), "no-such-folder".into()];
        o.watch = true;
        let mut s = ws.open(o).await;
        let (alpha, beta) = (ws.file_id("vault/alpha.md"), ws.file_id("vault/beta.md"));
        let doc = store.get(&alpha).await.unwrap().expect("indexed at start");
        assert_eq!(doc["state"], "present", "{}", store.kind());
        assert!(doc["content"].as_str().unwrap().contains(&tok));
        assert_eq!(doc["tags"], json!(["zoo", "animal"]));
        assert_eq!(doc["link_ids"], json!([beta.clone()]));
        assert_eq!(store.backlinks(&beta).await.unwrap(), vec![alpha.clone()]);
        let hits = scm_core::memory::search(&*store, &tok, &Default::default())
            .await
            .unwrap();
        let ids: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
        assert_eq!(ids, vec![alpha.as_str()], "only the note, {}", store.kind());
        assert!(store
            .get(&ws.file_id("vault/.obsidian/hidden.md"))
            .await
            .unwrap()
            .is_none());
        // The notes join the store, not the session's sets.
        assert!(!s.snapshot().session_index.contains(&alpha));

        // Changed on disk: a new version, found by its new words.
        let tok2 = format!("{tok}changed");
        ws.write("vault/alpha.md", &format!("# Alpha {tok2}\n"));
        until_stored(&store, &alpha, |d| {
            d["content"].as_str().is_some_and(|c| c.contains(&tok2))
        })
        .await;
        let hits = scm_core::memory::search(&*store, &tok2, &Default::default())
            .await
            .unwrap();
        assert_eq!(hits.len(), 1);
        assert!(store.backlinks(&beta).await.unwrap().is_empty());
        // New, in a new subfolder.
        ws.write("vault/sub/gamma.md", "Gamma links [[../beta]]\n");
        let gamma = ws.file_id("vault/sub/gamma.md");
        until_stored(&store, &gamma, |d| d["state"] == "present").await;
        assert_eq!(store.backlinks(&beta).await.unwrap(), vec![gamma.clone()]);
        // Deleted.
        ws.remove("vault/beta.md");
        until_stored(&store, &beta, |d| d["state"] == "deleted").await;
        s.close().await.unwrap();

        // Changed while no session ran: seen by the next one at start.
        ws.write("vault/sub/gamma.md", "Gamma rewritten\n");
        let mut o = scm_core::session::SessionOptions::new(unique_id("folders-2"));
        o.note_folders = vec![ws.root.join("vault").to_string_lossy().into_owned()];
        let mut s2 = ws.open(o).await;
        let d = store.get(&gamma).await.unwrap().unwrap();
        assert_eq!(d["content"], "Gamma rewritten\n", "{}", store.kind());
        assert_eq!(
            scm_core::memory::versions(&*store, &gamma)
                .await
                .unwrap()
                .len(),
            2
        );
        s2.close().await.unwrap();
    }
}

/// A note folder's subfolder deleted and made again (a sync tool, a branch
/// switch): its notes are recorded gone, and the notes in the new one are
/// indexed and followed again — also when the folder is polled (a network
/// filesystem; `PollMode::Always` uses no platform watcher at all).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_note_subfolder_deleted_and_made_again_is_followed_again() {
    use scm_core::fs::watcher::{PollMode, PollOptions};
    let polled = PollOptions {
        mode: PollMode::Always,
        interval: std::time::Duration::from_millis(50),
    };
    for poll in [PollOptions::default(), polled] {
        subfolder_made_again(poll).await;
    }
}

async fn subfolder_made_again(poll: scm_core::fs::watcher::PollOptions) {
    let store = stores().into_iter().next().unwrap();
    let ws = Workspace::new(store.clone());
    ws.write("vault/sub/gamma.md", "Gamma one\n");
    let mut o = scm_core::session::SessionOptions::new(unique_id("refolder"));
    o.note_folders = vec!["vault".into()];
    o.watch = true;
    o.watch_poll = poll;
    let mut s = ws.open(o).await;
    let gamma = ws.file_id("vault/sub/gamma.md");
    until_stored(&store, &gamma, |d| d["state"] == "present").await;

    std::fs::remove_dir_all(ws.root.join("vault/sub")).unwrap();
    until_stored(&store, &gamma, |d| d["state"] == "deleted").await;
    ws.write("vault/sub/gamma.md", "Gamma two\n");
    ws.write("vault/sub/delta.md", "Delta one\n");
    until_stored(&store, &gamma, |d| d["content"] == "Gamma two\n").await;
    let delta = ws.file_id("vault/sub/delta.md");
    until_stored(&store, &delta, |d| d["content"] == "Delta one\n").await;
    // Watched again: later changes are followed.
    ws.write("vault/sub/delta.md", "Delta two\n");
    until_stored(&store, &delta, |d| d["content"] == "Delta two\n").await;
    s.close().await.unwrap();
}

/// `expand` follows more than a note's links (memory-system-v0 §9): a tool
/// call's files (a `grep`'s hits, a read's file) and a chat's tool calls, in
/// chat order — from this session or, through the store, from a later one.
/// `metadata` lists what it would load, with positions, and loads nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expand_a_tool_calls_files_and_a_chats_tool_calls() {
    for store in stores() {
        let ws = Workspace::new(store.clone());
        let mut s = ws.session("expand-chat").await;
        ws.write("src/a.ts", "export const A = 'A-BODY-MARKER';\n");
        ws.write("src/b.ts", "export const B = 'B-BODY-MARKER';\n");
        // As the pi package does on the tool's result, before the next call.
        let src = ws.root.join("src").to_string_lossy().into_owned();
        let grep_out =
            "a.ts:1:export const A = 'A-BODY-MARKER';\nb.ts:1:export const B = 'B-BODY-MARKER';";
        s.observe_discovery("grep", grep_out, &src).await.unwrap();
        let mut t = Transcript::default();
        t.user("where is the marker?");
        t.call(
            "g1",
            "grep",
            json!({"pattern": "MARKER", "path": src}),
            grep_out,
        );
        t.call(
            "b1",
            "bash",
            json!({"command": "cat build.log"}),
            "CHAT-BASH-MARKER",
        );
        t.call(
            "b2",
            "bash",
            json!({"command": "wc -l src/a.ts"}),
            "1 src/a.ts",
        );
        s.ingest_and_assemble(&t.messages).unwrap();
        s.flush().await.unwrap();
        let grep = toolcall_id(&s, "g1");
        let (a, b) = (ws.file_id("src/a.ts"), ws.file_id("src/b.ts"));

        // Metadata only: the grep's two hits, with positions; nothing loaded.
        let meta = Select {
            metadata: true,
            ..Select::default()
        };
        let items = s.expand(&grep, &meta).await.unwrap();
        let ids: Vec<&str> = items.iter().map(|i| i.id.as_str()).collect();
        assert_eq!(ids, vec![a.as_str(), b.as_str()], "{}", store.kind());
        assert!(items.iter().all(|i| i.outcome == "listed"), "{items:?}");
        assert!(
            items[1]
                .message
                .starts_with("position 2: file type=ts chars="),
            "{items:?}"
        );
        let text = expand::render_expand(&grep, &items);
        assert!(text.contains("metadata only"), "{text}");
        assert!(expand::expanded_ids(&text).is_empty(), "{text}");
        assert!(!s.snapshot().active_set.contains(&b));
        // A bash command's files too (as observe_bash finds them).
        let wc = s.expand(&toolcall_id(&s, "b2"), &meta).await.unwrap();
        assert_eq!(
            wc.iter().map(|i| i.id.as_str()).collect::<Vec<_>>(),
            vec![a.as_str()]
        );

        // A path pattern picks one hit: read and shown, the other not.
        let items = s
            .expand(
                &grep,
                &Select {
                    path: Some("*b.ts".into()),
                    ..Select::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(items.len(), 1, "{items:?}");
        assert_eq!(
            (items[0].id.as_str(), items[0].outcome.as_str()),
            (b.as_str(), "activated")
        );
        let out = s.ingest_and_assemble(&t.messages).unwrap();
        assert!(active_ids(&out).contains(&b), "{:?}", active_ids(&out));
        assert!(!active_ids(&out).contains(&a));
        s.flush().await.unwrap();
        let chat = format!("chat:{}", s.session_id());
        s.close().await.unwrap();

        // A later session lists the first one's tool calls, then loads one.
        let mut s2 = ws.session("expand-chat-later").await;
        let items = s2.expand(&chat, &meta).await.unwrap();
        let lines: Vec<&str> = items.iter().map(|i| i.message.as_str()).collect();
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(
            lines[0].starts_with("position 1: toolcall tool=grep status=ok"),
            "{lines:?}"
        );
        assert!(lines[1].contains("tool=bash") && lines[1].contains("args=cat build.log"));
        let items = s2
            .expand(
                &chat,
                &Select {
                    types: Some(vec!["toolcall".into()]),
                    positions: Some(vec![2]),
                    ..Select::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(items.len(), 1, "{items:?}");
        assert_eq!(items[0].outcome, "activated");
        let mut t2 = Transcript::default();
        t2.user("what did the other session run?");
        let out = s2.ingest_and_assemble(&t2.messages).unwrap();
        assert_eq!(occurrences(&out, "CHAT-BASH-MARKER"), 1);
        // Files are not a chat's references; positions are checked.
        let only_files = Select {
            types: Some(vec!["file".into()]),
            ..Select::default()
        };
        assert!(s2.expand(&chat, &only_files).await.unwrap().is_empty());
        let e = s2
            .expand(
                &chat,
                &Select {
                    positions: Some(vec![4]),
                    ..Select::default()
                },
            )
            .await
            .unwrap_err();
        assert_eq!(e.code(), "INVALID_ARGUMENT");
        s2.close().await.unwrap();
    }
}

/// A chat of many tool calls is not loaded whole by one `expand`: past the
/// bound it is a coded error that says how to narrow it; a selection within
/// the bound loads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expand_of_a_long_chat_asks_for_a_selection() {
    let store = stores().remove(0);
    let ws = Workspace::new(store.clone());
    let mut s = ws.session("expand-long").await;
    let mut t = Transcript::default();
    t.user("go");
    let n = expand::MAX_EXPAND_LOADS + 1;
    for i in 0..n {
        t.call(
            &format!("c{i}"),
            "bash",
            json!({"command": format!("echo {i}")}),
            &format!("out {i}"),
        );
    }
    s.ingest_and_assemble(&t.messages).unwrap();
    s.flush().await.unwrap();
    let chat = format!("chat:{}", s.session_id());
    let e = s.expand(&chat, &Select::default()).await.unwrap_err();
    assert_eq!(e.code(), "INVALID_ARGUMENT");
    assert!(e.to_string().contains("metadata: true"), "{e}");
    let listed = Select {
        metadata: true,
        ..Select::default()
    };
    assert_eq!(s.expand(&chat, &listed).await.unwrap().len(), n);
    let some = Select {
        positions: Some((1..=3).collect()),
        ..Select::default()
    };
    assert_eq!(s.expand(&chat, &some).await.unwrap().len(), 3);
    s.close().await.unwrap();
}
