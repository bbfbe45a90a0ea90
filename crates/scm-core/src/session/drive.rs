//! The session's async operations, written once for both ways a session is
//! held.
//!
//! An operation that touches the store or the disk is a sequence of
//! synchronous steps on the session with store or indexer I/O between
//! them. [`Drive`] is where the steps find the session: an owned
//! [`Session`] (the core's own async methods, the tests, the benches) runs
//! them directly; a [`super::handle::SessionHandle`] (what a host such as
//! the Node binding shares between concurrent calls) takes its lock for
//! each step only, never across an await, and serialises its writes behind
//! a gate. The orchestration itself — a file's version planned by the
//! indexer and queued with the session's documents (one transaction), a
//! transient error leaves the write queued, a note's link targets join the
//! pool, checkpoint and rewind under the gate — lives here and only here.

use std::future::Future;
use std::sync::Arc;

use serde_json::Value;

use super::{CheckpointRequest, FileOp, OpResult, Session, SetOp};
use crate::commits::{self, Commit};
use crate::error::{Error, Result};
use crate::memory::expand::{self, ExpandItem, ExpandStep, Select};
use crate::memory::links;
use crate::memory::{adopt, versions::object_id_for};
use crate::store::{Store, TxReceipt};

/// Where an operation's steps find the session.
pub(crate) trait Drive: Send {
    /// Runs one synchronous step on the session (`SESSION_CLOSED` once a
    /// handle's session was closed).
    fn with<T>(&mut self, f: impl FnOnce(&mut Session) -> Result<T>) -> Result<T>;
    fn store(&self) -> Arc<dyn Store>;
    /// Submits everything queued, one transaction, in order.
    fn flush(&mut self) -> impl Future<Output = Result<Option<TxReceipt>>> + Send;
    /// Waits until writes that went behind have finished (an owned session
    /// has none).
    fn settle(&self) -> impl Future<Output = ()> + Send;
    /// The gate a plan and what it creates are held under, so no write of
    /// the session lands between them (an owned session needs none).
    fn gate(&self) -> Option<Arc<tokio::sync::Mutex<()>>>;
    /// Swaps in the session opened again after a rewind; the old one retires.
    fn replace(&mut self, fresh: Session) -> Result<()>;
}

impl Drive for Session {
    fn with<T>(&mut self, f: impl FnOnce(&mut Session) -> Result<T>) -> Result<T> {
        f(self)
    }
    fn store(&self) -> Arc<dyn Store> {
        self.store.clone()
    }
    fn flush(&mut self) -> impl Future<Output = Result<Option<TxReceipt>>> + Send {
        submit(self)
    }
    #[allow(clippy::manual_async_fn)]
    fn settle(&self) -> impl Future<Output = ()> + Send {
        async {}
    }
    fn gate(&self) -> Option<Arc<tokio::sync::Mutex<()>>> {
        None
    }
    fn replace(&mut self, fresh: Session) -> Result<()> {
        let mut old = std::mem::replace(self, fresh);
        old.retire();
        Ok(())
    }
}

/// Takes what is queued, submits it with only the store in hand, and
/// records the receipt — or, on failure, queues it again and keeps the
/// error (`Session::write_error`).
pub(super) async fn submit<D: Drive + ?Sized>(d: &mut D) -> Result<Option<TxReceipt>> {
    let Some(mut pending) = d.with(|s| Ok(s.take_pending()))? else {
        return Ok(None);
    };
    let store = d.store();
    match pending.submit(&*store).await {
        Ok(receipt) => {
            // A handle closed meanwhile has nothing left to record it in.
            let _ = d.with(|s| {
                s.apply_receipt(&pending, &receipt);
                Ok(())
            });
            Ok(Some(receipt))
        }
        Err(e) => {
            let _ = d.with(|s| {
                s.restore_failed_write(pending, &e);
                Ok(())
            });
            Err(e)
        }
    }
}

/// `flush`, except that a transient store error leaves the write queued
/// (the next flush retries it) and is only reported by
/// `Session::write_error`.
pub(super) async fn flush_tolerant<D: Drive>(d: &mut D) -> Result<Option<TxReceipt>> {
    match d.flush().await {
        Err(e) if e.is_transient() => {
            tracing::warn!(error = %e, "store write queued");
            Ok(None)
        }
        r => r,
    }
}

/// read / partial read / write / edit of the file at `path`: index it, apply
/// the operation, bring a note's link targets, write.
pub(super) async fn file_op<D: Drive>(d: &mut D, op: FileOp, path: &str) -> Result<OpResult> {
    d.with(|s| s.ensure_open())?;
    // The version is planned here and queued with the session's documents:
    // one transaction, after any versions of the file queued before it.
    let indexer = d.with(|s| Ok(s.indexer()))?;
    let result = indexer.plan_file(path).await;
    let out = d.with(|s| Ok(s.apply_file_op_or_read(op, path, result)))?;
    if let (true, Some(id)) = (out.ok, out.id.as_deref()) {
        bring_link_targets(d, id).await;
    }
    flush_tolerant(d).await?;
    Ok(out)
}

/// A `bash` command ran: a file it only prints (context/shell_read.rs) is
/// indexed with its text and tracked, so a change to it reaches the model as
/// one to a file it read does; it joins the pool but is not made active (the
/// sets change by the agent's `read` and `activate`; bash observation only
/// updates the index and pool, memory-system-v0 §18.4). The other files the
/// command and its output name are discovered. The read's failure (the file
/// is not there, or withheld) is the command's business: only a store error
/// is returned.
pub(super) async fn observe_bash<D: Drive>(
    d: &mut D,
    command: &str,
    output: &str,
) -> Result<OpResult> {
    if let Some(r) = crate::context::shell_read::shell_read(command) {
        let op = if r.whole || r.numbered {
            FileOp::Print
        } else {
            FileOp::PartialRead
        };
        let read = file_op(d, op, &r.path).await?;
        if !read.ok {
            tracing::debug!(command, message = %read.message, "shell read not indexed");
        }
    }
    discover(d, |s| s.plan_bash(command, output).paths).await
}

/// Discovery stubs for the files `plan` names (index + pool only), written.
pub(super) async fn discover<D: Drive>(
    d: &mut D,
    plan: impl FnOnce(&Session) -> Vec<String>,
) -> Result<OpResult> {
    let (indexer, paths) = d.with(|s| {
        s.ensure_open()?;
        Ok((s.indexer(), plan(s)))
    })?;
    let result = if paths.is_empty() {
        Ok(Vec::new())
    } else {
        indexer.discover_files(&paths).await
    };
    let out = d.with(|s| Ok(s.apply_discovery(result)))?;
    d.flush().await?;
    Ok(out)
}

/// A note's link targets join the pool as metadata (§5.2): files as
/// discovery stubs, ids adopted from the store, pins resolved for the link
/// lines. Best effort: what fails is logged and the rest applied.
pub(super) async fn bring_link_targets<D: Drive>(d: &mut D, id: &str) {
    let Ok((indexer, (paths, ids, pins))) =
        d.with(|s| Ok((s.indexer(), s.link_targets_to_bring(id))))
    else {
        return;
    };
    let store = d.store();
    let mut docs = Vec::new();
    if !paths.is_empty() {
        match indexer.discover_files(&paths).await {
            Ok(found) => docs.extend(found.into_iter().map(|r| r.doc)),
            Err(e) => tracing::warn!("link targets of {id}: {e}"),
        }
    }
    for t in ids {
        match adopt::fetch(&*store, &t).await {
            Ok(Some(doc)) => docs.push(doc),
            Ok(None) => {}
            Err(e) => tracing::warn!("link target {t} of {id}: {e}"),
        }
    }
    let resolved = links::resolve_pins(&*store, &pins)
        .await
        .unwrap_or_else(|e| {
            tracing::warn!("pinned links of {id}: {e}");
            Default::default()
        });
    let _ = d.with(|s| {
        s.apply_link_targets(docs);
        s.apply_pins(resolved);
        Ok(())
    });
}

/// `expand(target, select)`: activates what the object links to (all
/// links, or those `select` keeps); a link pinned to a version shows that
/// version. One flush at the end.
pub(super) async fn expand<D: Drive>(
    d: &mut D,
    target: &str,
    select: &Select,
) -> Result<(String, Vec<ExpandItem>)> {
    d.settle().await;
    let id = d.with(|s| {
        s.ensure_open()?;
        Ok(object_id_for(s, target))
    })?;
    let store = d.store();
    let doc = expand::source_doc(&*store, &id).await?;
    let steps = expand::plan_expand(&*store, &doc, select).await?;
    let mut items = Vec::with_capacity(steps.len());
    for step in steps {
        items.push(match step {
            ExpandStep::Activate { id, doc } => d.with(|s| Ok(s.expand_stored(&id, doc)))?,
            ExpandStep::Read { id, path } => {
                let r = file_op(d, FileOp::Read, &path).await?;
                super::links::item(&id, Some(path), &r)
            }
            ExpandStep::NotFound { id, path } => super::links::not_found(&id, path),
            ExpandStep::ShowVersion { id, path, pin } => {
                expand::show_pinned(&*store, &id, path, &pin).await?
            }
            ExpandStep::Metadata { id, path, line } => expand::listed(id, path, line),
        });
    }
    flush_tolerant(d).await?;
    Ok((id, items))
}

/// activate / deactivate / pin / unpin, also of an object of the store the
/// session has not seen (it joins the session index and pool first); an
/// activated note brings its link targets. The write is queued.
pub(super) async fn set_op_any<D: Drive>(d: &mut D, op: SetOp, target: &str) -> Result<OpResult> {
    // The result's text names the object as the agent typed it.
    let run = |s: &mut Session, t: &str| -> OpResult { s.set_op_named(op, t, target) };
    let first = d.with(|s| Ok(run(s, target)))?;
    let Some(id) = adopt::store_candidate(target, &first) else {
        if op == SetOp::Activate {
            if let (true, Some(id)) = (first.ok, first.id.as_deref()) {
                bring_link_targets(d, id).await;
            }
        }
        return Ok(first);
    };
    d.settle().await;
    let Some(doc) = adopt::fetch(&*d.store(), &id).await? else {
        return Ok(first);
    };
    let r = d.with(|s| match s.adopt(doc) {
        Ok(id) => Ok(run(s, &id)),
        Err(e) => Ok(OpResult::failure(&e, Some(id.clone()))),
    })?;
    if op == SetOp::Activate && r.ok {
        bring_link_targets(d, &id).await;
    }
    Ok(r)
}

/// Flush, then plan and create under the gate: no write of the session
/// lands between the transaction read and the plan, so the chat as of that
/// transaction is the chat the plan counted. Returns the last commit made,
/// or the current tip when there was nothing to commit.
pub(super) async fn checkpoint<D: Drive>(
    d: &mut D,
    req: &CheckpointRequest,
) -> Result<Option<Commit>> {
    let store = d.store();
    for _ in 0..8 {
        d.flush().await?;
        let gate = d.gate();
        let _held = match &gate {
            Some(g) => Some(g.lock().await),
            None => None,
        };
        let tx = store.latest_tx_id().await?.unwrap_or(0);
        let plans = d.with(|s| {
            Ok(if s.chat_flushed() {
                Some(s.checkpoint_plan(req, tx)?)
            } else {
                None // ingested meanwhile: flush again
            })
        })?;
        let Some(plans) = plans else { continue };
        if plans.is_empty() {
            let tip = d.with(|s| Ok(s.commit_tip().map(|(id, _)| id.to_string())))?;
            return match tip {
                Some(id) => commits::show(&*store, &id).await.map(Some),
                None => Ok(None),
            };
        }
        let mut last = None;
        for p in plans {
            let to = p.tip_to;
            let c = commits::create(&*store, p).await?;
            d.with(|s| {
                s.checkpoint_landed(&c, to);
                Ok(())
            })?;
            last = Some(c);
        }
        return Ok(last);
    }
    Err(Error::Internal(
        "checkpoint: the chat kept changing while flushing".into(),
    ))
}

/// A host branch switch: unless the branch continues the session (then
/// nothing happens, not even a commit), commit what is new (`req`,
/// normally a turn boundary), then, under the gate, find the commit
/// `messages` map to (or the root), restore it and swap in the session
/// opened again. Some(None):
/// moved to the root; None: the branch continues the session, or nothing
/// maps, and the session is unchanged.
pub(super) async fn rewind<D: Drive>(
    d: &mut D,
    messages: &[Value],
    req: &CheckpointRequest,
) -> Result<Option<Option<Commit>>> {
    use super::rewind::{branch_commit, restore};
    // A branch that continues the session moves nothing, and commits
    // nothing either (a host hands its branch over at every resume).
    if d.with(|s| Ok(s.continues(messages)))? {
        return Ok(None);
    }
    checkpoint(d, req).await?;
    d.settle().await;
    let gate = d.gate();
    let _held = match &gate {
        Some(g) => Some(g.lock().await),
        None => None,
    };
    let (continues, (store, indexer, options), tip, consumed, calls) = d.with(|s| {
        Ok((
            s.continues(messages),
            s.reopen_parts(),
            s.commit_tip().map(|(id, _)| id.to_string()),
            s.cursor(),
            s.model_call_records(),
        ))
    })?;
    if continues {
        return Ok(None);
    }
    let sid = options.session_id.clone();
    let Some(target) = branch_commit(&*store, &sid, messages).await? else {
        return Ok(None);
    };
    if target.is_current(tip.as_deref(), consumed) {
        return Ok(None);
    }
    restore(&*store, &sid, &target, calls).await?;
    let fresh = Session::open(store, indexer, options).await?;
    d.replace(fresh)?;
    Ok(Some(target.commit))
}

/// The owned session's async operations: each is the one written above.
impl Session {
    /// Flush, plan, create, record: the whole checkpoint. Returns the last
    /// commit made, or the current tip when there was nothing to commit.
    pub async fn checkpoint(&mut self, req: &CheckpointRequest) -> Result<Option<Commit>> {
        checkpoint(self, req).await
    }

    /// `expand(target, select)`: activates what the object references
    /// (all links, or those `select` keeps). The session flushes once.
    pub async fn expand(&mut self, target: &str, select: &Select) -> Result<Vec<ExpandItem>> {
        Ok(expand(self, target, select).await?.1)
    }

    /// activate / deactivate / pin / unpin, also of an object of the store
    /// this session has not seen (it joins the session index and pool
    /// first); an activated note brings its link targets.
    pub async fn set_op_any(&mut self, op: super::SetOp, target: &str) -> Result<OpResult> {
        set_op_any(self, op, target).await
    }

    /// Submits every queued write in one transaction.
    pub async fn flush(&mut self) -> Result<Option<TxReceipt>> {
        submit(self).await
    }

    pub(super) async fn file_op(&mut self, op: FileOp, path: &str) -> Result<OpResult> {
        file_op(self, op, path).await
    }

    pub(super) async fn discover(&mut self, plan: super::DiscoveryPlan) -> Result<OpResult> {
        discover(self, move |_| plan.paths).await
    }

    /// [`Session::flush`], except that a transient store error leaves the
    /// write queued and is only reported by [`Session::write_error`].
    pub async fn flush_tolerant(&mut self) -> Result<Option<TxReceipt>> {
        flush_tolerant(self).await
    }

    /// The whole move for a host branch switch: commit what is new
    /// (`req`, normally a turn boundary), find the commit `messages` map to
    /// (or the root), restore it, open again. Returns the session to use
    /// from now on and whether it moved and to which commit (`Some(None)`:
    /// to the root; None: the branch continues the session, or nothing maps;
    /// the session is then unchanged).
    pub async fn rewind(
        mut self,
        messages: &[Value],
        req: &super::CheckpointRequest,
    ) -> Result<(Session, Option<Option<Commit>>)> {
        let moved = rewind(&mut self, messages, req).await?;
        Ok((self, moved))
    }
}
