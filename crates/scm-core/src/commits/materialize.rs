//! Materialize: a commit's conversation as pi messages (or a pi session
//! JSONL file), cached as a `ctx-snapshot:<hash>` document.
//!
//! 1. Walk the parents from the commit to the stop point: `compaction`
//!    (default) stops at the nearest compaction commit and starts with its
//!    messages (pi's summary); `root` walks to the root and skips compaction
//!    commits (full fidelity, the pre-compaction deltas are all there);
//!    `<ctx id>` gives what came after that ancestor (exclusive, like
//!    git's `A..B`). A snapshot commit is a full context: the walk stops
//!    there in every mode.
//! 2. Read each chat a delta refers to once, as of the newest transaction
//!    any commit of the walk names for it; an earlier commit's range is
//!    checked against its `lastFp` (the chat only appends, so it holds) and
//!    read as of its own transaction when it does not match.
//! 3. Render the items as pi messages: user messages and assistant messages
//!    as sent (tool-call arguments from the toolcall objects), tool results
//!    from their toolcall objects (`content` text and image parts; pi's
//!    `details` are not stored), passthrough messages (`custom`,
//!    `bashExecution`, `branchSummary`) as sent. `compactionSummary`
//!    messages in a chat are left out: compaction commits stand for them.
//! 4. Store the result under an id derived from (commit, stop, format): the
//!    same request later returns it without walking anything.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::{get_bare, Artifact, Commit, CommitType};
use crate::context::chat::{self, MessageEntry};
use crate::error::{Error, Result};
use crate::model::hashing::sha256_hex;
use crate::session::paged;
use crate::store::embedded::format_rfc3339_millis;
use crate::store::{AsOf, Document, Store, TxOp, ID_KEY};

pub const SNAPSHOT_TYPE: &str = "context_snapshot";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    Compaction,
    Root,
    Commit(String),
}

impl Stop {
    pub fn parse(s: Option<&str>) -> Result<Stop> {
        match s {
            None | Some("compaction") => Ok(Stop::Compaction),
            Some("root") => Ok(Stop::Root),
            Some(id) => {
                super::check_commit_id(id).map_err(|_| {
                    Error::InvalidArgument(format!(
                        "stop must be 'compaction', 'root' or a ctx- id; got {id:?}"
                    ))
                })?;
                Ok(Stop::Commit(id.to_string()))
            }
        }
    }

    fn as_str(&self) -> &str {
        match self {
            Stop::Compaction => "compaction",
            Stop::Root => "root",
            Stop::Commit(id) => id,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// `pi-messages/1`: an array of pi-ai messages.
    PiMessages,
    /// A pi session file (JSONL, version 3): a header, then one `message`
    /// entry per message chained by `parentId`.
    PiJsonl,
}

impl OutputFormat {
    pub fn parse(s: Option<&str>) -> Result<OutputFormat> {
        match s {
            None | Some("pi-messages") | Some(super::FORMAT) => Ok(OutputFormat::PiMessages),
            Some("pi-jsonl") => Ok(OutputFormat::PiJsonl),
            Some(o) => Err(Error::InvalidArgument(format!(
                "format must be 'pi-messages' or 'pi-jsonl'; got {o:?}"
            ))),
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            OutputFormat::PiMessages => super::FORMAT,
            OutputFormat::PiJsonl => "pi-jsonl",
        }
    }
}

#[derive(Debug, Clone)]
pub struct MaterializeOptions {
    pub stop: Stop,
    pub format: OutputFormat,
}

/// A materialized conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Materialized {
    /// The snapshot document holding it.
    pub snapshot: String,
    pub commit: String,
    pub stop: String,
    pub format: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jsonl: Option<String>,
    pub message_count: u64,
    pub token_count: u64,
    /// Commits of the chain that contributed.
    pub commits: u64,
    /// Served from the stored snapshot.
    #[serde(default)]
    pub cached: bool,
}

pub fn snapshot_id(commit: &str, stop: &Stop, format: OutputFormat) -> String {
    let h = sha256_hex(format!("{commit}\n{}\n{}", stop.as_str(), format.as_str()).as_bytes());
    format!("ctx-snapshot:{}", &h[..32])
}

/// The commits to concatenate, oldest first.
async fn walk(store: &dyn Store, id: &str, stop: &Stop) -> Result<Vec<Commit>> {
    let mut out = Vec::new();
    let mut next = Some(id.to_string());
    while let Some(id) = next.take() {
        if let Stop::Commit(s) = stop {
            if *s == id {
                out.reverse();
                return Ok(out);
            }
        }
        let c = get_bare(store, &id).await?;
        next = c.parent.clone();
        let t = c.commit_type;
        match t {
            CommitType::Snapshot => {
                out.push(c);
                break;
            }
            CommitType::Compaction if *stop == Stop::Compaction => {
                out.push(c);
                break;
            }
            CommitType::Compaction => {}
            CommitType::Delta => out.push(c),
        }
    }
    if let Stop::Commit(s) = stop {
        return Err(Error::InvalidArgument(format!(
            "{s} is not an ancestor of {id}"
        )));
    }
    out.reverse();
    Ok(out)
}

/// The flattened turns of a chat document: each turn's start (its `user`,
/// null for turn 0 without one), then its messages.
/// Read as stored JSON, not through `session::documents::ChatDoc`: commit
/// hashes cover the stored values exactly (a typed round trip could drop or
/// reorder fields).
pub(crate) fn flatten(chat: &Document) -> Vec<Value> {
    let mut out = Vec::new();
    for t in chat
        .get("turns")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        out.push(json!({"user": t.get("user").cloned().unwrap_or(Value::Null)}));
        out.extend(
            t.get("messages")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .cloned(),
        );
    }
    out
}

/// The fingerprint of a flattened item.
pub(crate) fn item_fp(item: &Value) -> Option<&str> {
    match item.get("user") {
        Some(u) => u.get("fp").and_then(Value::as_str),
        None => item.get("fp").and_then(Value::as_str),
    }
}

type Chats = HashMap<(String, i64), Vec<Value>>;

async fn read_chat(store: &dyn Store, chats: &mut Chats, chat: &str, tx: i64) -> Result<()> {
    let key = (chat.to_string(), tx);
    if chats.contains_key(&key) {
        return Ok(());
    }
    let doc = paged::get_as_of(store, chat, AsOf::TxId(tx))
        .await?
        .ok_or_else(|| Error::UnknownObject(format!("{chat} as of tx {tx}")))?;
    chats.insert(key, flatten(&doc));
    Ok(())
}

/// The items of each commit, in chain order.
async fn items_of(store: &dyn Store, chain: &[Commit]) -> Result<Vec<Vec<Value>>> {
    let mut newest: HashMap<&str, i64> = HashMap::new();
    for c in chain {
        if let Artifact::ChatRange { chat, tx, .. } = &c.artifact {
            let e = newest.entry(chat.as_str()).or_insert(*tx);
            *e = (*e).max(*tx);
        }
    }
    let mut chats: Chats = HashMap::new();
    let mut out = Vec::with_capacity(chain.len());
    for c in chain {
        match &c.artifact {
            Artifact::Messages { messages } => out.push(messages.clone()),
            Artifact::ChatRange {
                chat,
                tx,
                from,
                to,
                last_fp,
            } => {
                let (from, to) = (*from as usize, *to as usize);
                if from >= to {
                    out.push(Vec::new());
                    continue;
                }
                let latest = newest[chat.as_str()];
                read_chat(store, &mut chats, chat, latest).await?;
                let fits = |items: &Vec<Value>| {
                    to <= items.len() && (to == 0 || item_fp(&items[to - 1]) == last_fp.as_deref())
                };
                let mut at = latest;
                if !fits(&chats[&(chat.clone(), latest)]) {
                    read_chat(store, &mut chats, chat, *tx).await?;
                    at = *tx;
                    if !fits(&chats[&(chat.clone(), at)]) {
                        return Err(Error::StoreProtocol(format!(
                            "{}: {chat} as of tx {tx} does not hold items {from}..{to}",
                            c.id
                        )));
                    }
                }
                let items = &chats[&(chat.clone(), at)];
                out.push(items[from.min(to)..to].to_vec());
            }
        }
    }
    Ok(out)
}

/// Renders flattened chat items (or inline messages) as pi messages.
/// `toolcalls` maps toolcall object ids to their documents.
pub(crate) fn render_items(items: &[Value], toolcalls: &HashMap<String, Document>) -> Vec<Value> {
    let mut out = Vec::new();
    for item in items {
        if let Some(user) = item.get("user") {
            if user.is_object() {
                let mut m = Map::new();
                m.insert("role".into(), "user".into());
                m.insert("content".into(), user["content"].clone());
                if let Some(ts) = user.get("timestamp").filter(|t| !t.is_null()) {
                    m.insert("timestamp".into(), ts.clone());
                }
                out.push(Value::Object(m));
            }
            continue;
        }
        let Ok(e) = serde_json::from_value::<MessageEntry>(item.clone()) else {
            // Inline messages (compaction / snapshot artifacts) are pi
            // messages already.
            out.push(item.clone());
            continue;
        };
        if e.role == "compactionSummary" {
            continue;
        }
        if e.skipped == Some(true) {
            out.extend(e.raw.clone());
            continue;
        }
        match e.role.as_str() {
            "assistant" => out.push(chat::render_assistant(&e, |call| {
                call.arguments
                    .clone()
                    .or_else(|| {
                        let id = call.toolcall_id.as_deref()?;
                        toolcalls.get(id)?.get("args").cloned()
                    })
                    .unwrap_or_else(|| json!({}))
            })),
            "toolResult" => {
                let doc = e.toolcall_id.as_deref().and_then(|id| toolcalls.get(id));
                let text = doc
                    .and_then(|d| d.get("content"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let mut content = vec![json!({"type": "text", "text": text})];
                content.extend(crate::context::images::of_doc(doc).iter().cloned());
                let mut m = Map::new();
                m.insert("role".into(), "toolResult".into());
                m.insert(
                    "toolCallId".into(),
                    e.call_id.clone().unwrap_or_default().into(),
                );
                m.insert("toolName".into(), e.tool.clone().unwrap_or_default().into());
                m.insert("content".into(), Value::Array(content));
                m.insert("isError".into(), e.is_error.unwrap_or(false).into());
                if !e.timestamp.is_null() {
                    m.insert("timestamp".into(), e.timestamp.clone());
                }
                out.push(Value::Object(m));
            }
            _ => {}
        }
    }
    out
}

/// Toolcall object ids the items refer to.
pub(crate) fn toolcall_ids(items: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    for item in items {
        if let Some(id) = item.get("toolcall_id").and_then(Value::as_str) {
            out.push(id.to_string());
        }
        for c in item
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(id) = c.get("toolcall_id").and_then(Value::as_str) {
                out.push(id.to_string());
            }
        }
    }
    out
}

pub(crate) async fn fetch_toolcalls(
    store: &dyn Store,
    ids: Vec<String>,
) -> Result<HashMap<String, Document>> {
    let mut out = HashMap::new();
    for chunk in ids.chunks(1000) {
        for d in store.get_many(chunk).await? {
            if let Some(id) = d.get(ID_KEY).and_then(Value::as_str) {
                out.insert(id.to_string(), d);
            }
        }
    }
    Ok(out)
}

fn ts_of(m: &Value, fallback: &str) -> String {
    match m.get("timestamp").and_then(Value::as_i64) {
        Some(ms) => format_rfc3339_millis(ms),
        None => fallback.to_string(),
    }
}

/// A pi session file (version 3) holding `messages` as one branch.
pub fn to_pi_jsonl(commit: &Commit, messages: &[Value]) -> String {
    let hex = &commit.id[super::ID_PREFIX.len()..];
    let session_id = format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    );
    let mut lines = vec![json!({
        "type": "session",
        "version": 3,
        "id": session_id,
        "timestamp": commit.created_at,
        "cwd": "",
    })
    .to_string()];
    let mut parent: Value = Value::Null;
    for (i, m) in messages.iter().enumerate() {
        let id = format!("{:08x}", i + 1);
        lines.push(
            json!({
                "type": "message",
                "id": id,
                "parentId": parent,
                "timestamp": ts_of(m, &commit.created_at),
                "message": m,
            })
            .to_string(),
        );
        parent = Value::String(id);
    }
    let mut s = lines.join("\n");
    s.push('\n');
    s
}

/// See the module docs.
pub async fn materialize(
    store: &dyn Store,
    id: &str,
    opts: &MaterializeOptions,
) -> Result<Materialized> {
    super::check_commit_id(id)?;
    let snap = snapshot_id(id, &opts.stop, opts.format);
    if let Some(doc) = store.get(&snap).await? {
        let mut m: Materialized = serde_json::from_value(Value::Object(doc))
            .map_err(|e| Error::StoreProtocol(format!("malformed snapshot {snap}: {e}")))?;
        m.cached = true;
        return Ok(m);
    }
    let tip = get_bare(store, id).await?;
    let chain = walk(store, id, &opts.stop).await?;
    let items = items_of(store, &chain).await?;
    let toolcalls =
        fetch_toolcalls(store, items.iter().flat_map(|i| toolcall_ids(i)).collect()).await?;
    let messages: Vec<Value> = items
        .iter()
        .flat_map(|i| render_items(i, &toolcalls))
        .collect();
    let token_count = messages.iter().map(super::approx_tokens).sum();
    let mut m = Materialized {
        snapshot: snap.clone(),
        commit: id.to_string(),
        stop: opts.stop.as_str().to_string(),
        format: opts.format.as_str().to_string(),
        message_count: messages.len() as u64,
        token_count,
        commits: chain.len() as u64,
        messages: None,
        jsonl: None,
        cached: false,
    };
    match opts.format {
        OutputFormat::PiMessages => m.messages = Some(messages),
        OutputFormat::PiJsonl => m.jsonl = Some(to_pi_jsonl(&tip, &messages)),
    }
    let Value::Object(mut doc) = serde_json::to_value(&m)? else {
        return Err(Error::Internal("snapshot did not serialise".into()));
    };
    doc.remove("cached");
    doc.insert(ID_KEY.into(), snap.clone().into());
    doc.insert("type".into(), SNAPSHOT_TYPE.into());
    // A concurrent identical request may have stored it first: same content.
    store
        .submit(vec![
            TxOp::Match {
                id: snap,
                expected: None,
            },
            TxOp::Put(doc),
        ])
        .await?;
    Ok(m)
}
