//! A session's side of context commits (see [`crate::commits`]): which
//! chat items are new since the chain's tip, their counts, and the tip.
//!
//! Split for a binding that must not hold the session across an await:
//! flush → [`Session::checkpoint_plan`] (sync; needs the chat flushed and
//! the store's tx at or after that flush) → [`crate::commits::create`] for
//! each planned commit, in order (store only) → [`Session::checkpoint_landed`].

use serde_json::Value;

use super::documents::ChatDoc;
use super::Session;
use crate::commits::{self, Artifact, Commit, CommitType, NewCommit, Trigger};
use crate::error::{Error, Result};
use crate::model::ObjectType;

/// What to commit.
#[derive(Debug, Clone)]
pub struct CheckpointRequest {
    pub trigger: Trigger,
    pub summary: Option<String>,
    /// Harness and version (`pi/0.73.1`).
    pub template: String,
    pub principal: Option<String>,
    /// None: now (tests and imports set it).
    pub created_at: Option<String>,
    /// A host compaction: the messages the host holds in place of the
    /// prefix (pi's `compactionSummary`). The new messages since the tip are
    /// committed first as a delta, then a compaction commit carries these.
    pub compaction: Option<Vec<Value>>,
}

impl CheckpointRequest {
    pub fn new(trigger: Trigger, template: impl Into<String>) -> Self {
        Self {
            trigger,
            summary: None,
            template: template.into(),
            principal: None,
            created_at: None,
            compaction: None,
        }
    }
}

/// The chat has writes queued: flush, then plan.
pub const NOT_FLUSHED: &str = "checkpoint: the chat has unflushed changes";

impl Session {
    /// The chain's tip: (commit id, chat position after it).
    pub fn commit_tip(&self) -> Option<(&str, u64)> {
        self.commit_tip.as_ref().map(|(id, to)| (id.as_str(), *to))
    }

    /// Makes `id` (at chat position `to`) the tip (resume, a new branch).
    pub fn set_commit_tip(&mut self, tip: Option<(String, u64)>) {
        self.commit_tip = tip;
    }

    /// Whether the chat has no writes queued (a plan needs it flushed).
    pub fn chat_flushed(&self) -> bool {
        !self.writes.pending.chat
    }

    /// Number of flattened chat items (turn starts and messages).
    pub fn chat_len(&self) -> usize {
        self.chat.flat_len()
    }

    /// Fingerprint and (messages, approximate tokens) of flattened items
    /// `[from, to)`.
    fn range_stats(&self, from: usize, to: usize) -> (Option<String>, u64, u64) {
        let mut msgs = 0u64;
        let mut tokens = 0u64;
        let mut last_fp = None;
        let mut t = self.chat.turn_start.partition_point(|&s| s <= from);
        t = t.saturating_sub(1);
        let mut i = from;
        while i < to && t < self.chat.turns.len() {
            let start = self.chat.turn_start[t];
            let turn = &self.chat.turns[t];
            if i == start {
                if let Some(u) = &turn.user {
                    msgs += 1;
                    tokens += commits::approx_tokens(&u.content);
                    last_fp = Some(u.fp.clone());
                } else {
                    last_fp = None;
                }
                i += 1;
                continue;
            }
            let m = i - start - 1;
            if m >= turn.messages.len() {
                t += 1;
                continue;
            }
            let e = &turn.messages[m];
            last_fp = Some(e.fp.clone());
            let counted = match e.role.as_str() {
                "compactionSummary" => false,
                _ if e.skipped == Some(true) => e.raw.is_some(),
                "assistant" | "toolResult" => true,
                _ => false,
            };
            if counted {
                msgs += 1;
                tokens += e
                    .content
                    .as_ref()
                    .map_or(0, |c| commits::approx_tokens(&Value::Array(c.clone())));
                tokens += e.raw.as_ref().map_or(0, commits::approx_tokens);
                if let Some(c) = e.toolcall_id.as_deref().and_then(|id| self.objects.get(id)) {
                    if c.object_type() == Some(ObjectType::Toolcall) {
                        tokens +=
                            (c.str("content").map_or(0, |s| s.chars().count()) as u64).div_ceil(4);
                    }
                }
            }
            i += 1;
        }
        (last_fp, msgs, tokens)
    }

    /// The commits a checkpoint makes, in order (each names the previous
    /// as its parent); empty when a turn-boundary or session-end checkpoint
    /// finds nothing new. `tx` must be at or after the flush that wrote the
    /// chat as it is now (the chat must have nothing queued).
    pub fn checkpoint_plan(&self, req: &CheckpointRequest, tx: i64) -> Result<Vec<NewCommit>> {
        self.ensure_open()?;
        if self.writes.pending.chat {
            return Err(Error::Internal(NOT_FLUSHED.into()));
        }
        let to = self.chat.flat_len();
        let (parent, from) = match &self.commit_tip {
            Some((id, at)) => (Some(id.clone()), (*at as usize).min(to)),
            None => (None, 0),
        };
        let created_at = match &req.created_at {
            Some(t) => Some(t.clone()),
            None => Some(commits::now_rfc3339()),
        };
        let machine = self.resolver().default_filesystem_id.clone();
        let base =
            |commit_type, artifact, parent: Option<String>, msgs, tokens, summary| NewCommit {
                parent,
                commit_type,
                artifact,
                template: req.template.clone(),
                principal: req.principal.clone(),
                machine: machine.clone(),
                session_id: self.options.session_id.clone(),
                trigger: req.trigger,
                message_count: msgs,
                token_count: tokens,
                created_at: created_at.clone(),
                summary,
                tip_to: Some(to as u64),
                expect_tip: None,
            };
        let mut out: Vec<NewCommit> = Vec::new();
        let new = to > from;
        // Nothing new: only an explicit checkpoint commits (an empty delta
        // that carries its summary); a compaction commits just its summary.
        let wants_delta = new || (req.compaction.is_none() && req.trigger == Trigger::Explicit);
        if wants_delta {
            let (last_fp, msgs, tokens) = self.range_stats(from, to);
            let artifact = Artifact::ChatRange {
                chat: self.ids.chat.clone(),
                tx,
                from: from as u64,
                to: to as u64,
                last_fp,
            };
            let summary = if req.compaction.is_some() {
                None
            } else {
                req.summary.clone()
            };
            out.push(base(
                CommitType::Delta,
                artifact,
                parent.clone(),
                msgs,
                tokens,
                summary,
            ));
        }
        if let Some(messages) = &req.compaction {
            let tokens = messages.iter().map(commits::approx_tokens).sum();
            let artifact = Artifact::Messages {
                messages: messages.clone(),
            };
            out.push(base(
                CommitType::Compaction,
                artifact,
                None,
                messages.len() as u64,
                tokens,
                req.summary.clone(),
            ));
        }
        // Chain them: each names the previous (ids are deterministic).
        let mut prev = parent.clone();
        for c in &mut out {
            c.parent = prev.clone();
            c.expect_tip = prev.clone();
            let at = c.created_at.clone().unwrap_or_default();
            prev = Some(commits::commit_id(
                c.parent.as_deref(),
                &c.artifact,
                &at,
                &c.template,
                &c.session_id,
            ));
        }
        Ok(out)
    }

    /// A planned commit landed: it is the tip.
    pub fn checkpoint_landed(&mut self, c: &Commit, tip_to: Option<u64>) {
        if let Some(to) = tip_to {
            self.commit_tip = Some((c.id.clone(), to));
        }
    }
}

impl Session {
    /// `ContextManager.open({ sessionId, fromCommit })`: fresh start, resume
    /// and fork are one operation.
    /// - no commit: [`Session::open`] (fresh, or a resume of an existing id);
    /// - the tip of the session's own chain: a resume;
    /// - a commit of another session (or of none) for a new session id: a new
    ///   branch. The session's and chat's documents of the commit's session
    ///   as of the commit's transaction (for a compaction or snapshot commit:
    ///   its nearest ancestor that refers to a chat) are copied under the new
    ///   id as a fork copies them (sets, collapse window, turns, cursor), and
    ///   the new session's timeline names the commit as its tip, so its first
    ///   commit's parent is that commit and its first delta holds only what
    ///   the new session adds. Written in one transaction guarded by "the
    ///   session does not exist yet".
    ///
    /// An existing session whose chain runs through the commit is resumed;
    /// one opened from a commit off its chain is refused (`INVALID_ARGUMENT`): rewinding a live session in place is
    /// not built; open a new session id from the commit instead.
    pub async fn open_from_commit(
        store: std::sync::Arc<dyn crate::store::Store>,
        indexer: std::sync::Arc<crate::fs::indexer::Indexer>,
        options: super::SessionOptions,
        from: Option<&str>,
    ) -> Result<Session> {
        use crate::model::{chat_object_id, session_object_id, system_prompt_object_id};
        use crate::store::{AsOf, TxOp};
        let Some(from) = from else {
            return Session::open(store, indexer, options).await;
        };
        commits::check_commit_id(from)?;
        super::fork::check_id("session_id", &options.session_id)?;
        let commit = commits::show(&*store, from).await?;
        let child = options.session_id.clone();
        if store.get(&session_object_id(&child)).await?.is_some() {
            let s = Session::open(store.clone(), indexer, options).await?;
            // Its chain already runs through the commit (opened from it
            // before, then moved on): a resume.
            let through = match s.commit_tip() {
                Some((tip, _)) => commits::history(&*store, tip, None)
                    .await?
                    .iter()
                    .any(|c| c.id == from),
                None => false,
            };
            return match s.commit_tip() {
                _ if through => Ok(s),
                tip => Err(Error::InvalidArgument(format!(
                    "session {child} exists and the tip of its chain is {}, not {from}; \
                     rewinding an existing session is not supported: open a new session id from {from}",
                    tip.map_or("(none)".to_string(), |(t, _)| t.to_string())
                ))),
            };
        }
        // The nearest commit (this one or an ancestor) that refers to a chat.
        let mut at = Some(commit);
        let mut point = None;
        while let Some(c) = at.take() {
            if let Artifact::ChatRange { tx, to, .. } = &c.artifact {
                point = Some((c.session_id.clone(), *tx, *to));
                break;
            }
            if let Some(p) = &c.parent {
                at = Some(commits::show(&*store, p).await?);
            }
        }
        let mut ops = Vec::new();
        let mut to = 0u64;
        if let Some((parent, tx, range_to)) = point {
            let as_of = AsOf::TxId(tx);
            let chat = super::paged::get_as_of(&*store, &chat_object_id(&parent), as_of).await?;
            let sess = super::paged::get_as_of(&*store, &session_object_id(&parent), as_of).await?;
            if let (Some(chat_doc), Some(session_doc)) = (chat, sess) {
                let len = commits::materialize::flatten(&chat_doc).len() as u64;
                if len != range_to {
                    return Err(Error::StoreProtocol(format!(
                        "{from}: chat:{parent} as of tx {tx} holds {len} items, the commit ends at {range_to}"
                    )));
                }
                to = len;
                let prompt = store
                    .get_as_of(&system_prompt_object_id(&parent), as_of)
                    .await?
                    .and_then(|d| d.get("content").and_then(Value::as_str).map(str::to_string));
                let calls = ChatDoc::parse(&chat_doc).map_or(0, |c| c.model_calls().len());
                let point = super::fork::ForkPoint {
                    call_index: calls.checked_sub(1),
                    basis_tx: Some(tx),
                    session_doc,
                    chat_doc,
                    system_prompt: prompt,
                };
                ops =
                    super::fork::seed_ops(&child, &parent, point, options.system_prompt.is_none());
            }
        }
        if ops.is_empty() {
            ops.push(TxOp::Match {
                id: session_object_id(&child),
                expected: None,
            });
        }
        let key = commits::timeline::session_key(&child);
        ops.extend(commits::timeline::set_tip_ops(&key, None, from, to));
        // Not committed: a concurrent open created the session first.
        store.submit(ops).await?;
        Session::open(store, indexer, options).await
    }
}
