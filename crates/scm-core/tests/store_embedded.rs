//! The embedded store: the conformance suite (in memory and on a file), plus
//! what only a file-backed store has to prove: several handles and several
//! processes on one file, crash safety, and clear errors for bad files.
//!
//! Child processes are this test binary re-run with `SCM_STORE_TEST_CHILD`
//! set; [`child_process_helper`] then plays the child's part.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use async_trait::async_trait;
use scm_core::store::embedded::{EmbeddedStore, SCHEMA_VERSION};
use scm_core::store::{conformance, AsOf, Document, Store, TxOp, TxReceipt, Version, ID_KEY};
use serde_json::{json, Value};

fn doc(id: &str, fields: Value) -> Document {
    let Value::Object(mut map) = fields else {
        panic!("fields must be an object")
    };
    map.insert(ID_KEY.into(), id.into());
    map
}

/// A file-backed store that deletes its directory when dropped.
struct TempStore {
    store: EmbeddedStore,
    _dir: tempfile::TempDir,
}

impl TempStore {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = EmbeddedStore::open(dir.path().join("store.db")).expect("open");
        Self { store, _dir: dir }
    }
}

#[async_trait]
impl Store for TempStore {
    fn kind(&self) -> &'static str {
        self.store.kind()
    }
    async fn submit(&self, ops: Vec<TxOp>) -> scm_core::Result<TxReceipt> {
        self.store.submit(ops).await
    }
    async fn get(&self, id: &str) -> scm_core::Result<Option<Document>> {
        self.store.get(id).await
    }
    async fn get_many(&self, ids: &[String]) -> scm_core::Result<Vec<Document>> {
        self.store.get_many(ids).await
    }
    async fn get_as_of(&self, id: &str, as_of: AsOf<'_>) -> scm_core::Result<Option<Document>> {
        self.store.get_as_of(id, as_of).await
    }
    async fn history(&self, id: &str) -> scm_core::Result<Vec<Version>> {
        self.store.history(id).await
    }
    async fn latest_tx_id(&self) -> scm_core::Result<Option<i64>> {
        self.store.latest_tx_id().await
    }
    async fn ids_of_type(&self, ty: &str) -> scm_core::Result<Vec<String>> {
        self.store.ids_of_type(ty).await
    }
    async fn counts(&self) -> scm_core::Result<scm_core::store::StoreCounts> {
        self.store.counts().await
    }
    fn submitted_tx_count(&self) -> u64 {
        self.store.submitted_tx_count()
    }
}

mod conformance_in_memory {
    use super::*;
    scm_core::store_conformance_tests!(async {
        Arc::new(EmbeddedStore::open_in_memory().expect("open")) as Arc<dyn Store>
    });
}

mod conformance_on_file {
    use super::*;
    scm_core::store_conformance_tests!(async { Arc::new(TempStore::new()) as Arc<dyn Store> });
}

/// The whole suite twice at once on one file through two handles: nothing
/// in it may assume an empty or private database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_all_twice_concurrently_on_one_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let a: Arc<dyn Store> = Arc::new(EmbeddedStore::open(&path).unwrap());
    let b: Arc<dyn Store> = Arc::new(EmbeddedStore::open(&path).unwrap());
    let (ra, rb) = tokio::join!(
        tokio::spawn(conformance::run_all(a)),
        tokio::spawn(conformance::run_all(b))
    );
    ra.unwrap();
    rb.unwrap();
}

#[tokio::test]
async fn two_handles_on_one_file_see_each_others_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let a = EmbeddedStore::open(&path).unwrap();
    let b = EmbeddedStore::open(&path).unwrap();
    let d1 = doc("x", json!({"by": "a"}));
    let r1 = a.submit(vec![TxOp::Put(d1.clone())]).await.unwrap();
    assert_eq!(b.get("x").await.unwrap(), Some(d1.clone()));
    let d2 = doc("x", json!({"by": "b"}));
    let r2 = b
        .submit(vec![
            TxOp::Match {
                id: "x".into(),
                expected: Some(d1),
            },
            TxOp::Put(d2.clone()),
        ])
        .await
        .unwrap();
    assert!(r2.committed && r2.tx_id == r1.tx_id + 1);
    assert_eq!(a.get("x").await.unwrap(), Some(d2));
    assert_eq!(a.latest_tx_id().await.unwrap(), Some(r2.tx_id));
    assert_eq!((a.submitted_tx_count(), b.submitted_tx_count()), (1, 1));
}

#[tokio::test]
async fn tx_times_are_utc_milliseconds_and_never_go_back() {
    let store = EmbeddedStore::open_in_memory().unwrap();
    let mut last = String::new();
    for n in 0..50 {
        let r = store
            .submit(vec![TxOp::Put(doc("t", json!({"n": n})))])
            .await
            .unwrap();
        let t = r.tx_time.as_bytes();
        assert_eq!(t.len(), 24, "{}", r.tx_time);
        assert_eq!((t[10], t[19], t[23]), (b'T', b'.', b'Z'), "{}", r.tx_time);
        assert!(r.tx_time >= last, "{} < {last}", r.tx_time);
        last = r.tx_time;
    }
}

// ------------------------------------------------------------ bad files

#[test]
fn opening_a_path_in_a_missing_directory_creates_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a/b/c/store.db");
    let store = EmbeddedStore::open(&path).unwrap();
    assert_eq!(store.path(), Some(path.as_path()));
    assert!(path.is_file());
}

#[test]
fn a_file_that_is_not_sqlite_is_store_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in [
        ("short.db", b"hello, not a database".to_vec()),
        ("long.db", b"not sqlite at all\n".repeat(1000)),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, &bytes).unwrap();
        let e = EmbeddedStore::open(&path).unwrap_err();
        assert_eq!(e.code(), "STORE_UNAVAILABLE", "{name}: {e}");
        assert!(
            e.to_string().contains("not a SQLite database"),
            "{name}: {e}"
        );
        assert_eq!(
            std::fs::read(&path).unwrap(),
            bytes,
            "{name} left untouched"
        );
    }
}

#[tokio::test]
async fn a_corrupted_store_file_is_store_unavailable_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    {
        let store = EmbeddedStore::open(&path).unwrap();
        for n in 0..200 {
            store
                .submit(vec![TxOp::Put(doc(
                    &format!("d{n}"),
                    json!({"pad": "x".repeat(500)}),
                ))])
                .await
                .unwrap();
        }
    } // last handle closed: WAL checkpointed into the main file
    let mut bytes = std::fs::read(&path).unwrap();
    assert!(bytes.len() > 8192, "store has several pages");
    for b in &mut bytes[100..] {
        *b = 0xA5; // keep the 100-byte header, trash every page
    }
    std::fs::write(&path, &bytes).unwrap();
    let result = match EmbeddedStore::open(&path) {
        Err(e) => Err(e),
        Ok(store) => store.get("d1").await.map(|_| ()),
    };
    let e = result.expect_err("reading a trashed file must fail");
    assert_eq!(e.code(), "STORE_UNAVAILABLE", "{e}");
    assert!(e.to_string().contains("corrupt"), "{e}");
}

#[test]
fn a_store_from_a_newer_schema_version_is_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    drop(EmbeddedStore::open(&path).unwrap());
    let raw = rusqlite::Connection::open(&path).unwrap();
    raw.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    drop(raw);
    let e = EmbeddedStore::open(&path).unwrap_err();
    assert_eq!(e.code(), "STORE_UNAVAILABLE");
    let msg = e.to_string();
    assert!(
        msg.contains("newer") && msg.contains("schema version 2"),
        "{msg}"
    );
}

#[test]
fn another_applications_sqlite_file_is_refused_and_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("theirs.db");
    let raw = rusqlite::Connection::open(&path).unwrap();
    raw.execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('keep me');")
        .unwrap();
    drop(raw);
    let e = EmbeddedStore::open(&path).unwrap_err();
    assert_eq!(e.code(), "STORE_UNAVAILABLE");
    assert!(e.to_string().contains("another application"), "{e}");
    let raw = rusqlite::Connection::open(&path).unwrap();
    let v: i64 = raw
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(v, 0, "their file was not stamped with our schema");
}

#[test]
fn the_file_is_plain_sqlite_with_json_documents() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let store = EmbeddedStore::open(&path).unwrap();
    let d = doc("file:1", json!({"content": "hi", "n": null}));
    let r = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(store.submit(vec![TxOp::Put(d.clone())]))
        .unwrap();
    let raw = rusqlite::Connection::open(&path).unwrap();
    let mode: String = raw
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal", "WAL is recorded in the file");
    let (text, tx_time, committed): (String, String, i64) = raw
        .query_row(
            "SELECT v.doc, t.tx_time, t.committed FROM versions v JOIN tx t USING (tx_id)
             WHERE v.id = 'file:1' AND v.tx_id = ?1",
            [r.tx_id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(serde_json::from_str::<Document>(&text).unwrap(), d);
    assert_eq!((tx_time, committed), (r.tx_time, 1));
    let json_field: String = raw
        .query_row(
            "SELECT json_extract(doc, '$.content') FROM versions WHERE id = 'file:1'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(json_field, "hi", "documents are queryable JSON text");
}

// ------------------------------------------------------- other processes

const CHILD_ENV: &str = "SCM_STORE_TEST_CHILD";

/// Re-run this test binary as a child playing `role` (see
/// `child_process_helper`). Its protocol lines on stdout carry "CHILD {json}".
fn spawn_child(role: Value) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "child_process_helper",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, role.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn child test process")
}

/// The child's protocol lines, as they arrive.
fn child_lines(child: &mut Child) -> impl Iterator<Item = Value> {
    let out = BufReader::new(child.stdout.take().unwrap());
    // libtest may print "test child_process_helper ... " on the same line.
    out.lines().map_while(Result::ok).filter_map(|l| {
        l.find("CHILD ")
            .map(|at| serde_json::from_str(&l[at + 6..]).expect("child line is JSON"))
    })
}

fn wait_ok(mut child: Child) {
    let status = child.wait().unwrap();
    assert!(status.success(), "child failed: {status}");
}

fn emit(v: Value) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "CHILD {v}").unwrap();
    out.flush().unwrap();
}

/// Not a test of its own: the body of child processes. Does nothing unless
/// `SCM_STORE_TEST_CHILD` names a role.
#[test]
fn child_process_helper() {
    let Ok(role) = std::env::var(CHILD_ENV) else {
        return;
    };
    let role: Value = serde_json::from_str(&role).unwrap();
    let path = PathBuf::from(role["path"].as_str().unwrap());
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    match role["mode"].as_str().unwrap() {
        // Put `count` versions of `id`; report each receipt.
        "put" => rt.block_on(async {
            let store = EmbeddedStore::open(&path).unwrap();
            let id = role["id"].as_str().unwrap();
            for n in 0..role["count"].as_u64().unwrap() {
                let d = doc(id, json!({"writer": role["writer"], "n": n}));
                let r = store.submit(vec![TxOp::Put(d)]).await.unwrap();
                emit(serde_json::to_value(&r).unwrap());
            }
        }),
        // Report the latest version of `id`.
        "get" => rt.block_on(async {
            let store = EmbeddedStore::open(&path).unwrap();
            let d = store.get(role["id"].as_str().unwrap()).await.unwrap();
            emit(json!({ "doc": d }));
        }),
        // Commit big transactions forever, reporting each; the parent kills us.
        "big_txs" => rt.block_on(async {
            let store = EmbeddedStore::open(&path).unwrap();
            let size = role["size"].as_u64().unwrap();
            for batch in 0.. {
                let ops = (0..size)
                    .map(|i| {
                        let id = format!("crash:{batch}:{i}");
                        TxOp::Put(doc(&id, json!({"batch": batch, "pad": "p".repeat(1000)})))
                    })
                    .collect();
                let r = store.submit(ops).await.unwrap();
                emit(json!({"batch": batch, "tx_id": r.tx_id}));
            }
        }),
        // Open a raw write transaction, spill uncommitted pages into the WAL,
        // report, then wait to be killed with the transaction open.
        "hold_open_tx" => {
            let mut raw = rusqlite::Connection::open(&path).unwrap();
            raw.pragma_update(None, "cache_size", 10).unwrap(); // force spills
            let tx = raw
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                .unwrap();
            let tx_id: i64 = tx
                .query_row("SELECT coalesce(max(tx_id), 0) + 1 FROM tx", [], |r| {
                    r.get(0)
                })
                .unwrap();
            tx.execute(
                "INSERT INTO tx VALUES (?1, '2000-01-01T00:00:00.000Z', 1)",
                [tx_id],
            )
            .unwrap();
            for i in 0..5000 {
                let d = doc(&format!("half:{i}"), json!({"pad": "h".repeat(1000)}));
                tx.execute(
                    "INSERT INTO versions VALUES (?1, ?2, ?3)",
                    rusqlite::params![
                        format!("half:{i}"),
                        tx_id,
                        serde_json::to_string(&d).unwrap()
                    ],
                )
                .unwrap();
            }
            emit(json!({"open_tx_id": tx_id}));
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).unwrap(); // blocks until killed
            panic!("the parent should have killed this child");
        }
        other => panic!("unknown child mode {other}"),
    }
}

#[tokio::test]
async fn a_second_process_sees_our_writes_and_we_see_its() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let store = EmbeddedStore::open(&path).unwrap();
    let ours = doc("shared", json!({"writer": "parent", "n": 0}));
    let r1 = store.submit(vec![TxOp::Put(ours.clone())]).await.unwrap();

    let mut child = spawn_child(json!({"mode": "get", "path": path, "id": "shared"}));
    let seen: Vec<Value> = child_lines(&mut child).collect();
    wait_ok(child);
    assert_eq!(seen, vec![json!({ "doc": ours })], "child reads our write");

    let mut child = spawn_child(
        json!({"mode": "put", "path": path, "id": "shared", "writer": "child", "count": 1}),
    );
    let receipts: Vec<TxReceipt> = child_lines(&mut child)
        .map(|v| serde_json::from_value(v).unwrap())
        .collect();
    wait_ok(child);
    let r2 = &receipts[0];
    let theirs = doc("shared", json!({"writer": "child", "n": 0}));
    assert_eq!(store.get("shared").await.unwrap(), Some(theirs));
    assert_eq!(store.latest_tx_id().await.unwrap(), Some(r2.tx_id));

    let r3 = store
        .submit(vec![TxOp::Put(doc(
            "shared",
            json!({"writer": "parent", "n": 1}),
        ))])
        .await
        .unwrap();
    assert!(
        r1.tx_id < r2.tx_id && r2.tx_id < r3.tx_id,
        "tx ids ascend across processes"
    );
    assert!(r1.tx_time <= r2.tx_time && r2.tx_time <= r3.tx_time);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_in_three_processes_interleave_without_losing_a_version() {
    const EACH: u64 = 40;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let store = Arc::new(EmbeddedStore::open(&path).unwrap());
    let children: Vec<Child> = ["c1", "c2"]
        .iter()
        .map(|w| {
            spawn_child(
                json!({"mode": "put", "path": path, "id": "hot", "writer": w, "count": EACH}),
            )
        })
        .collect();
    for n in 0..EACH {
        store
            .submit(vec![TxOp::Put(doc(
                "hot",
                json!({"writer": "parent", "n": n}),
            ))])
            .await
            .unwrap();
    }
    for c in children {
        wait_ok(c);
    }
    let history = store.history("hot").await.unwrap();
    assert_eq!(history.len() as u64, 3 * EACH);
    assert!(history.windows(2).all(|w| w[0].tx_id < w[1].tx_id));
    for w in ["parent", "c1", "c2"] {
        let ns: Vec<u64> = history
            .iter()
            .filter_map(|v| v.doc.as_ref())
            .filter(|d| d["writer"] == w)
            .map(|d| d["n"].as_u64().unwrap())
            .collect();
        assert_eq!(
            ns,
            (0..EACH).collect::<Vec<_>>(),
            "{w}'s versions, in its order"
        );
    }
}

// ----------------------------------------------------------------- crashes

/// Every transaction in the file is whole: all of a batch's documents or
/// none, and the file passes SQLite's integrity check.
fn assert_consistent(path: &Path, batch_size: i64) {
    let raw = rusqlite::Connection::open(path).unwrap();
    let check: String = raw
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let mut stmt = raw
        .prepare(
            "SELECT t.tx_id, t.committed, count(v.id) FROM tx t
             LEFT JOIN versions v ON v.tx_id = t.tx_id GROUP BY t.tx_id",
        )
        .unwrap();
    let rows: Vec<(i64, i64, i64)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for (tx_id, committed, n) in rows {
        assert!(
            (committed == 1 && (n == batch_size || n == 1)) || (committed == 0 && n == 0),
            "tx {tx_id}: committed={committed} with {n} versions"
        );
    }
}

#[tokio::test]
async fn killing_a_writer_mid_transaction_leaves_whole_transactions_only() {
    const SIZE: i64 = 2000;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let store = EmbeddedStore::open(&path).unwrap();
    store
        .submit(vec![TxOp::Put(doc("before", json!({})))])
        .await
        .unwrap();
    let mut child = spawn_child(json!({"mode": "big_txs", "path": path, "size": SIZE}));
    // The child does nothing but submit: once it has reported two commits it
    // is (almost always) inside the third when the kill lands.
    let reported: Vec<Value> = child_lines(&mut child).take(2).collect();
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        reported.len(),
        2,
        "child committed two batches before the kill"
    );

    assert_consistent(&path, SIZE);
    for r in &reported {
        let batch = r["batch"].as_i64().unwrap();
        let ids: Vec<String> = (0..SIZE).map(|i| format!("crash:{batch}:{i}")).collect();
        assert_eq!(store.get_many(&ids).await.unwrap().len() as i64, SIZE);
    }
    // The dead process's lock is gone: we can write straight away.
    let r = store
        .submit(vec![TxOp::Put(doc("after", json!({})))])
        .await
        .unwrap();
    assert!(r.committed);
    assert_consistent(&path, SIZE);
}

#[tokio::test]
async fn a_process_killed_with_an_open_transaction_leaves_no_trace() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let store = EmbeddedStore::open(&path).unwrap();
    let base = store
        .submit(vec![TxOp::Put(doc("before", json!({})))])
        .await
        .unwrap();
    let wal = path.with_extension("db-wal");
    let wal_before = std::fs::metadata(&wal).map_or(0, |m| m.len());

    let mut child = spawn_child(json!({"mode": "hold_open_tx", "path": path}));
    let open = child_lines(&mut child)
        .next()
        .expect("child reports its open tx");
    // Uncommitted pages really reached the file: a genuine mid-write crash.
    let wal_during = std::fs::metadata(&wal).map_or(0, |m| m.len());
    assert!(
        wal_during > wal_before + 1_000_000,
        "WAL {wal_before} → {wal_during}"
    );
    // Reads don't wait for the writer and don't see its pages.
    assert_eq!(store.get("half:0").await.unwrap(), None);
    child.kill().unwrap();
    child.wait().unwrap();

    assert_eq!(open["open_tx_id"], base.tx_id + 1);
    assert_eq!(store.latest_tx_id().await.unwrap(), Some(base.tx_id));
    assert_eq!(store.get("half:0").await.unwrap(), None);
    assert_eq!(store.get("half:4999").await.unwrap(), None);
    let r = store
        .submit(vec![TxOp::Put(doc("after", json!({})))])
        .await
        .unwrap();
    assert_eq!(
        r.tx_id,
        base.tx_id + 1,
        "the dead tx's id was never committed"
    );
    assert_consistent(&path, 1);
    // A fresh handle (new process state) agrees.
    drop(store);
    let again = EmbeddedStore::open(&path).unwrap();
    assert_eq!(again.latest_tx_id().await.unwrap(), Some(r.tx_id));
}

/// Issue 14, defect 2: the store is private to the user. A new `.scm/`
/// directory is 0700 with a `.gitignore` of `*`; the database and SQLite's
/// `-wal`/`-shm` files are 0600 whatever the umask; an existing store
/// created world-readable is narrowed on open.
#[tokio::test]
async fn the_store_directory_and_files_are_private_to_the_user() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let dir = tempfile::tempdir().unwrap();
    let scm = dir.path().join(".scm");
    let path = scm.join("store.sqlite");
    let store = EmbeddedStore::open(&path).unwrap();
    store
        .submit(vec![scm_core::store::TxOp::Put(
            serde_json::json!({"xt/id": "a", "v": 1})
                .as_object()
                .unwrap()
                .clone(),
        )])
        .await
        .unwrap();
    assert_eq!(mode(&scm), 0o700);
    let ignore = std::fs::read_to_string(scm.join(".gitignore")).unwrap();
    assert!(ignore.lines().any(|l| l == "*"), "{ignore}");
    for name in ["store.sqlite", "store.sqlite-wal", "store.sqlite-shm"] {
        let p = scm.join(name);
        assert!(p.exists(), "{name}");
        assert_eq!(mode(&p), 0o600, "{name}");
    }
    drop(store);
    // A store left world-readable by an earlier version is narrowed.
    for name in ["store.sqlite", "store.sqlite-wal", "store.sqlite-shm"] {
        let p = scm.join(name);
        if p.exists() {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
    }
    std::fs::set_permissions(&scm, std::fs::Permissions::from_mode(0o755)).unwrap();
    let _store = EmbeddedStore::open(&path).unwrap();
    assert_eq!(mode(&scm), 0o700);
    assert_eq!(mode(&path), 0o600);
}
