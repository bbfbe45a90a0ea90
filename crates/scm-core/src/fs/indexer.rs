//! Indexing protocol (SSOT §5.5, implementation-plan §4): files → versioned
//! file objects. Unchanged `file_hash` → one lookup, zero writes.
//!
//! Reading a source never writes anything until the bytes are in hand, so a
//! bad input (missing, unreadable, special file, vanished mid-read) is a coded
//! error with zero writes:
//!
//! | input                                   | result                                  |
//! |-----------------------------------------|-----------------------------------------|
//! | missing path (or a parent is a file)    | `FILE_NOT_FOUND`                        |
//! | permission denied, symlink loop, other  | `FILE_UNREADABLE`                       |
//! | directory, FIFO, socket, device         | `NOT_A_FILE` (a FIFO is never opened)   |
//! | not reachable from this client          | `FILE_UNREADABLE`                       |
//! | vanished between stat and read          | `FILE_NOT_FOUND`                        |
//! | larger than `max_content_bytes` (stat)  | metadata-only, `content_omitted: too_large`, never read: no `file_hash`, `size_bytes` + `mtime_ns` |
//! | grew past the limit between stat and read | the same, after reading limit + 1 bytes  |
//! | matches the secret list                 | metadata-only, `withheld: secret`, never read (unless opted in) |
//! | outside the workspace and the mounts    | metadata-only, `withheld: outside_workspace`, never read (unless opted in) |
//! | NUL byte in the first 8 KiB             | metadata-only, `content_omitted: binary` |
//! | not valid UTF-8                         | metadata-only, `content_omitted: non_utf8` |

use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::fs::resolver::{ResolvedPath, Resolver};
use crate::model::{file_document, ContentOmitted, FilePayload, FilesystemSource};
use crate::store::{Document, Store, TxOp, TxReceipt};

/// Descriptive (unhashed) link on the deletion version written for a rename:
/// the object id at the new path.
pub const RENAMED_TO: &str = "renamed_to";
/// Descriptive (unhashed) link on the new object written for a rename: the
/// object id at the old path.
pub const RENAMED_FROM: &str = "renamed_from";

/// Compare-and-set attempts of one indexing call before `CAS_CONFLICT`.
const CAS_ATTEMPTS: usize = 16;

/// Files per transaction of [`Indexer::index_many`].
pub const BATCH_FILES: usize = 256;

/// How many leading bytes are checked for NUL to call a file binary.
const BINARY_SNIFF_BYTES: usize = 8 * 1024;

/// What indexing did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexAction {
    Created,
    Updated,
    Unchanged,
}

impl IndexAction {
    pub fn as_str(self) -> &'static str {
        match self {
            IndexAction::Created => "created",
            IndexAction::Updated => "updated",
            IndexAction::Unchanged => "unchanged",
        }
    }
}

#[derive(Debug, Clone)]
pub struct IndexResult {
    pub object_id: String,
    pub action: IndexAction,
    /// The latest document after indexing (the stored one when unchanged).
    pub doc: Document,
    /// Receipt of the write; None when nothing was written.
    pub receipt: Option<TxReceipt>,
}

/// A file's next version, planned against the version it derives from —
/// what a session queues, to land in one transaction with its own
/// documents, or what the indexer writes itself (a watcher, a note folder).
#[derive(Debug, Clone)]
pub struct VersionPlan {
    pub object_id: String,
    pub action: IndexAction,
    /// The new version; when unchanged, the latest one.
    pub doc: Document,
    /// The version it derives from (None: the file has none yet). Its
    /// write is a compare-and-set on it (issue 14).
    pub base: Option<Document>,
    /// When the file was about to be read (None: not read here). A session
    /// ignores a watcher's report read earlier than this (see
    /// [`crate::fs::watcher::WatchEvent`]).
    pub read_at: Option<std::time::Instant>,
}

impl VersionPlan {
    /// The one place a file version is built from what was read: unchanged
    /// when `latest` already reflects it (for bytes: `same_source_state`;
    /// for a deletion: `latest` records one), else a new version, with
    /// `link` (a rename's `renamed_from`) when given.
    pub fn of(
        source: &FilesystemSource,
        payload: FilePayload,
        latest: Option<Document>,
        link: Option<(&str, &str)>,
    ) -> VersionPlan {
        let object_id = source.file_object_id();
        let unchanged = latest.as_ref().is_some_and(|d| match &payload {
            FilePayload::Deleted => d.get("state").and_then(Value::as_str) == Some("deleted"),
            p => same_source_state(d, p),
        });
        if let (true, Some(doc)) = (unchanged, latest.clone()) {
            return VersionPlan {
                object_id,
                action: IndexAction::Unchanged,
                doc,
                base: latest,
                read_at: None,
            };
        }
        let mut doc = file_document(source, payload);
        if let Some((key, id)) = link {
            doc.insert(key.into(), Value::String(id.into()));
        }
        VersionPlan::new_version(object_id, doc, latest)
    }

    /// `doc` as the next version after `base`: created when there is none.
    fn new_version(object_id: String, doc: Document, base: Option<Document>) -> VersionPlan {
        VersionPlan {
            object_id,
            action: if base.is_some() {
                IndexAction::Updated
            } else {
                IndexAction::Created
            },
            doc,
            base,
            read_at: None,
        }
    }
}

/// Limits and knobs.
#[derive(Debug, Clone)]
pub struct IndexerOptions {
    /// Files larger than this become metadata-only (`content_omitted: too_large`).
    pub max_content_bytes: u64,
    /// Which files are never read (metadata-only, `withheld`).
    pub secrets: crate::fs::secrets::SecretPolicy,
}

impl Default for IndexerOptions {
    fn default() -> Self {
        Self {
            max_content_bytes: 1024 * 1024,
            secrets: Default::default(),
        }
    }
}

pub struct Indexer {
    pub store: Arc<dyn Store>,
    pub resolver: Arc<Resolver>,
    pub options: IndexerOptions,
}

impl std::fmt::Debug for Indexer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Indexer")
            .field("store", &self.store.kind())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Indexer {
    pub fn new(store: Arc<dyn Store>, resolver: Arc<Resolver>, options: IndexerOptions) -> Self {
        Self {
            store,
            resolver,
            options,
        }
    }

    /// Plans the version of the file at `agent_path` (resolved as
    /// [`Indexer::index_file`] resolves it) against the store's latest,
    /// read before the file; writes nothing. A session queues it.
    pub async fn plan_file(&self, agent_path: &str) -> Result<VersionPlan> {
        let resolved = self.resolver.resolve_read(agent_path)?;
        self.plan_resolved(&resolved, None).await
    }

    /// The store's latest version, then the file's bytes (on a blocking
    /// task), then the plan.
    async fn plan_resolved(
        &self,
        resolved: &ResolvedPath,
        link: Option<(&str, &str)>,
    ) -> Result<VersionPlan> {
        let host = reachable(resolved)?;
        let max = self.options.max_content_bytes;
        let withheld = self.withheld(resolved);
        let latest = self.store.get(&resolved.source.file_object_id()).await?;
        let read_at = std::time::Instant::now();
        let payload = tokio::task::spawn_blocking(move || read_payload(&host, max, withheld))
            .await
            .map_err(|e| Error::Internal(format!("read task failed: {e}")))??;
        let mut plan = VersionPlan::of(&resolved.source, payload, latest, link);
        plan.read_at = Some(read_at);
        Ok(plan)
    }

    /// Plans against `latest` as the caller knows it, reading the file here
    /// (blocking `std::fs`): a session's read while the store cannot be
    /// asked, a stub it upgrades, an activation that looks at the disk again.
    pub fn plan_blocking(
        &self,
        resolved: &ResolvedPath,
        latest: Option<Document>,
    ) -> Result<VersionPlan> {
        let read_at = std::time::Instant::now();
        let payload = self.read_blocking(resolved)?;
        let mut plan = VersionPlan::of(&resolved.source, payload, latest, None);
        plan.read_at = Some(read_at);
        Ok(plan)
    }

    /// Read the file at `agent_path` and index it (created / updated / unchanged).
    /// Unreadable, vanished or special files → coded error, nothing written.
    /// The path is resolved as pi's file tools resolve it
    /// ([`Resolver::resolve_read`]: its fallbacks only apply when the
    /// literal path does not exist).
    pub async fn index_file(&self, agent_path: &str) -> Result<IndexResult> {
        let resolved = self.resolver.resolve_read(agent_path)?;
        self.index_resolved(&resolved).await
    }

    /// Same for an already resolved path.
    pub async fn index_resolved(&self, resolved: &ResolvedPath) -> Result<IndexResult> {
        self.index_with_link(resolved, None).await
    }

    /// Index the new path of a rename, linking it to the object at the old
    /// path with `renamed_from` (only when a version is written).
    pub async fn index_renamed(&self, to: &ResolvedPath, from_id: &str) -> Result<IndexResult> {
        self.index_with_link(to, Some((RENAMED_FROM, from_id)))
            .await
    }

    /// Writes a planned new version as a compare-and-set on its base (`None`
    /// = must not exist): `Ok(None)` when another writer committed in
    /// between and nothing was written.
    async fn write_version(&self, plan: VersionPlan) -> Result<Option<IndexResult>> {
        let guard = TxOp::Match {
            id: plan.object_id.clone(),
            expected: plan.base,
        };
        let receipt = self
            .store
            .submit(vec![guard, TxOp::Put(plan.doc.clone())])
            .await?;
        if !receipt.committed {
            return Ok(None);
        }
        Ok(Some(IndexResult {
            object_id: plan.object_id,
            action: plan.action,
            doc: plan.doc,
            receipt: Some(receipt),
        }))
    }

    /// Index the file's current bytes without ever committing older bytes
    /// over newer ones (issue 14, defect 3): the latest version is read
    /// *before* the file, and the write is a compare-and-set on it. A write
    /// that commits therefore follows every version committed before that
    /// read, and those were read from disk earlier than ours. When another
    /// indexer commits in between, the match fails and the file and the store
    /// are read again (bounded: each retry means another writer progressed).
    async fn index_with_link(
        &self,
        resolved: &ResolvedPath,
        link: Option<(&str, &str)>,
    ) -> Result<IndexResult> {
        let object_id = resolved.source.file_object_id();
        for _ in 0..CAS_ATTEMPTS {
            let plan = self.plan_resolved(resolved, link).await?;
            if plan.action == IndexAction::Unchanged {
                return Ok(IndexResult {
                    object_id,
                    action: IndexAction::Unchanged,
                    doc: plan.doc,
                    receipt: None,
                });
            }
            if let Some(done) = self.write_version(plan).await? {
                return Ok(done);
            }
            tracing::debug!(
                object_id,
                "index: another writer committed first; reading again"
            );
        }
        Err(Error::CasConflict { id: object_id })
    }

    /// Records the file's current state on disk over whatever the store
    /// holds now: its current bytes (compare-and-set, as [`Indexer::index_resolved`]),
    /// or a deletion when it is gone or no longer a regular file. For a
    /// version derived from a state the store no longer has as latest (a
    /// session's queued write that lost a compare-and-set, issue 14): the
    /// disk is the truth, read after the newer version was committed.
    pub async fn reconcile(&self, source: &FilesystemSource) -> Result<IndexResult> {
        let resolved = ResolvedPath {
            host_path: self.resolver.host_path(source),
            watchable: false,
            source: source.clone(),
        };
        match self.index_resolved(&resolved).await {
            Err(Error::FileNotFound { .. } | Error::NotAFile { .. }) => {
                self.deletion_with_link(source, None).await
            }
            r => r,
        }
    }

    /// Why `resolved` must not be read, if it must not (the secret list,
    /// outside the workspace and the mounts; each unless opted in).
    pub fn withheld(&self, resolved: &ResolvedPath) -> Option<ContentOmitted> {
        self.options.secrets.withheld(&self.resolver, resolved)
    }

    /// [`read_payload`] under this indexer's limits (blocking `std::fs`):
    /// for reads the session makes itself (activating a stub, an outage).
    pub fn read_blocking(&self, resolved: &ResolvedPath) -> Result<FilePayload> {
        let host = reachable(resolved)?;
        read_payload(
            &host,
            self.options.max_content_bytes,
            self.withheld(resolved),
        )
    }

    /// Indexes many files at once (a note folder at session start): per
    /// chunk of [`BATCH_FILES`], one `get_many`, the reads on one blocking
    /// task, and one transaction holding every changed file (each put
    /// guarded by a compare-and-set on the version read). A chunk whose
    /// transaction loses a race is indexed file by file
    /// ([`Indexer::index_resolved`]). A file that cannot be read (gone,
    /// not a regular file, unreadable) is skipped with a warning; store
    /// failures are errors. Results in input order, skipped files left out.
    pub async fn index_many(&self, files: &[ResolvedPath]) -> Result<Vec<IndexResult>> {
        let mut out = Vec::with_capacity(files.len());
        for chunk in files.chunks(BATCH_FILES) {
            let ids: Vec<String> = chunk.iter().map(|r| r.source.file_object_id()).collect();
            let existing: std::collections::HashMap<String, Document> = self
                .store
                .get_many(&ids)
                .await?
                .into_iter()
                .filter_map(|d| Some((d.get(crate::store::ID_KEY)?.as_str()?.to_owned(), d)))
                .collect();
            let max = self.options.max_content_bytes;
            let jobs: Vec<(Option<PathBuf>, Option<ContentOmitted>)> = chunk
                .iter()
                .map(|r| (r.host_path.clone(), self.withheld(r)))
                .collect();
            let payloads = tokio::task::spawn_blocking(move || {
                jobs.into_iter()
                    .map(|(host, withheld)| match host {
                        Some(h) => read_payload(&h, max, withheld),
                        None => Err(Error::FileUnreadable {
                            path: PathBuf::new(),
                            reason: "not reachable from this client".into(),
                        }),
                    })
                    .collect::<Vec<_>>()
            })
            .await
            .map_err(|e| Error::Internal(format!("read task failed: {e}")))?;
            let mut ops = Vec::new();
            let mut results: Vec<IndexResult> = Vec::with_capacity(chunk.len());
            for ((resolved, id), payload) in chunk.iter().zip(&ids).zip(payloads) {
                let payload = match payload {
                    Ok(p) => p,
                    Err(e) => {
                        tracing::warn!(path = %resolved.source.path, error = %e, "index: skipped");
                        continue;
                    }
                };
                let old = existing.get(id);
                if let Some(doc) = old.filter(|d| same_source_state(d, &payload)) {
                    results.push(IndexResult {
                        object_id: id.clone(),
                        action: IndexAction::Unchanged,
                        doc: doc.clone(),
                        receipt: None,
                    });
                    continue;
                }
                let doc = file_document(&resolved.source, payload);
                ops.push(TxOp::Match {
                    id: id.clone(),
                    expected: old.cloned(),
                });
                ops.push(TxOp::Put(doc.clone()));
                results.push(IndexResult {
                    object_id: id.clone(),
                    action: if old.is_some() {
                        IndexAction::Updated
                    } else {
                        IndexAction::Created
                    },
                    doc,
                    receipt: None,
                });
            }
            if ops.is_empty() {
                out.extend(results);
                continue;
            }
            let receipt = self.store.submit(ops).await?;
            if receipt.committed {
                for r in &mut results {
                    if r.action != IndexAction::Unchanged {
                        r.receipt = Some(receipt.clone());
                    }
                }
                out.extend(results);
                continue;
            }
            // Another writer committed one of these first: one by one.
            for resolved in chunk {
                match self.index_resolved(resolved).await {
                    Ok(r) => out.push(r),
                    Err(e) if e.is_transient() || matches!(e, Error::StoreProtocol(_)) => {
                        return Err(e)
                    }
                    Err(e) => {
                        tracing::warn!(path = %resolved.source.path, error = %e, "index: skipped")
                    }
                }
            }
        }
        Ok(out)
    }

    /// Discovery: a stub (null content and hashes) unless the object exists,
    /// which is never overwritten. Batched: one lookup and at most one write.
    ///
    /// Results come back in input order (a repeated path repeats its result).
    /// The write guards every new stub with a must-not-exist `Match`, so a
    /// concurrent indexer that creates one of them first aborts the batch;
    /// it is then retried for the remaining ids (bounded).
    pub async fn discover_files(&self, agent_paths: &[String]) -> Result<Vec<IndexResult>> {
        let sources: Vec<FilesystemSource> = agent_paths
            .iter()
            .map(|p| Ok(self.resolver.resolve(p)?.source))
            .collect::<Result<_>>()?;
        let ids: Vec<String> = sources
            .iter()
            .map(FilesystemSource::file_object_id)
            .collect();
        // First position of each id, in input order: O(n), not O(n²) — a
        // single `find` can list tens of thousands of paths.
        let mut first_index: std::collections::HashMap<&str, usize> =
            std::collections::HashMap::with_capacity(ids.len());
        let mut unique: Vec<String> = Vec::new();
        for (i, id) in ids.iter().enumerate() {
            if let std::collections::hash_map::Entry::Vacant(e) = first_index.entry(id.as_str()) {
                e.insert(i);
                unique.push(id.clone());
            }
        }
        let mut known: std::collections::HashMap<String, IndexResult> =
            std::collections::HashMap::new();
        const ATTEMPTS: usize = 3;
        for attempt in 1..=ATTEMPTS {
            let pending: Vec<String> = unique
                .iter()
                .filter(|id| !known.contains_key(*id))
                .cloned()
                .collect();
            if pending.is_empty() {
                break;
            }
            for doc in self.store.get_many(&pending).await? {
                let Some(id) = doc.get(crate::store::ID_KEY).and_then(Value::as_str) else {
                    continue;
                };
                known.insert(
                    id.to_string(),
                    IndexResult {
                        object_id: id.to_string(),
                        action: IndexAction::Unchanged,
                        doc: doc.clone(),
                        receipt: None,
                    },
                );
            }
            let stubs: Vec<Document> = pending
                .iter()
                .filter(|id| !known.contains_key(*id))
                .map(|id| file_document(&sources[first_index[id.as_str()]], FilePayload::Stub))
                .collect();
            if stubs.is_empty() {
                break;
            }
            let mut ops = Vec::with_capacity(stubs.len() * 2);
            for stub in &stubs {
                let id = stub_id(stub);
                ops.push(TxOp::Match { id, expected: None });
                ops.push(TxOp::Put(stub.clone()));
            }
            let receipt = self.store.submit(ops).await?;
            if receipt.committed {
                for stub in stubs {
                    let id = stub_id(&stub);
                    known.insert(
                        id.clone(),
                        IndexResult {
                            object_id: id,
                            action: IndexAction::Created,
                            doc: stub,
                            receipt: Some(receipt.clone()),
                        },
                    );
                }
                break;
            }
            if attempt == ATTEMPTS {
                return Err(Error::CasConflict {
                    id: stubs.first().map(stub_id).unwrap_or_default(),
                });
            }
        }
        Ok(ids
            .iter()
            .map(|id| known.get(id).cloned().expect("every id resolved"))
            .collect())
    }

    /// Confirmed deletion: a new version with null content and hashes.
    ///
    /// History is kept. If the latest version already records the deletion,
    /// nothing is written (`Unchanged`): watchers may report a removal twice.
    /// A path never indexed before gets a deletion object (`Created`).
    pub async fn index_file_deletion(&self, resolved: &ResolvedPath) -> Result<IndexResult> {
        self.deletion_with_link(&resolved.source, None).await
    }

    /// Deletion at the old path of a rename, linked to the new object with
    /// `renamed_to`.
    pub async fn index_file_deletion_renamed(
        &self,
        from: &ResolvedPath,
        to_id: &str,
    ) -> Result<IndexResult> {
        self.deletion_with_link(&from.source, Some(to_id)).await
    }

    /// The deletion is a compare-and-set on the version read here: a version
    /// another indexer commits in between was read from disk after the caller
    /// confirmed the deletion, so it is newer and stays the latest (the
    /// result is then `Unchanged` with that version).
    async fn deletion_with_link(
        &self,
        source: &FilesystemSource,
        renamed_to: Option<&str>,
    ) -> Result<IndexResult> {
        let object_id = source.file_object_id();
        let existing = self.store.get(&object_id).await?;
        if let Some(doc) = existing.as_ref() {
            // A plain deletion after a rename-away adds nothing; a rename
            // link not yet recorded does.
            let already = doc.get("state").and_then(Value::as_str) == Some("deleted")
                && (renamed_to.is_none()
                    || doc.get(RENAMED_TO).and_then(Value::as_str) == renamed_to);
            if already {
                return Ok(IndexResult {
                    object_id,
                    action: IndexAction::Unchanged,
                    doc: doc.clone(),
                    receipt: None,
                });
            }
        }
        let mut doc = file_document(source, FilePayload::Deleted);
        if let Some(to) = renamed_to {
            doc.insert(RENAMED_TO.into(), Value::String(to.into()));
        }
        if let Some(done) = self
            .write_version(VersionPlan::new_version(object_id.clone(), doc, existing))
            .await?
        {
            return Ok(done);
        }
        let latest = self
            .store
            .get(&object_id)
            .await?
            .ok_or_else(|| Error::CasConflict {
                id: object_id.clone(),
            })?;
        Ok(IndexResult {
            object_id,
            action: IndexAction::Unchanged,
            doc: latest,
            receipt: None,
        })
    }
}

fn stub_id(doc: &Document) -> String {
    doc.get(crate::store::ID_KEY)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The host path, or `FILE_UNREADABLE` when this client cannot reach the source.
fn reachable(resolved: &ResolvedPath) -> Result<PathBuf> {
    resolved
        .host_path
        .clone()
        .ok_or_else(|| Error::FileUnreadable {
            path: PathBuf::from(&resolved.source.path),
            reason: "not reachable from this client (no host path for its filesystem)".into(),
        })
}

/// Whether the stored version already reflects these bytes: same `file_hash`
/// (the protocol's test) and the same omission reason, so raising
/// `max_content_bytes` lets a formerly too-large file get its content. A file
/// that was not read (too large, withheld) has no hash: the same size and
/// modification time stand for it.
fn same_source_state(doc: &Document, payload: &FilePayload) -> bool {
    let (hash, omitted) = match payload {
        FilePayload::Text { file_hash, .. } => (Some(file_hash.as_str()), None),
        FilePayload::Omitted {
            file_hash: None,
            reason,
            size_bytes,
            mtime_ns,
        } => {
            return doc.get("file_hash").is_some_and(Value::is_null)
                && doc.get("content_omitted").and_then(Value::as_str) == Some(reason.as_str())
                && doc.get("size_bytes").and_then(Value::as_u64) == Some(*size_bytes)
                && doc.get("mtime_ns").and_then(Value::as_i64) == *mtime_ns;
        }
        FilePayload::Omitted {
            file_hash, reason, ..
        } => (file_hash.as_deref(), Some(reason.as_str())),
        FilePayload::Stub | FilePayload::Deleted => return false,
    };
    hash.is_some()
        && doc.get("file_hash").and_then(Value::as_str) == hash
        && doc.get("content_omitted").and_then(Value::as_str) == omitted
}

/// Modification time in nanoseconds since the epoch.
fn mtime_ns(meta: &std::fs::Metadata) -> Option<i64> {
    use std::os::unix::fs::MetadataExt;
    Some(meta.mtime().checked_mul(1_000_000_000)? + meta.mtime_nsec())
}

/// Metadata-only for a file that is not read.
fn unread(reason: ContentOmitted, meta: &std::fs::Metadata) -> FilePayload {
    FilePayload::Omitted {
        reason,
        file_hash: None,
        size_bytes: meta.len(),
        mtime_ns: mtime_ns(meta),
    }
}

fn io_error(path: &Path, e: &io::Error) -> Error {
    match e.kind() {
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory => Error::FileNotFound {
            path: path.to_path_buf(),
        },
        io::ErrorKind::IsADirectory => Error::NotAFile {
            path: path.to_path_buf(),
            kind: "directory".into(),
        },
        io::ErrorKind::PermissionDenied => Error::FileUnreadable {
            path: path.to_path_buf(),
            reason: "permission denied".into(),
        },
        _ => Error::FileUnreadable {
            path: path.to_path_buf(),
            reason: e.to_string(),
        },
    }
}

/// `NOT_A_FILE` for anything but a regular file (checked on `stat` and again
/// on the opened handle).
fn require_regular(path: &Path, meta: &std::fs::Metadata) -> Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    let kind = if t.is_file() {
        return Ok(());
    } else if t.is_dir() {
        "directory"
    } else if t.is_fifo() {
        "fifo"
    } else if t.is_socket() {
        "socket"
    } else if t.is_char_device() {
        "character device"
    } else if t.is_block_device() {
        "block device"
    } else {
        "other"
    };
    Err(Error::NotAFile {
        path: path.to_path_buf(),
        kind: kind.into(),
    })
}

/// Stat, open and read `path` (blocking; run in `spawn_blocking`). Public:
/// the session upgrades a discovery stub with it synchronously on `activate`.
///
/// The size limit and `withheld` apply on the `stat`, before the file is
/// opened: a file over the limit or withheld is never read (a 4 GB file
/// costs a `stat`, not a hash of 4 GB).
pub fn read_payload(
    path: &Path,
    max_content_bytes: u64,
    withheld: Option<ContentOmitted>,
) -> Result<FilePayload> {
    use std::os::unix::fs::OpenOptionsExt;
    let meta = std::fs::metadata(path).map_err(|e| io_error(path, &e))?;
    require_regular(path, &meta)?;
    if let Some(reason) = withheld {
        return Ok(unread(reason, &meta));
    }
    if meta.len() > max_content_bytes {
        return Ok(unread(ContentOmitted::TooLarge, &meta));
    }
    // O_NONBLOCK: if the path was swapped for a FIFO after the stat, open
    // returns at once instead of waiting for a writer; the fstat below then
    // rejects it. It has no effect on reads from regular files.
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| io_error(path, &e))?;
    let meta = file.metadata().map_err(|e| io_error(path, &e))?;
    require_regular(path, &meta)?;
    if meta.len() > max_content_bytes {
        return Ok(unread(ContentOmitted::TooLarge, &meta));
    }

    // Read up to the limit + 1 byte: the stat size may be stale.
    let mut bytes = Vec::with_capacity(meta.len().min(max_content_bytes) as usize);
    (&mut file)
        .take(max_content_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(path, &e))?;
    if bytes.len() as u64 > max_content_bytes {
        // It grew since the stat: not read further.
        let meta = file.metadata().map_err(|e| io_error(path, &e))?;
        return Ok(unread(ContentOmitted::TooLarge, &meta));
    }
    Ok(classify(bytes))
}

/// Text, or metadata-only with the reason (binary before non-UTF-8).
fn classify(bytes: Vec<u8>) -> FilePayload {
    let file_hash = crate::model::hashing::file_hash(&bytes);
    let size_bytes = bytes.len() as u64;
    if bytes[..bytes.len().min(BINARY_SNIFF_BYTES)].contains(&0) {
        return FilePayload::Omitted {
            reason: ContentOmitted::Binary,
            file_hash: Some(file_hash),
            size_bytes,
            mtime_ns: None,
        };
    }
    match String::from_utf8(bytes) {
        Ok(content) => FilePayload::Text {
            content,
            file_hash,
            size_bytes,
        },
        Err(_) => FilePayload::Omitted {
            reason: ContentOmitted::NonUtf8,
            file_hash: Some(file_hash),
            size_bytes,
            mtime_ns: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_bytes() {
        assert!(matches!(
            classify(b"hi\n".to_vec()),
            FilePayload::Text { .. }
        ));
        assert!(matches!(
            classify(b"a\0b".to_vec()),
            FilePayload::Omitted {
                reason: ContentOmitted::Binary,
                ..
            }
        ));
        assert!(matches!(
            classify(vec![0xff, 0xfe, b'a']),
            FilePayload::Omitted {
                reason: ContentOmitted::NonUtf8,
                ..
            }
        ));
        // A NUL after the sniff window is text (valid UTF-8 keeps it).
        let mut late = vec![b'a'; BINARY_SNIFF_BYTES];
        late.push(0);
        assert!(matches!(classify(late), FilePayload::Text { .. }));
    }
}
