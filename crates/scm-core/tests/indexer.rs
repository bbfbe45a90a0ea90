//! Indexing protocol (SSOT §5.5, implementation-plan §4) against the real
//! embedded store and real files: created / updated / unchanged, discovery
//! never clobbers, deletions keep history, bad input → coded error and zero
//! writes.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use scm_core::fs::indexer::{IndexAction, Indexer, IndexerOptions};
use scm_core::fs::resolver::Resolver;
use scm_core::model::hashing::sha256_hex;
use scm_core::store::embedded::EmbeddedStore;
use scm_core::store::Store;
use serde_json::Value;

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    store: Arc<EmbeddedStore>,
    indexer: Indexer,
}

fn fixture_with(options: IndexerOptions) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let store = Arc::new(EmbeddedStore::open_in_memory().unwrap());
    let resolver = Arc::new(Resolver::new("fs-test".into(), root.clone(), vec![], true));
    let indexer = Indexer::new(store.clone(), resolver, options);
    Fixture {
        _dir: dir,
        root,
        store,
        indexer,
    }
}

fn fixture() -> Fixture {
    fixture_with(IndexerOptions::default())
}

impl Fixture {
    fn write(&self, rel: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let p = self.root.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, bytes).unwrap();
        p
    }
    fn txs(&self) -> u64 {
        self.store.submitted_tx_count()
    }
}

fn s<'a>(doc: &'a serde_json::Map<String, Value>, k: &str) -> Option<&'a str> {
    doc.get(k).and_then(Value::as_str)
}

#[tokio::test]
async fn created_then_unchanged_then_updated() {
    let f = fixture();
    f.write("src/a.ts", "one\n");

    let first = f.indexer.index_file("src/a.ts").await.unwrap();
    assert_eq!(first.action, IndexAction::Created);
    assert!(first.receipt.is_some());
    assert_eq!(s(&first.doc, "content"), Some("one\n"));
    assert_eq!(
        s(&first.doc, "file_hash"),
        Some(sha256_hex(b"one\n").as_str())
    );
    assert_eq!(s(&first.doc, "state"), Some("present"));
    assert_eq!(first.doc["file_type"], "ts");
    assert_eq!(first.doc["char_count"], 4);
    let after_create = f.txs();
    assert_eq!(after_create, 1);

    // Unchanged: one lookup, zero writes (also through another spelling and
    // after a touch, which changes mtime but not bytes).
    let again = f.indexer.index_file("./src/../src/a.ts").await.unwrap();
    assert_eq!(again.action, IndexAction::Unchanged);
    assert!(again.receipt.is_none());
    assert_eq!(again.object_id, first.object_id);
    let file = std::fs::File::options()
        .append(true)
        .open(f.root.join("src/a.ts"))
        .unwrap();
    file.set_modified(std::time::SystemTime::now() + Duration::from_secs(5))
        .unwrap();
    drop(file);
    assert_eq!(
        f.indexer.index_file("src/a.ts").await.unwrap().action,
        IndexAction::Unchanged
    );
    assert_eq!(f.txs(), after_create);

    f.write("src/a.ts", "two\n");
    let updated = f.indexer.index_file("src/a.ts").await.unwrap();
    assert_eq!(updated.action, IndexAction::Updated);
    assert_eq!(s(&updated.doc, "content"), Some("two\n"));
    assert_eq!(f.txs(), after_create + 1);

    let history = f.store.history(&first.object_id).await.unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(history[0].doc.as_ref().unwrap()["content"], "one\n");
    let latest = f.store.get(&first.object_id).await.unwrap().unwrap();
    assert_eq!(latest, updated.doc);
}

#[tokio::test]
async fn discovery_creates_stubs_in_one_write_and_never_clobbers() {
    let f = fixture();
    f.write("read.ts", "content");
    f.write("gone.ts", "bye");
    let read = f.indexer.index_file("read.ts").await.unwrap();
    let gone_resolved = f.indexer.resolver.resolve("gone.ts").unwrap();
    f.indexer.index_file("gone.ts").await.unwrap();
    std::fs::remove_file(f.root.join("gone.ts")).unwrap();
    f.indexer.index_file_deletion(&gone_resolved).await.unwrap();
    let before = f.txs();

    let paths: Vec<String> = [
        "read.ts",
        "new1.ts",
        "gone.ts",
        "new2.rs",
        "new1.ts",
        "missing/never.md",
    ]
    .iter()
    .map(|p| p.to_string())
    .collect();
    let results = f.indexer.discover_files(&paths).await.unwrap();
    assert_eq!(f.txs(), before + 1, "all new stubs in one transaction");
    let actions: Vec<_> = results.iter().map(|r| r.action).collect();
    use IndexAction::*;
    assert_eq!(
        actions,
        [Unchanged, Created, Unchanged, Created, Created, Created]
    );
    assert_eq!(results[1].object_id, results[4].object_id);

    // The indexed file keeps its content; the deleted one stays deleted.
    assert_eq!(results[0].doc, read.doc);
    assert_eq!(s(&results[2].doc, "state"), Some("deleted"));
    let latest_gone = f.store.get(&results[2].object_id).await.unwrap().unwrap();
    assert_eq!(s(&latest_gone, "state"), Some("deleted"));

    // Stubs: null content and hashes, `[unread]` state, still typed.
    let stub = f.store.get(&results[1].object_id).await.unwrap().unwrap();
    assert_eq!(s(&stub, "state"), Some("stub"));
    for k in ["content", "file_hash", "content_hash"] {
        assert!(stub[k].is_null(), "{k}");
    }
    assert_eq!(stub["file_type"], "ts");
    assert_eq!(stub["char_count"], 0);

    // Discovering again writes nothing, not even over an older stub.
    let again = f.indexer.discover_files(&paths).await.unwrap();
    assert!(again.iter().all(|r| r.action == Unchanged));
    assert_eq!(f.txs(), before + 1);
    assert_eq!(
        f.store.history(&results[1].object_id).await.unwrap().len(),
        1
    );

    // Reading a stub upgrades it.
    f.write("new1.ts", "now real");
    let upgraded = f.indexer.index_file("new1.ts").await.unwrap();
    assert_eq!(upgraded.action, Updated);
    assert_eq!(s(&upgraded.doc, "state"), Some("present"));

    // Nothing new to discover: zero writes.
    let before = f.txs();
    f.indexer
        .discover_files(&["read.ts".to_string()])
        .await
        .unwrap();
    f.indexer.discover_files(&[]).await.unwrap();
    assert_eq!(f.txs(), before);
}

#[tokio::test]
async fn deletion_is_a_new_version_and_history_is_kept() {
    let f = fixture();
    f.write("a.md", "# hi");
    let created = f.indexer.index_file("a.md").await.unwrap();
    std::fs::remove_file(f.root.join("a.md")).unwrap();
    let resolved = f.indexer.resolver.resolve("a.md").unwrap();

    let deleted = f.indexer.index_file_deletion(&resolved).await.unwrap();
    assert_eq!(deleted.action, IndexAction::Updated);
    assert_eq!(deleted.object_id, created.object_id);
    assert_eq!(s(&deleted.doc, "state"), Some("deleted"));
    for k in ["content", "file_hash", "content_hash"] {
        assert!(deleted.doc[k].is_null(), "{k}");
    }
    assert_eq!(deleted.doc["identity_hash"], created.doc["identity_hash"]);

    // A second confirmation writes nothing.
    let before = f.txs();
    let again = f.indexer.index_file_deletion(&resolved).await.unwrap();
    assert_eq!(again.action, IndexAction::Unchanged);
    assert_eq!(f.txs(), before);

    let history = f.store.history(&created.object_id).await.unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(history[0].doc.as_ref().unwrap()["content"], "# hi");

    // Indexing the missing file is an error, not a second deletion.
    let err = f.indexer.index_file("a.md").await.unwrap_err();
    assert_eq!(err.code(), "FILE_NOT_FOUND");

    // The file comes back: a new version with content.
    f.write("a.md", "# back");
    let back = f.indexer.index_file("a.md").await.unwrap();
    assert_eq!(back.action, IndexAction::Updated);
    assert_eq!(f.store.history(&created.object_id).await.unwrap().len(), 3);
}

#[tokio::test]
async fn binary_non_utf8_and_too_large_are_metadata_only_with_a_reason() {
    let f = fixture_with(IndexerOptions {
        max_content_bytes: 64 * 1024,
        ..Default::default()
    });
    let binary = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    f.write("img.png", &binary);
    let non_utf8 = b"caf\xe9 latin-1\n".to_vec();
    f.write("latin1.txt", &non_utf8);
    let large: Vec<u8> = (0..200_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    f.write("big.log", &large);

    for (path, bytes, reason) in [
        ("img.png", &binary, "binary"),
        ("latin1.txt", &non_utf8, "non_utf8"),
        ("big.log", &large, "too_large"),
    ] {
        let r = f.indexer.index_file(path).await.unwrap();
        assert_eq!(r.action, IndexAction::Created, "{path}");
        assert!(
            r.doc["content"].is_null() && r.doc["content_hash"].is_null(),
            "{path}"
        );
        assert_eq!(s(&r.doc, "content_omitted"), Some(reason), "{path}");
        assert_eq!(s(&r.doc, "state"), Some("present"), "{path}");
        // A file over the limit is never read, so it has no hash.
        let hash = (reason != "too_large").then(|| sha256_hex(bytes));
        assert_eq!(s(&r.doc, "file_hash"), hash.as_deref(), "{path}");
        assert_eq!(r.doc["size_bytes"], bytes.len() as u64, "{path}");
        assert_eq!(r.doc["char_count"], 0, "{path}");
        // Metadata-only files are change-detected like any other.
        let before = f.txs();
        let again = f.indexer.index_file(path).await.unwrap();
        assert_eq!(again.action, IndexAction::Unchanged, "{path}");
        assert_eq!(f.txs(), before);
    }

    // Raising the limit lets the same bytes in: a new version with content.
    let bigger = Indexer::new(
        f.store.clone(),
        f.indexer.resolver.clone(),
        IndexerOptions {
            max_content_bytes: 1 << 20,
            ..Default::default()
        },
    );
    let r = bigger.index_file("big.log").await.unwrap();
    assert_eq!(r.action, IndexAction::Updated);
    assert_eq!(r.doc["char_count"], 200_000);
}

/// The error code of indexing `path`, asserting nothing was written.
async fn failing(f: &Fixture, path: &str) -> &'static str {
    let before = f.txs();
    // A FIFO must never be opened for reading (it would wait for a writer):
    // a deadline turns a hang into a failure.
    let err = tokio::time::timeout(Duration::from_secs(10), f.indexer.index_file(path))
        .await
        .unwrap_or_else(|_| panic!("indexing {path} hung"))
        .unwrap_err();
    assert_eq!(f.txs(), before, "{path}: nothing written");
    assert_eq!(
        f.store.latest_tx_id().await.unwrap(),
        None,
        "{path}: store empty"
    );
    err.code()
}

#[tokio::test]
async fn special_and_missing_files_are_coded_errors_with_zero_writes() {
    let f = fixture();
    std::fs::create_dir(f.root.join("dir")).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(f.root.join("pipe"))
        .status()
        .unwrap();
    assert!(status.success());
    let sock = std::os::unix::net::UnixListener::bind(f.root.join("sock")).unwrap();
    f.write("file.txt", "x");

    assert_eq!(failing(&f, "dir").await, "NOT_A_FILE");
    assert_eq!(failing(&f, "pipe").await, "NOT_A_FILE");
    assert_eq!(failing(&f, "sock").await, "NOT_A_FILE");
    assert_eq!(failing(&f, "/dev/null").await, "NOT_A_FILE");
    assert_eq!(failing(&f, "missing.txt").await, "FILE_NOT_FOUND");
    assert_eq!(failing(&f, "file.txt/child").await, "FILE_NOT_FOUND");
    assert_eq!(failing(&f, "").await, "INVALID_ARGUMENT");
    drop(sock);

    let err = f.indexer.index_file("dir").await.unwrap_err();
    assert!(err.to_string().contains("directory"), "{err}");
}

#[tokio::test]
async fn unreachable_sources_are_unreadable_not_guessed() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(EmbeddedStore::open_in_memory().unwrap());
    // Sandboxed agent, no mounts: nothing is readable from this client.
    let resolver = Arc::new(Resolver::new(
        "fs-sandbox".into(),
        dir.path().into(),
        vec![],
        false,
    ));
    let indexer = Indexer::new(store.clone(), resolver, IndexerOptions::default());
    std::fs::write(dir.path().join("a.txt"), "x").unwrap();
    let err = indexer.index_file("a.txt").await.unwrap_err();
    assert_eq!(err.code(), "FILE_UNREADABLE");
    assert_eq!(store.submitted_tx_count(), 0);
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Run by `permission_denied_is_unreadable` as an unprivileged child.
#[tokio::test]
async fn child_indexes_unreadable_file() {
    let Ok(path) = std::env::var("SCM_INDEXER_CHILD_PATH") else {
        return; // only meaningful in the child
    };
    let p = Path::new(&path);
    let store = Arc::new(EmbeddedStore::open_in_memory().unwrap());
    let resolver = Arc::new(Resolver::new(
        "fs".into(),
        p.parent().unwrap().into(),
        vec![],
        true,
    ));
    let indexer = Indexer::new(store.clone(), resolver, IndexerOptions::default());
    let err = indexer.index_file(&path).await.unwrap_err();
    println!("CODE={} TXS={}", err.code(), store.submitted_tx_count());
}

#[tokio::test]
async fn permission_denied_is_unreadable() {
    let f = fixture();
    let p = f.write("secret.txt", "nope");
    std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
    if !is_root() {
        assert_eq!(failing(&f, "secret.txt").await, "FILE_UNREADABLE");
        return;
    }
    // Root reads anything: drop to `nobody` in a child process instead.
    if std::process::Command::new("setpriv")
        .arg("--help")
        .output()
        .is_err()
    {
        eprintln!("skipped: running as root and setpriv is unavailable");
        return;
    }
    std::fs::set_permissions(&f.root, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_indexes_unreadable_file",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("SCM_INDEXER_CHILD_PATH", &p)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() && stdout.is_empty() {
        // e.g. the test binary itself is not readable by `nobody`.
        eprintln!(
            "skipped: cannot run as nobody: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    }
    assert!(
        stdout.contains("CODE=FILE_UNREADABLE TXS=0"),
        "child output: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Issue 14, defect 5: the size limit applies on the stat, before any read.
/// A 4 GiB sparse file (hashed whole before the fix: ~17 s) is indexed
/// metadata-only at once; a change of its size is a new version, the same
/// size and time are unchanged.
#[tokio::test]
async fn a_huge_file_is_not_read_before_the_size_limit_applies() {
    let f = fixture();
    let p = f.root.join("huge.bin");
    let file = std::fs::File::create(&p).unwrap();
    file.set_len(4 << 30).unwrap();
    let t = std::time::Instant::now();
    let r = f.indexer.index_file("huge.bin").await.unwrap();
    let took = t.elapsed();
    assert!(took < Duration::from_secs(2), "took {took:?}");
    assert_eq!(s(&r.doc, "content_omitted"), Some("too_large"));
    assert!(r.doc["file_hash"].is_null() && r.doc["content"].is_null());
    assert_eq!(r.doc["size_bytes"], 4u64 << 30);
    assert!(r.doc["mtime_ns"].as_i64().is_some());
    let before = f.txs();
    let again = f.indexer.index_file("huge.bin").await.unwrap();
    assert_eq!(again.action, IndexAction::Unchanged);
    assert_eq!(f.txs(), before);
    file.set_len(5 << 30).unwrap();
    let grown = f.indexer.index_file("huge.bin").await.unwrap();
    assert_eq!(grown.action, IndexAction::Updated);
    assert_eq!(grown.doc["size_bytes"], 5u64 << 30);
}

/// Issue 14, defect 2: a file on the secret list, or outside the workspace
/// and the mounts, is indexed metadata-only with the reason and never read;
/// opting in reads it.
#[tokio::test]
async fn secrets_and_files_outside_the_workspace_are_withheld() {
    let f = fixture();
    let outside = tempfile::tempdir().unwrap();
    let out_path = std::fs::canonicalize(outside.path())
        .unwrap()
        .join("shadow");
    std::fs::write(&out_path, "root:SECRET-OUTSIDE").unwrap();
    f.write(".env", "API_KEY=SECRET-ENV");
    f.write("config/server.pem", "SECRET-PEM");
    f.write("id_test.go", "package id");
    f.write(".env.example", "API_KEY=");
    let cases = [
        (".env", Some("secret")),
        ("config/server.pem", Some("secret")),
        (out_path.to_str().unwrap(), Some("outside_workspace")),
        ("id_test.go", None),
        (".env.example", None),
    ];
    for (path, withheld) in cases {
        let r = f.indexer.index_file(path).await.unwrap();
        assert_eq!(s(&r.doc, "withheld"), withheld, "{path}");
        if withheld.is_some() {
            assert_eq!(s(&r.doc, "content_omitted"), withheld, "{path}");
            assert!(r.doc["content"].is_null() && r.doc["file_hash"].is_null());
            let stored =
                serde_json::to_string(&f.store.history(&r.object_id).await.unwrap()).unwrap();
            assert!(!stored.contains("SECRET"), "{path}: {stored}");
        } else {
            assert!(r.doc["content"].is_string(), "{path}");
        }
    }
    // Opted in: read like any other file.
    let mut opts = IndexerOptions::default();
    opts.secrets.read_secrets = true;
    opts.secrets.read_outside_workspace = true;
    let open = Indexer::new(f.store.clone(), f.indexer.resolver.clone(), opts);
    for path in [".env", out_path.to_str().unwrap()] {
        let r = open.index_file(path).await.unwrap();
        assert_eq!(r.action, IndexAction::Updated, "{path}");
        assert!(s(&r.doc, "content").unwrap().contains("SECRET"), "{path}");
        assert!(r.doc.get("withheld").is_none());
    }
}
