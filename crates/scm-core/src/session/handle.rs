//! [`SessionHandle`]: a session as a host shares it between concurrent
//! calls (the Node binding's `NativeSession` holds one).
//!
//! Locking: the session sits in a `std::sync::Mutex` that is only ever held
//! for one synchronous step, never across an await; the steps and the I/O
//! between them are the operations of [`super::drive`]. A
//! `tokio::sync::Mutex<()>` (the write gate) serialises flushes, so session
//! documents land in the order they were taken and a flush that returns
//! has written everything queued before it.
//!
//! Write-behind (`durable_transform: false`, the default): a transform
//! returns once the context is assembled and flushes in a background task
//! behind the same gate; `behind` counts those tasks so reads of the store
//! [`settle`](SessionHandle::settle) first.
//!
//! [`HandleOptions::new`] holds the product's defaults — what the facade and
//! pi get: the cache layout, write-behind. (`SessionOptions::new`, for Rust
//! callers of the engine, keeps the spec layout; the drop-in class asks for
//! the spec layout and durable writes, its contract.)

use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;

use super::drive::{self, Drive};
use super::inspect::CallSummary;
use super::{paged, CheckpointRequest, FileOp, Layout, OpResult, Session, SessionOptions, SetOp};
use crate::commits::Commit;
use crate::error::{Error, Result};
use crate::fs::indexer::Indexer;
use crate::memory::expand::{ExpandItem, Select};
use crate::store::{AsOf, Document, Store, TxReceipt, Version};

/// How the session comes to be.
#[derive(Debug, Clone, Default)]
pub enum OpenFrom {
    /// Create it, or resume it when it exists.
    #[default]
    Latest,
    /// A new session forked from `parent`; `messages` is the child's
    /// transcript at start, a prefix of the parent's (ignored when the
    /// session exists).
    Fork {
        parent: String,
        messages: Vec<Value>,
    },
    /// From a context commit (`ctx-…`): a new session branches from it, an
    /// existing one whose chain runs through it resumes.
    Commit(String),
    /// An existing session, for reading only: no reconciliation, no
    /// watcher, no write; the layout is the stored one.
    ReadOnly,
}

/// What a host opens a session with.
#[derive(Debug, Clone)]
pub struct HandleOptions {
    pub session: SessionOptions,
    /// A transform returns after its write landed (false: the write goes
    /// behind; see the module comment).
    pub durable_transform: bool,
    pub from: OpenFrom,
}

impl HandleOptions {
    /// The product's defaults: cache layout, write-behind, no watcher, the
    /// system prompt emitted as a message, stubs upgraded on resume.
    pub fn new(session_id: impl Into<String>) -> Self {
        let mut session = SessionOptions::new(session_id);
        session.layout = Layout::Cache;
        HandleOptions {
            session,
            durable_transform: false,
            from: OpenFrom::Latest,
        }
    }

    fn validate(&self) -> Result<()> {
        if let Some(bad) = self
            .session
            .note_folders
            .iter()
            .find(|p| p.trim().is_empty())
        {
            return Err(Error::InvalidArgument(format!(
                "noteFolders: every folder must be a non-blank path, got {bad:?}"
            )));
        }
        Ok(())
    }
}

/// A session shared between concurrent calls. See the module comment.
pub struct SessionHandle {
    /// None once closed.
    session: Mutex<Option<Session>>,
    session_id: String,
    store: Arc<dyn Store>,
    gate: Arc<tokio::sync::Mutex<()>>,
    durable: bool,
    /// Background flushes not yet finished.
    behind: tokio::sync::watch::Sender<usize>,
    /// Where write-behind tasks run: the runtime the session was opened on
    /// (a synchronous transform is called from outside any runtime).
    runtime: tokio::runtime::Handle,
}

impl SessionHandle {
    /// Opens (creates, resumes, forks, branches from a commit, or reads) a
    /// session on `store`. Must run on a tokio runtime: write-behind tasks
    /// are spawned there.
    pub async fn open(
        store: Arc<dyn Store>,
        indexer: Arc<Indexer>,
        options: HandleOptions,
    ) -> Result<Arc<SessionHandle>> {
        options.validate()?;
        let HandleOptions {
            session: opts,
            durable_transform,
            from,
        } = options;
        let session = match from {
            OpenFrom::Latest => Session::open(store.clone(), indexer, opts).await?,
            OpenFrom::Fork { parent, messages } => {
                Session::open_fork(store.clone(), indexer, opts, &parent, &messages).await?
            }
            OpenFrom::Commit(c) => {
                Session::open_from_commit(store.clone(), indexer, opts, Some(&c)).await?
            }
            OpenFrom::ReadOnly => Session::open_read_only(store.clone(), indexer, opts).await?,
        };
        Ok(Arc::new(SessionHandle {
            session_id: session.session_id().to_string(),
            session: Mutex::new(Some(session)),
            store,
            gate: Arc::new(tokio::sync::Mutex::new(())),
            durable: durable_transform,
            behind: tokio::sync::watch::channel(0).0,
            runtime: tokio::runtime::Handle::current(),
        }))
    }

    fn lock(&self) -> MutexGuard<'_, Option<Session>> {
        // A panic while locked poisons the mutex; the state is still the
        // last consistent one (core methods mutate before they can fail).
        self.session.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    pub fn closed(&self) -> bool {
        self.lock().is_none()
    }

    /// Whether a transform returns before its store write.
    pub fn writes_behind(&self) -> bool {
        !self.durable
    }

    /// Whether a transform may run on the caller's thread now
    /// ([`SessionHandle::transform_now`]): the write goes behind and no
    /// write error is outstanding. Otherwise the transform awaits its
    /// write, so the write error a host reads after it is current.
    pub fn can_transform_now(&self) -> bool {
        !self.durable
            && self
                .lock()
                .as_ref()
                .is_some_and(|s| s.write_error().is_none())
    }

    /// Runs one synchronous step on the session (`SESSION_CLOSED` once
    /// closed). Writes it queues go with the next flush.
    pub fn with<T>(&self, f: impl FnOnce(&mut Session) -> Result<T>) -> Result<T> {
        match self.lock().as_mut() {
            Some(s) => f(s),
            None => Err(Error::SessionClosed),
        }
    }

    /// A model call: `assemble` ingests and assembles (None: nothing was
    /// assembled, e.g. a window that does not continue the transcript);
    /// then the write lands (durable, or while a write error is
    /// outstanding) or goes behind.
    pub async fn transform<T>(
        self: &Arc<Self>,
        assemble: impl FnOnce(&mut Session) -> Result<Option<T>>,
    ) -> Result<Option<T>> {
        let out = self.with(assemble)?;
        if out.is_some() {
            if self.can_transform_now() {
                self.write_behind();
            } else {
                self.flush_tolerant().await?;
            }
        }
        Ok(out)
    }

    /// [`SessionHandle::transform`] on the caller's thread, for when
    /// [`SessionHandle::can_transform_now`] holds (`INVALID_ARGUMENT`
    /// otherwise): the write goes behind. Why: a transform is ~0.1 ms of
    /// CPU at 500 turns / 2,000 objects, while a host's thread hops into
    /// the runtime and back cost more at the tail (docs/benchmarks.md §3).
    pub fn transform_now<T>(
        self: &Arc<Self>,
        assemble: impl FnOnce(&mut Session) -> Result<Option<T>>,
    ) -> Result<Option<T>> {
        if self.durable {
            return Err(Error::InvalidArgument(
                "transform now: the session awaits its writes (durableTransform)".into(),
            ));
        }
        let out = self.with(assemble)?;
        if out.is_some() {
            self.write_behind();
        }
        Ok(out)
    }

    /// Messages observed without a model call (`ingest` → how many were
    /// new; None: nothing ingested); the write lands before it returns (a
    /// transient failure leaves it queued).
    pub async fn observe<T>(
        &self,
        ingest: impl FnOnce(&mut Session) -> Result<Option<T>>,
    ) -> Result<Option<T>> {
        let out = self.with(ingest)?;
        if out.is_some() {
            self.flush_tolerant().await?;
        }
        Ok(out)
    }

    /// Starts a flush in a background task behind the gate. A failure is
    /// kept like an outage's: the write is queued again and
    /// `Session::write_error` set; the next flush retries.
    fn write_behind(self: &Arc<Self>) {
        self.behind.send_modify(|n| *n += 1);
        let handle = Arc::clone(self);
        self.runtime.spawn(async move {
            let _ = handle.submit_gated().await;
            handle.behind.send_modify(|n| *n -= 1);
        });
    }

    /// Waits until background flushes finished (landed or queued again).
    pub async fn settle(&self) {
        let mut rx = self.behind.subscribe();
        let _ = rx.wait_for(|n| *n == 0).await;
    }

    /// The store, once writes that went behind have finished: what a read
    /// of the store should use.
    pub async fn settled_store(&self) -> &dyn Store {
        self.settle().await;
        &*self.store
    }

    /// Submits everything queued, one transaction, in order (null: nothing
    /// was queued). Writes that went behind have finished when it returns.
    pub async fn flush(&self) -> Result<Option<TxReceipt>> {
        self.settle().await;
        self.submit_gated().await
    }

    /// What is queued now, behind the gate.
    async fn submit_gated(&self) -> Result<Option<TxReceipt>> {
        let _gate = self.gate.lock().await;
        drive::submit(&mut &*self).await
    }

    /// `flush`, except that a transient store error leaves the write
    /// queued and is only reported by `Session::write_error`.
    pub async fn flush_tolerant(&self) -> Result<Option<TxReceipt>> {
        drive::flush_tolerant(&mut &*self).await
    }

    /// read / partial read / write / edit of the file at `path`.
    pub async fn file_op(&self, op: FileOp, path: &str) -> Result<OpResult> {
        drive::file_op(&mut &*self, op, path).await
    }

    /// ls / find / grep output → discovery stubs (index + pool only).
    /// `base_dir`: the directory the tool listed or searched.
    pub async fn observe_discovery(
        &self,
        tool: &str,
        output: &str,
        base_dir: &str,
    ) -> Result<OpResult> {
        drive::discover(&mut &*self, |s| {
            s.plan_discovery(tool, output, base_dir).paths
        })
        .await
    }

    /// A bash command and its output: the file it only prints is read, the
    /// other files under the workspace it names are discovery stubs.
    pub async fn observe_bash(&self, command: &str, output: &str) -> Result<OpResult> {
        drive::observe_bash(&mut &*self, command, output).await
    }

    /// `expand(target, select)` → the object's id and one item per link.
    pub async fn expand(&self, target: &str, select: &Select) -> Result<(String, Vec<ExpandItem>)> {
        drive::expand(&mut &*self, target, select).await
    }

    /// activate / deactivate / pin / unpin, also of an object of the store
    /// this session has not seen.
    pub async fn set_op_any(&self, op: SetOp, target: &str) -> Result<OpResult> {
        drive::set_op_any(&mut &*self, op, target).await
    }

    /// Commits what is new; see `Session::checkpoint`.
    pub async fn checkpoint(&self, req: &CheckpointRequest) -> Result<Option<Commit>> {
        drive::checkpoint(&mut &*self, req).await
    }

    /// A host branch switch; see `Session::rewind`. The host calls it
    /// between runs, so nothing else uses the session meanwhile.
    pub async fn rewind(
        &self,
        messages: &[Value],
        req: &CheckpointRequest,
    ) -> Result<Option<Option<Commit>>> {
        drive::rewind(&mut &*self, messages, req).await
    }

    /// Latest version of any object (paged documents read whole).
    pub async fn get_object(&self, id: &str) -> Result<Option<Document>> {
        paged::get(self.settled_store().await, id).await
    }

    /// Every version of an object, oldest first.
    pub async fn history(&self, id: &str) -> Result<Vec<Version>> {
        paged::history(self.settled_store().await, id).await
    }

    /// The version of an object visible at transaction `tx_id`.
    pub async fn get_object_as_of(&self, id: &str, tx_id: i64) -> Result<Option<Document>> {
        paged::get_as_of(self.settled_store().await, id, AsOf::TxId(tx_id)).await
    }

    /// Writes of the session so far, landed: what reading the session's
    /// own records back needs.
    async fn landed(&self) -> Result<()> {
        self.flush().await.map(|_| ())
    }

    /// Rebuilds exactly what model call `n` (0-based) was shown, from the
    /// store.
    pub async fn reconstruct_call(&self, n: usize) -> Result<Vec<Value>> {
        self.landed().await?;
        let plan = self.with(|s| s.reconstruct_plan(n))?;
        plan.run(&*self.store).await
    }

    /// The context commit model call `n` followed, or None before the first
    /// commit.
    pub async fn call_commit(&self, n: usize) -> Result<Option<String>> {
        self.landed().await?;
        let plan = self.with(|s| s.reconstruct_plan(n))?;
        plan.followed_commit(&*self.store).await
    }

    /// Summaries of model calls `from..to`; with `context`, each with what
    /// the model was sent.
    pub async fn call_summaries(
        &self,
        from: usize,
        to: usize,
        context: bool,
    ) -> Result<Vec<CallSummary>> {
        self.landed().await?;
        let plan = self.with(|s| s.call_summary_plan(from, to))?;
        let plan = if context { plan.with_context() } else { plan };
        plan.run(&*self.store).await
    }

    /// Flushes, stops the watcher, releases the session. Idempotent; later
    /// calls fail with `SESSION_CLOSED`. On failure the session stays open,
    /// so closing can be retried once the store is back.
    pub async fn close(&self) -> Result<()> {
        // Hold the gate so no flush is in flight while the session leaves.
        self.settle().await;
        let _gate = self.gate.lock().await;
        let Some(mut session) = self.lock().take() else {
            return Ok(());
        };
        match session.close().await {
            Ok(()) => Ok(()),
            Err(e) => {
                *self.lock() = Some(session);
                Err(e)
            }
        }
    }
}

impl Drive for &SessionHandle {
    fn with<T>(&mut self, f: impl FnOnce(&mut Session) -> Result<T>) -> Result<T> {
        SessionHandle::with(self, f)
    }
    fn store(&self) -> Arc<dyn Store> {
        self.store.clone()
    }
    fn flush(&mut self) -> impl std::future::Future<Output = Result<Option<TxReceipt>>> + Send {
        self.submit_gated()
    }
    fn settle(&self) -> impl std::future::Future<Output = ()> + Send {
        SessionHandle::settle(self)
    }
    fn gate(&self) -> Option<Arc<tokio::sync::Mutex<()>>> {
        Some(self.gate.clone())
    }
    fn replace(&mut self, fresh: Session) -> Result<()> {
        let old = self.lock().replace(fresh);
        if let Some(mut old) = old {
            old.retire();
        }
        Ok(())
    }
}
