//! The embedded store: one SQLite file, zero setup, the default backend.
//!
//! Semantics match the XTDB v1 backend (see `conformance`): every `submit` is
//! one atomic transaction with a monotonic tx id and a non-decreasing tx time;
//! a failed `Match` aborts the whole transaction but still consumes a tx id
//! (recorded with `committed = 0`, like XTDB's `tx-committed? false`); history
//! is append-only.
//!
//! Schema (version [`SCHEMA_VERSION`], kept in `PRAGMA user_version`; the file
//! is marked with `PRAGMA application_id` = [`APPLICATION_ID`]):
//!
//! ```sql
//! tx(tx_id INTEGER PRIMARY KEY, tx_time TEXT, committed INTEGER)
//! versions(id TEXT, tx_id INTEGER REFERENCES tx, doc TEXT, PRIMARY KEY (id, tx_id))
//! ```
//!
//! `versions` is a rowid table on purpose: documents are kilobytes, and a
//! `WITHOUT ROWID` table would carry them inside its key B-tree (measured: 2×
//! slower gets, 5× slower `get_many`). Lookups go through the small
//! `(id, tx_id)` index.
//!
//! Documents are stored as JSON text so `sqlite3 store.db "select doc from
//! versions"` shows them as they are. `tx_time` is always UTC with exactly
//! three fractional digits (`2025-01-02T03:04:05.678Z`), so text order is time
//! order.
//!
//! Durability: WAL with `synchronous = FULL`. A crash at any point (process
//! killed, power lost) leaves either the whole transaction or none of it, and
//! with FULL a transaction whose `submit` returned is on disk: its tx id may
//! already have been recorded elsewhere (a static reference shown to the LLM),
//! so losing it and later reusing the id for other content would silently
//! corrupt reconstruction. The price is one WAL fsync per commit.
//!
//! Several processes may share the file: SQLite's file locks serialise
//! writers (`BEGIN IMMEDIATE` + `busy_timeout`), WAL lets readers run beside a
//! writer, and every read sees everything committed before it started. WAL
//! needs shared memory, so the file must live on a local filesystem (not NFS).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use rusqlite::{ffi, Connection, OpenFlags, OptionalExtension, TransactionBehavior};

use super::{AsOf, Document, Store, StoreCounts, TxOp, TxReceipt, Version, ID_KEY};
use crate::error::{Error, Result};

/// Schema version written to `PRAGMA user_version`. Bump it with a migration.
pub const SCHEMA_VERSION: i64 = 1;

/// `PRAGMA application_id` of store files: ASCII "SCM1". Lets `file(1)` and
/// this code tell our store from some other SQLite database.
pub const APPLICATION_ID: i64 = 0x5343_4d31;

/// How long a call waits for another connection's write lock before failing
/// with `STORE_TIMEOUT`. Writes are milliseconds long, so hitting this means a
/// stuck process rather than contention.
pub const BUSY_TIMEOUT_MS: u64 = 10_000;

const SCHEMA_SQL: &str = "
CREATE TABLE tx (
    tx_id     INTEGER PRIMARY KEY,
    tx_time   TEXT    NOT NULL,
    committed INTEGER NOT NULL CHECK (committed IN (0, 1))
);
CREATE INDEX tx_by_time ON tx (tx_time);
CREATE TABLE versions (
    id    TEXT    NOT NULL,
    tx_id INTEGER NOT NULL REFERENCES tx (tx_id),
    doc   TEXT    NOT NULL,
    PRIMARY KEY (id, tx_id)
);
";

/// The SQLite-backed [`Store`].
///
/// The connection sits behind a `std::sync::Mutex` and every call runs inline
/// on the calling task: rusqlite's `Connection` is `Send` but not `Sync`, and
/// each operation is one short statement batch (microseconds for reads, one
/// fsync for a commit), cheaper than a `spawn_blocking` thread hop. No method
/// awaits while holding the lock (none awaits at all). Only waiting for
/// another process's write lock can block a worker thread, bounded by
/// [`BUSY_TIMEOUT_MS`].
pub struct EmbeddedStore {
    conn: Mutex<Connection>,
    /// File path, or `None` for an in-memory store.
    path: Option<PathBuf>,
    submitted: AtomicU64,
}

impl std::fmt::Debug for EmbeddedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedStore")
            .field("location", &self.location())
            .finish_non_exhaustive()
    }
}

/// Creates `dir` (and missing parents) `0700`; a directory named `.scm`
/// is narrowed to `0700` and gets a `.gitignore` of `*`.
fn make_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    if dir.file_name().is_some_and(|n| n == ".scm") {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        let ignore = dir.join(".gitignore");
        if !ignore.exists() {
            std::fs::write(
                &ignore,
                "# The context manager's store: never commit it.\n*\n",
            )?;
        }
    }
    Ok(())
}

/// Creates the store file `0600` (before SQLite does, with its `0644`),
/// and narrows an existing one and its `-wal`/`-shm` files to `0600`.
fn make_private_file(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)?;
    let mut names = vec![path.as_os_str().to_owned()];
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut n = path.as_os_str().to_owned();
        n.push(suffix);
        names.push(n);
    }
    for n in names {
        let p = Path::new(&n);
        match std::fs::metadata(p) {
            Ok(m) if m.permissions().mode() & 0o077 != 0 => {
                std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o600))?;
            }
            _ => {}
        }
    }
    Ok(())
}

impl EmbeddedStore {
    /// Open (or create) the store file at `path`, creating missing parent
    /// directories. Fails with `STORE_UNAVAILABLE` when the file is not a
    /// SQLite database, is corrupt, belongs to another application or has a
    /// newer schema than this build understands.
    ///
    /// Private to the user (issue 14, defect 2): directories it creates are
    /// `0700`; the store file is created `0600` and an existing one (with its
    /// `-wal` and `-shm` files, which SQLite creates with the database's
    /// mode) is narrowed to `0600`. A store directory named `.scm` is made
    /// `0700` and gets a `.gitignore` of `*` when it has none, so the store
    /// is never committed.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            make_private_dir(dir).map_err(|e| {
                Error::StoreUnavailable(format!(
                    "cannot create store directory {}: {e}",
                    dir.display()
                ))
            })?;
        }
        make_private_file(path).map_err(|e| {
            Error::StoreUnavailable(format!("cannot create store {}: {e}", path.display()))
        })?;
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(|e| {
            Error::StoreUnavailable(format!("cannot open store {}: {e}", path.display()))
        })?;
        Self::init(conn, Some(path.to_path_buf()))
    }

    /// A private in-memory store (unit tests, throwaway sessions). Nothing is
    /// shared with other handles or persisted.
    pub fn open_in_memory() -> Result<Self> {
        let conn = Connection::open_in_memory()
            .map_err(|e| Error::StoreUnavailable(format!("cannot open in-memory store: {e}")))?;
        Self::init(conn, None)
    }

    /// The store file, or `None` when in memory.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    fn location(&self) -> String {
        location_of(self.path.as_deref())
    }

    fn init(conn: Connection, path: Option<PathBuf>) -> Result<Self> {
        let location = location_of(path.as_deref());
        // The first statement that touches the file is where a non-SQLite or
        // corrupt file shows up: say so plainly.
        let bad_file = |e: rusqlite::Error| {
            match sqlite_code(&e) {
            Some(ffi::ErrorCode::NotADatabase | ffi::ErrorCode::DatabaseCorrupt) => {
                Error::StoreUnavailable(format!(
                    "{location} is not a self-context-manager store: not a SQLite database or corrupt ({e})"
                ))
            }
            _ => map_err(&location, "open", e),
        }
        };
        conn.busy_timeout(Duration::from_millis(BUSY_TIMEOUT_MS))
            .map_err(bad_file)?;
        // Identify the file before changing anything in it.
        let app_id: i64 = conn
            .pragma_query_value(None, "application_id", |r| r.get(0))
            .map_err(bad_file)?;
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(bad_file)?;
        check_identity(&location, app_id, version)?;
        // journal_mode=WAL is persistent in the file; in memory it stays "memory".
        let _mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
            .map_err(bad_file)?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(bad_file)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(bad_file)?;
        let store = Self {
            conn: Mutex::new(conn),
            path,
            submitted: AtomicU64::new(0),
        };
        if version != SCHEMA_VERSION {
            store.migrate()?;
        }
        store.ensure_search_index()?;
        Ok(store)
    }

    /// Create the schema in a fresh file. Runs under the write lock and
    /// re-reads the version, so two processes opening a new file at once
    /// create it exactly once.
    fn migrate(&self) -> Result<()> {
        let location = self.location();
        let err = |e| map_err(&location, "schema setup", e);
        let mut conn = self.lock();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        let app_id: i64 = tx
            .pragma_query_value(None, "application_id", |r| r.get(0))
            .map_err(err)?;
        let version: i64 = tx
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(err)?;
        check_identity(&location, app_id, version)?;
        if version == SCHEMA_VERSION {
            return Ok(()); // another process created it meanwhile
        }
        // version 0 and no application id: a brand-new file, unless someone
        // else's tables are in it.
        let foreign_tables: i64 = tx
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%'",
                [],
                |r| r.get(0),
            )
            .map_err(err)?;
        if foreign_tables > 0 {
            return Err(Error::StoreUnavailable(format!(
                "{location} is a SQLite database of another application (it has tables but no self-context-manager schema); refusing to modify it"
            )));
        }
        tx.execute_batch(SCHEMA_SQL).map_err(err)?;
        tx.pragma_update(None, "application_id", APPLICATION_ID)
            .map_err(err)?;
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(err)?;
        tx.commit().map_err(err)
    }

    /// The full-text index (`memory::search::fts`): created in files written
    /// before it existed and caught up with transactions it missed, under
    /// the write lock.
    fn ensure_search_index(&self) -> Result<()> {
        let location = self.location();
        let err = |e| map_err(&location, "search index setup", e);
        let mut conn = self.lock();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        crate::store::search::fts::ensure(&tx).map_err(err)?;
        tx.commit().map_err(err)
    }

    /// Poisoning only means another caller panicked mid-call; its open SQLite
    /// transaction was rolled back when its guard dropped, so the connection
    /// is still consistent.
    fn lock(&self) -> MutexGuard<'_, Connection> {
        self.conn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn submit_sync(&self, ops: Vec<TxOp>) -> Result<TxReceipt> {
        // Validate and serialise before taking any lock.
        let mut puts: Vec<(String, String)> = Vec::new();
        let mut search_rows = Vec::new();
        let mut matches: Vec<(String, Option<Document>)> = Vec::new();
        for op in ops {
            match op {
                TxOp::Put(doc) => {
                    let id = doc_id(&doc)?.to_owned();
                    search_rows.push((id.clone(), crate::store::search::row_of(&doc)));
                    puts.push((id, serde_json::to_string(&doc)?));
                }
                TxOp::Match { id, expected } => matches.push((id, expected)),
            }
        }
        self.submitted.fetch_add(1, Ordering::Relaxed);

        let location = self.location();
        let err = |e| map_err(&location, "submit", e);
        let mut conn = self.lock();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        let last: Option<(i64, String)> = tx
            .prepare_cached("SELECT tx_id, tx_time FROM tx ORDER BY tx_id DESC LIMIT 1")
            .map_err(err)?
            .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
            .map_err(err)?;
        let (tx_id, tx_ms) = match &last {
            None => (1, now_millis()),
            // Clocks can step back (NTP, another machine's process): never let
            // tx time go backwards, as-of-time reads depend on it.
            Some((id, time)) => (id + 1, now_millis().max(parse_rfc3339_millis(time)?)),
        };
        let tx_time = format_rfc3339_millis(tx_ms);

        // Like XTDB, every match sees the state before this transaction.
        let mut committed = true;
        for (id, expected) in &matches {
            let current = latest_doc(&tx, id, &location)?;
            if current.as_ref() != expected.as_ref() {
                committed = false;
                break;
            }
        }

        tx.prepare_cached("INSERT INTO tx (tx_id, tx_time, committed) VALUES (?1, ?2, ?3)")
            .map_err(err)?
            .execute(rusqlite::params![tx_id, tx_time, committed])
            .map_err(err)?;
        if committed {
            // Two puts of one id in one transaction: the last wins (as in XTDB).
            let mut insert = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO versions (id, tx_id, doc) VALUES (?1, ?2, ?3)",
                )
                .map_err(err)?;
            for (id, doc) in &puts {
                insert
                    .execute(rusqlite::params![id, tx_id, doc])
                    .map_err(err)?;
            }
            // The full-text index commits with the versions it indexes.
            crate::store::search::fts::index(&tx, tx_id, &tx_time, &search_rows).map_err(err)?;
        }
        tx.commit().map_err(err)?;
        Ok(TxReceipt {
            tx_id,
            tx_time,
            committed,
        })
    }

    fn get_sync(&self, id: &str) -> Result<Option<Document>> {
        let location = self.location();
        let conn = self.lock();
        latest_doc(&conn, id, &location)
    }

    fn get_many_sync(&self, ids: &[String]) -> Result<Vec<Document>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let location = self.location();
        let err = |e| map_err(&location, "get_many", e);
        let ids_json = serde_json::to_string(ids)?;
        let conn = self.lock();
        // One statement for all ids; results come back in request order.
        let mut stmt = conn
            .prepare_cached(
                "SELECT v.id, v.doc FROM json_each(?1) AS j
                 JOIN versions AS v ON v.id = j.value
                 WHERE v.tx_id = (SELECT max(tx_id) FROM versions WHERE id = j.value)
                 ORDER BY j.key",
            )
            .map_err(err)?;
        let rows = stmt
            .query_map([ids_json], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })
            .map_err(err)?;
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for row in rows {
            let (id, text) = row.map_err(err)?;
            if seen.insert(id) {
                out.push(parse_doc(&text, &location)?);
            }
        }
        Ok(out)
    }

    fn get_as_of_sync(&self, id: &str, as_of: AsOf<'_>) -> Result<Option<Document>> {
        let location = self.location();
        let err = |e| map_err(&location, "get_as_of", e);
        let conn = self.lock();
        let text: Option<String> = match as_of {
            AsOf::TxId(tx_id) => conn
                .prepare_cached(
                    "SELECT doc FROM versions WHERE id = ?1 AND tx_id <= ?2
                     ORDER BY tx_id DESC LIMIT 1",
                )
                .map_err(err)?
                .query_row(rusqlite::params![id, tx_id], |r| r.get(0))
                .optional()
                .map_err(err)?,
            AsOf::TxTime(time) => {
                // Canonical form compares as text; sub-millisecond digits can
                // be dropped because stored times are whole milliseconds.
                let time = format_rfc3339_millis(parse_rfc3339_millis(time)?);
                conn.prepare_cached(
                    "SELECT doc FROM versions WHERE id = ?1
                       AND tx_id <= (SELECT max(tx_id) FROM tx WHERE tx_time <= ?2)
                     ORDER BY tx_id DESC LIMIT 1",
                )
                .map_err(err)?
                .query_row(rusqlite::params![id, time], |r| r.get(0))
                .optional()
                .map_err(err)?
            }
        };
        text.map(|t| parse_doc(&t, &location)).transpose()
    }

    fn history_sync(&self, id: &str) -> Result<Vec<Version>> {
        let location = self.location();
        let err = |e| map_err(&location, "history", e);
        let conn = self.lock();
        let mut stmt = conn
            .prepare_cached(
                "SELECT v.tx_id, t.tx_time, v.doc FROM versions AS v
                 JOIN tx AS t ON t.tx_id = v.tx_id
                 WHERE v.id = ?1 ORDER BY v.tx_id",
            )
            .map_err(err)?;
        let rows = stmt
            .query_map([id], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .map_err(err)?;
        let mut out = Vec::new();
        for row in rows {
            let (tx_id, tx_time, text) = row.map_err(err)?;
            out.push(Version {
                tx_id,
                tx_time,
                doc: Some(parse_doc(&text, &location)?),
            });
        }
        Ok(out)
    }

    fn ids_of_type_sync(&self, ty: &str) -> Result<Vec<String>> {
        let location = self.location();
        let err = |e| map_err(&location, "ids_of_type", e);
        let conn = self.lock();
        let mut stmt = conn
            .prepare_cached(
                "SELECT v.id FROM versions AS v
                 WHERE v.tx_id = (SELECT max(tx_id) FROM versions WHERE id = v.id)
                   AND json_extract(v.doc, '$.type') = ?1
                 ORDER BY v.id",
            )
            .map_err(err)?;
        let ids = stmt
            .query_map([ty], |r| r.get(0))
            .map_err(err)?
            .collect::<rusqlite::Result<Vec<String>>>()
            .map_err(err)?;
        Ok(ids)
    }

    fn backlinks_sync(&self, id: &str) -> Result<Vec<String>> {
        let location = self.location();
        let err = |e| map_err(&location, "backlinks", e);
        let conn = self.lock();
        // Only documents that have links at all are opened by json_each.
        let mut stmt = conn
            .prepare_cached(
                "SELECT DISTINCT v.id FROM versions AS v, json_each(v.doc, '$.link_ids') AS j
                 WHERE instr(v.doc, '\"link_ids\"') > 0
                   AND j.value = ?1
                   AND v.tx_id = (SELECT max(tx_id) FROM versions WHERE id = v.id)
                 ORDER BY v.id",
            )
            .map_err(err)?;
        let ids = stmt
            .query_map([id], |r| r.get(0))
            .map_err(err)?
            .collect::<rusqlite::Result<Vec<String>>>()
            .map_err(err)?;
        Ok(ids)
    }

    fn counts_sync(&self) -> Result<StoreCounts> {
        let location = self.location();
        let err = |e| map_err(&location, "counts", e);
        let conn = self.lock();
        let (objects, versions): (i64, i64) = conn
            .prepare_cached("SELECT count(DISTINCT id), count(*) FROM versions")
            .map_err(err)?
            .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(err)?;
        let bytes: i64 = conn
            .query_row(
                "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()",
                [],
                |r| r.get(0),
            )
            .map_err(err)?;
        Ok(StoreCounts {
            objects: objects as u64,
            versions: versions as u64,
            bytes: Some(bytes as u64),
        })
    }

    fn latest_tx_id_sync(&self) -> Result<Option<i64>> {
        let location = self.location();
        let err = |e| map_err(&location, "latest_tx_id", e);
        let conn = self.lock();
        let latest = conn
            .prepare_cached("SELECT max(tx_id) FROM tx")
            .map_err(err)?
            .query_row([], |r| r.get(0))
            .map_err(err)?;
        Ok(latest)
    }
}

#[async_trait]
impl Store for EmbeddedStore {
    fn kind(&self) -> &'static str {
        "embedded"
    }

    async fn submit(&self, ops: Vec<TxOp>) -> Result<TxReceipt> {
        self.submit_sync(ops)
    }

    async fn get(&self, id: &str) -> Result<Option<Document>> {
        self.get_sync(id)
    }

    async fn get_many(&self, ids: &[String]) -> Result<Vec<Document>> {
        self.get_many_sync(ids)
    }

    async fn get_as_of(&self, id: &str, as_of: AsOf<'_>) -> Result<Option<Document>> {
        self.get_as_of_sync(id, as_of)
    }

    async fn history(&self, id: &str) -> Result<Vec<Version>> {
        self.history_sync(id)
    }

    async fn latest_tx_id(&self) -> Result<Option<i64>> {
        self.latest_tx_id_sync()
    }

    async fn ids_of_type(&self, ty: &str) -> Result<Vec<String>> {
        self.ids_of_type_sync(ty)
    }

    async fn counts(&self) -> Result<StoreCounts> {
        self.counts_sync()
    }

    async fn backlinks(&self, id: &str) -> Result<Vec<String>> {
        self.backlinks_sync(id)
    }

    async fn all_ids(&self) -> Result<Vec<String>> {
        let location = self.location();
        let err = |e| map_err(&location, "all_ids", e);
        let conn = self.lock();
        let mut stmt = conn
            .prepare_cached("SELECT DISTINCT id FROM versions ORDER BY id")
            .map_err(err)?;
        let ids = stmt
            .query_map([], |r| r.get(0))
            .map_err(err)?
            .collect::<rusqlite::Result<Vec<String>>>()
            .map_err(err)?;
        Ok(ids)
    }

    async fn search(
        &self,
        query: &crate::store::search::SearchQuery,
    ) -> Result<Vec<crate::store::search::SearchHit>> {
        let location = self.location();
        let conn = self.lock();
        crate::store::search::fts::search(&conn, query).map_err(|e| map_err(&location, "search", e))
    }

    fn submitted_tx_count(&self) -> u64 {
        self.submitted.load(Ordering::Relaxed)
    }
}

fn location_of(path: Option<&Path>) -> String {
    match path {
        Some(p) => format!("store file {}", p.display()),
        None => "in-memory store".to_owned(),
    }
}

fn check_identity(location: &str, app_id: i64, version: i64) -> Result<()> {
    if app_id != 0 && app_id != APPLICATION_ID {
        return Err(Error::StoreUnavailable(format!(
            "{location} belongs to another application (application_id {app_id:#x}); refusing to use it"
        )));
    }
    if version > SCHEMA_VERSION {
        return Err(Error::StoreUnavailable(format!(
            "{location} has schema version {version}, newer than this build supports ({SCHEMA_VERSION}); upgrade self-context-manager or point SCM_STORE_PATH elsewhere"
        )));
    }
    if version != 0 && version != SCHEMA_VERSION {
        return Err(Error::StoreUnavailable(format!(
            "{location} has unknown schema version {version} (this build supports {SCHEMA_VERSION})"
        )));
    }
    Ok(())
}

fn latest_doc(conn: &Connection, id: &str, location: &str) -> Result<Option<Document>> {
    let err = |e| map_err(location, "get", e);
    let text: Option<String> = conn
        .prepare_cached("SELECT doc FROM versions WHERE id = ?1 ORDER BY tx_id DESC LIMIT 1")
        .map_err(err)?
        .query_row([id], |r| r.get(0))
        .optional()
        .map_err(err)?;
    text.map(|t| parse_doc(&t, location)).transpose()
}

fn doc_id(doc: &Document) -> Result<&str> {
    match doc.get(ID_KEY) {
        Some(serde_json::Value::String(id)) => Ok(id),
        Some(other) => Err(Error::InvalidArgument(format!(
            "document \"{ID_KEY}\" must be a string, got {other}"
        ))),
        None => Err(Error::InvalidArgument(format!(
            "document has no \"{ID_KEY}\" key"
        ))),
    }
}

fn parse_doc(text: &str, location: &str) -> Result<Document> {
    serde_json::from_str(text).map_err(|e| {
        Error::StoreProtocol(format!(
            "{location} holds a document that is not a JSON object: {e}"
        ))
    })
}

fn sqlite_code(e: &rusqlite::Error) -> Option<ffi::ErrorCode> {
    match e {
        rusqlite::Error::SqliteFailure(f, _) => Some(f.code),
        _ => None,
    }
}

fn map_err(location: &str, what: &str, e: rusqlite::Error) -> Error {
    use ffi::ErrorCode as C;
    match sqlite_code(&e) {
        Some(C::DatabaseBusy | C::DatabaseLocked) => Error::StoreTimeout {
            what: format!("{what} on {location}: waiting for another writer's lock"),
            timeout_ms: BUSY_TIMEOUT_MS,
        },
        Some(
            C::CannotOpen
            | C::PermissionDenied
            | C::ReadOnly
            | C::DiskFull
            | C::SystemIoFailure
            | C::FileLockingProtocolFailed
            | C::NoLargeFileSupport,
        ) => Error::StoreUnavailable(format!("{what} on {location}: {e}")),
        Some(C::NotADatabase | C::DatabaseCorrupt) => Error::StoreUnavailable(format!(
            "{what} on {location}: the file is corrupt or not a SQLite database ({e})"
        )),
        _ => Error::Internal(format!("{what} on {location}: {e}")),
    }
}

pub use super::time::{format_rfc3339_millis, parse_rfc3339_millis};

fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_are_wal_full_sync_with_busy_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(dir.path().join("s.db")).unwrap();
        let conn = store.lock();
        let get = |name: &str| -> String {
            conn.query_row(&format!("PRAGMA {name}"), [], |r| {
                r.get::<_, rusqlite::types::Value>(0)
            })
            .map(|v| format!("{v:?}"))
            .unwrap()
        };
        assert_eq!(get("journal_mode"), "Text(\"wal\")");
        assert_eq!(get("synchronous"), "Integer(2)", "2 = FULL");
        assert_eq!(get("busy_timeout"), format!("Integer({BUSY_TIMEOUT_MS})"));
        assert_eq!(get("foreign_keys"), "Integer(1)");
        assert_eq!(get("user_version"), format!("Integer({SCHEMA_VERSION})"));
        assert_eq!(get("application_id"), format!("Integer({APPLICATION_ID})"));
    }

    #[tokio::test]
    async fn put_without_string_id_is_invalid_argument() {
        let store = EmbeddedStore::open_in_memory().unwrap();
        let mut doc = Document::new();
        doc.insert("x".into(), 1.into());
        let e = store
            .submit(vec![TxOp::Put(doc.clone())])
            .await
            .unwrap_err();
        assert_eq!(e.code(), "INVALID_ARGUMENT");
        doc.insert(ID_KEY.into(), 7.into());
        let e = store.submit(vec![TxOp::Put(doc)]).await.unwrap_err();
        assert_eq!(e.code(), "INVALID_ARGUMENT");
        assert_eq!(store.submitted_tx_count(), 0);
        assert_eq!(store.latest_tx_id().await.unwrap(), None);
    }
}
