//! Looking into a store from outside a session (the command-line tool and
//! the session report): list the sessions a store holds, open one read-only
//! (no reconciliation with the filesystem, no watcher, no writes), list its
//! objects under the ids the model sees, and summarise every model call.
//!
//! Token figures are estimates, ⌈UTF-16 length / 4⌉ of each message's JSON
//! (the rule the cache layout's thresholds use, [`units`]); "cached" is the
//! part of a call's context that repeats the previous call's from the first
//! message on (a provider's prompt cache works on that prefix).

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::documents::ChatDoc;
use super::reconstruct::Fetched;
use super::{paged, persist::StoredPages, PoolEntry, Session, SessionOptions};
use crate::context::epochs::units;
use crate::context::Layout;
use crate::error::{Error, Result};
use crate::fs::indexer::Indexer;
use crate::model::{chat_object_id, session_object_id, utf16_len};
use crate::store::{Document, Store, ID_KEY};

/// One session in a store (`list_sessions`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionSummary {
    pub session_id: String,
    /// Transaction time of the session document's first version.
    pub started: String,
    /// Transaction time of its latest version (every flush writes it).
    pub last_activity: String,
    /// Model calls recorded.
    pub calls: usize,
    /// Objects the session knows (`session_index`).
    pub objects: usize,
    /// Estimated tokens of the last call's context, as its record keeps
    /// them (None: no call, or recorded before records kept it).
    pub last_call_tokens: Option<u64>,
}

/// One model call as the tools list it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallSummary {
    /// 0-based, one per context assembled.
    pub call: usize,
    /// Messages the model was sent.
    pub messages: usize,
    /// Estimated tokens of those messages.
    pub tokens: u64,
    /// Estimated tokens of the leading messages equal to the previous call's.
    pub cached_tokens: u64,
    /// Harness messages consumed up to this call (pi's transcript length).
    pub transcript_messages: usize,
    /// Collapses (cache layout epochs) that ran at this call.
    pub epochs: usize,
    /// Folds that came with those epochs.
    pub folds: usize,
    /// Estimated tokens of what the harness alone would have sent: the
    /// system prompt and the whole transcript up to this call, every tool
    /// output and argument in full (same estimate as `tokens`).
    pub transcript_tokens: u64,
    /// Objects shown (the system prompt and the pool objects with a recorded version).
    pub shown: Vec<String>,
    /// The context commit the call followed (the session's tip as of its
    /// basis transaction); None before the session's first commit.
    #[serde(default)]
    pub commit: Option<String>,
    /// What the model was sent (the call rebuilt), when asked for
    /// ([`CallSummaryPlan::with_context`]): one rebuild gives both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Vec<Value>>,
}

/// One object of a session, as the model names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectLine {
    /// `t12`, `f3` (cache layout; assigned in both layouts), else None.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alias: Option<String>,
    #[serde(flatten)]
    pub entry: PoolEntry,
    pub active: bool,
    pub pinned: bool,
}

/// Estimated tokens of one message (what each call's record keeps, summed).
pub fn message_tokens(message: &Value) -> u64 {
    crate::context::output::message_tokens(&message.to_string())
}

/// Every session in `store`, oldest first.
pub async fn list_sessions(store: &dyn Store) -> Result<Vec<SessionSummary>> {
    use futures_util::stream::{self, StreamExt, TryStreamExt};
    // Three reads per session: on XTDB each is a round trip, so a store with
    // hundreds of sessions is listed LIST_CONCURRENCY at a time.
    let mut out: Vec<SessionSummary> = stream::iter(store.ids_of_type("session").await?)
        .map(|id| session_summary(store, id))
        .buffer_unordered(LIST_CONCURRENCY)
        .try_filter_map(|s| async move { Ok(s) })
        .try_collect()
        .await?;
    out.sort_by(|a, b| (&a.started, &a.session_id).cmp(&(&b.started, &b.session_id)));
    Ok(out)
}

/// Sessions summarised at once by [`list_sessions`].
const LIST_CONCURRENCY: usize = 16;

async fn session_summary(store: &dyn Store, id: String) -> Result<Option<SessionSummary>> {
    let history = store.history(&id).await?;
    let (Some(first), Some(last)) = (history.first(), history.last()) else {
        return Ok(None);
    };
    let Some(head) = last.doc.as_ref() else {
        return Ok(None);
    };
    let session_id = head
        .get("session_id")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| id.trim_start_matches("session:").to_string());
    let (calls, last_call_tokens) = match store.get(&chat_object_id(&session_id)).await? {
        Some(chat) => (
            paged::part_len(&chat, "model_calls").unwrap_or(0),
            paged::last_item(store, &chat, "model_calls")
                .await?
                .and_then(|r| r.get("tokens")?.as_u64()),
        ),
        None => (0, None),
    };
    Ok(Some(SessionSummary {
        objects: paged::part_len(head, "session_index").unwrap_or(0),
        session_id,
        started: first.tx_time.clone(),
        last_activity: last.tx_time.clone(),
        calls,
        last_call_tokens,
    }))
}

/// The layout a stored session ran with: its call records say (cache layout
/// records carry `epochs`), else its chat document's cache state.
fn stored_layout(chat: Option<&Document>) -> Option<Layout> {
    let chat = ChatDoc::parse(chat?).ok()?;
    if let Some(first) = chat.model_calls().first() {
        return Some(if first.epochs.is_some() {
            Layout::Cache
        } else {
            Layout::Spec
        });
    }
    let has_state = chat.layout.is_some_and(|l| !l.calls.is_empty());
    has_state.then_some(Layout::Cache)
}

impl Session {
    /// Opens an existing session for reading: its sets, chat and records as
    /// stored, objects at their latest versions, no reconciliation with the
    /// filesystem, no watcher, and no write ever (`flush` does nothing). The
    /// layout is the one the session ran with where its records tell
    /// (`options.layout` otherwise). `UNKNOWN_OBJECT` if the store has no
    /// such session.
    pub async fn open_read_only(
        store: Arc<dyn Store>,
        indexer: Arc<Indexer>,
        mut options: SessionOptions,
    ) -> Result<Session> {
        options.watch = false;
        options.system_prompt = None;
        let session_id = options.session_id.clone();
        let ids = vec![
            session_object_id(&session_id),
            chat_object_id(&session_id),
            crate::model::system_prompt_object_id(&session_id),
        ];
        let mut docs: HashMap<String, Document> = store
            .get_many(&ids)
            .await?
            .into_iter()
            .filter_map(|d| Some((d.get(ID_KEY)?.as_str()?.to_string(), d)))
            .collect();
        let Some(session_head) = docs.remove(&ids[0]) else {
            return Err(Error::UnknownObject(ids[0].clone()));
        };
        let session_desc = paged::PagedDesc::of(&session_head);
        let session_doc = paged::materialise_latest(&*store, session_head).await?;
        let (chat_desc, chat_doc) = match docs.remove(&ids[1]) {
            Some(head) => (
                paged::PagedDesc::of(&head),
                Some(paged::materialise_latest(&*store, head).await?),
            ),
            None => (None, None),
        };
        if let Some(layout) = stored_layout(chat_doc.as_ref()) {
            options.layout = layout;
        }
        let mut s = Session::empty(store, indexer, options);
        s.read_only = true;
        if let Some(sp) = docs.remove(&ids[2]) {
            s.system_prompt = Some(super::Known { doc: sp, tx: None });
        }
        s.restore(&session_doc, chat_doc.as_ref(), false).await?;
        s.writes.paged =
            StoredPages::restored(session_desc.as_ref(), chat_desc.as_ref(), chat_doc.as_ref());
        Ok(s)
    }

    /// Whether this session was opened read-only.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The layout this session assembles.
    pub fn layout(&self) -> Layout {
        self.options.layout
    }

    /// Every object the session knows, in `session_index` order, with the id
    /// the model sees.
    pub fn object_lines(&self) -> Vec<ObjectLine> {
        let resolver = self.resolver();
        self.sets
            .index
            .iter()
            .map(|id| ObjectLine {
                alias: self.alias_of(id),
                entry: self.pool_entry(id, resolver),
                active: self.sets.active.contains(id),
                pinned: self.sets.pinned.contains(id),
            })
            .collect()
    }

    /// An object id from what a person types: a full id, an alias (`t12`,
    /// `f3`) or a unique prefix (the rules of `activate`).
    pub fn resolve_id(&self, target: &str) -> Result<String> {
        if let Some(id) = self.resolve_alias_id(target) {
            return Ok(id);
        }
        if self.objects.contains_key(target)
            || target == self.ids.chat
            || target == self.ids.session
        {
            return Ok(target.to_string());
        }
        self.resolve_target(target)
            .map_err(|r| Error::UnknownObject(format!("{target}: {}", r.message)))
    }

    /// Summaries of calls `from..to` (clamped to the recorded calls). A call
    /// whose record keeps its token figures is not rebuilt; any other is
    /// reconstructed from the store, with the call before it for the cached
    /// estimate.
    pub async fn call_summaries(&self, from: usize, to: usize) -> Result<Vec<CallSummary>> {
        self.call_summary_plan(from, to)?.run(&*self.store).await
    }

    /// What [`Session::call_summaries`] needs, detached from the session (so
    /// a binding can run it without holding the session).
    pub fn call_summary_plan(&self, from: usize, to: usize) -> Result<CallSummaryPlan> {
        let to = to.min(self.records.model_calls.len());
        let from = from.min(to);
        Ok(CallSummaryPlan {
            base: match to {
                0 => None,
                n => Some(self.reconstruct_plan(n - 1)?),
            },
            from,
            to,
            epoch_calls: self.cache.state.epochs.iter().map(|e| e.call).collect(),
            fold_epochs: self.cache.state.folds.iter().map(|f| f.epoch).collect(),
            shown: (from..to)
                .map(|n| {
                    self.shown(n)
                        .unwrap_or_default()
                        .into_iter()
                        .map(|r| r.id)
                        .collect()
                })
                .collect(),
            consumed: self.records.model_calls[from..to]
                .iter()
                .map(|r| r.messages_consumed)
                .collect(),
            transcript: self.transcript_prefix_tokens(),
            recorded: self.records.model_calls[from..to]
                .iter()
                .map(|r| Some((r.messages?, r.tokens?, r.cached_tokens?)))
                .collect(),
            context: false,
        })
    }

    /// Estimated tokens of the harness transcript: element `k` covers the
    /// first `k` consumed messages plus the system prompt. Messages as the
    /// harness holds them, rebuilt from the chat turns and the toolcall
    /// objects (arguments and outputs in full).
    fn transcript_prefix_tokens(&self) -> Vec<u64> {
        let tokens = message_tokens;
        let object = |id: &Option<String>| id.as_ref().and_then(|id| self.objects.get(id));
        let mut sums = vec![self
            .system_prompt
            .as_ref()
            .and_then(|c| c.str("content"))
            .map_or(0, |p| units(utf16_len(p)))];
        let mut push = |n: u64| {
            let last = *sums.last().unwrap_or(&0);
            sums.push(last + n);
        };
        for turn in &self.chat.turns {
            if let Some(u) = &turn.user {
                push(tokens(
                    &serde_json::json!({"role": "user", "content": u.content}),
                ));
            }
            for m in &turn.messages {
                let n = match m.role.as_str() {
                    _ if m.raw.is_some() => m.raw.as_ref().map_or(0, tokens),
                    "assistant" => {
                        let mut n = tokens(&serde_json::json!({
                            "role": "assistant",
                            "content": m.content.clone().unwrap_or_default(),
                        }));
                        for c in m.tool_calls.iter().flatten() {
                            let args = object(&c.toolcall_id)
                                .and_then(|o| o.doc.get("args").cloned())
                                .or_else(|| c.arguments.clone())
                                .unwrap_or(Value::Null);
                            n += tokens(&args);
                        }
                        n
                    }
                    "toolResult" => {
                        let text = object(&m.toolcall_id)
                            .and_then(|o| o.str("content"))
                            .unwrap_or_default();
                        tokens(&serde_json::json!({
                            "role": "toolResult",
                            "toolCallId": m.call_id,
                            "toolName": m.tool,
                            "content": [{"type": "text", "text": text}],
                        }))
                    }
                    _ => 0,
                };
                push(n);
            }
        }
        sums
    }
}

/// See [`Session::call_summary_plan`].
#[derive(Debug, Clone)]
pub struct CallSummaryPlan {
    /// Reconstruction of call `to - 1` (earlier calls are its prefixes).
    base: Option<super::ReconstructPlan>,
    from: usize,
    to: usize,
    /// The call each epoch ran at.
    epoch_calls: Vec<u32>,
    /// Each fold's epoch count (its epoch's index + 1).
    fold_epochs: Vec<u32>,
    shown: Vec<Vec<String>>,
    consumed: Vec<usize>,
    /// See `transcript_prefix_tokens`.
    transcript: Vec<u64>,
    /// Per call: (messages, tokens, cached tokens) as its record keeps them,
    /// when it keeps all three (such a call is not rebuilt).
    recorded: Vec<Option<(usize, u64, u64)>>,
    /// Each summary carries the messages it was computed from.
    context: bool,
}

impl CallSummaryPlan {
    /// Each summary carries what the model was sent (the session report
    /// needs both: one rebuild instead of two).
    pub fn with_context(mut self) -> Self {
        self.context = true;
        self
    }

    pub async fn run(self, store: &dyn Store) -> Result<Vec<CallSummary>> {
        let Some(base) = &self.base else {
            return Ok(Vec::new());
        };
        let mut out = Vec::with_capacity(self.to - self.from);
        let mut fetched = Fetched::default();
        // What the model was sent at the call before, when it was rebuilt.
        let mut previous: Option<Vec<Value>> = None;
        for (k, call) in (self.from..self.to).enumerate() {
            let plan = base.for_call(call);
            let commit = plan.followed_commit(store).await?;
            let recorded = self.recorded[k].filter(|_| !self.context);
            let (messages, tokens, cached_tokens, context) = match recorded {
                Some((messages, tokens, cached)) => {
                    previous = None;
                    (messages, tokens, cached, None)
                }
                // Rebuilt: the call, and the one before for the cached part.
                None => {
                    let messages = plan.run_with(store, &mut fetched).await?;
                    let before = match (previous.take(), call) {
                        (Some(p), _) => Some(p),
                        (None, 0) => None,
                        (None, n) => {
                            Some(base.for_call(n - 1).run_with(store, &mut fetched).await?)
                        }
                    };
                    let tokens: Vec<u64> = messages.iter().map(message_tokens).collect();
                    let same = before.as_ref().map_or(0, |p| {
                        p.iter().zip(&messages).take_while(|(a, b)| a == b).count()
                    });
                    let sums = (
                        messages.len(),
                        tokens.iter().sum(),
                        tokens[..same].iter().sum(),
                    );
                    let context = self.context.then(|| messages.clone());
                    previous = Some(messages);
                    (sums.0, sums.1, sums.2, context)
                }
            };
            let at_call: Vec<usize> = self
                .epoch_calls
                .iter()
                .enumerate()
                .filter(|(_, c)| **c as usize == call)
                .map(|(i, _)| i)
                .collect();
            out.push(CallSummary {
                call,
                messages,
                tokens,
                cached_tokens,
                transcript_messages: self.consumed[k],
                transcript_tokens: self.transcript
                    [self.consumed[k].min(self.transcript.len().saturating_sub(1))],
                epochs: at_call.len(),
                folds: self
                    .fold_epochs
                    .iter()
                    .filter(|e| {
                        (**e as usize)
                            .checked_sub(1)
                            .is_some_and(|e| at_call.contains(&e))
                    })
                    .count(),
                shown: self.shown[k].clone(),
                commit,
                context,
            });
        }
        Ok(out)
    }
}
