//! Context commits (agent-context-commits.md): an agent's conversation as a
//! chain of immutable commits in the store, with show / history / resolve /
//! update-metadata / materialize.
//!
//! Documents (all assigned ids, never in a session's sets):
//! - `ctx-<32 hex>` — the commit (`type: "context_commit"`), written once
//!   under `match(id, null)` and never again: immutable. Its id is the
//!   SHA-256 of the stable JSON of `{parent, artifact, createdAt, template,
//!   sessionId}`, first 128 bits: the spec's deterministic inputs plus the
//!   session, because the document also records its provenance — two
//!   sessions committing identical inline messages in the same millisecond
//!   would otherwise share one commit carrying one session's provenance.
//! - `ctx-meta:<ctx id>` — the mutable metadata (`summary`). A separate
//!   document rather than new versions of the commit: the commit document
//!   has exactly one version whatever happens to its summary (its `match`
//!   guard proves it), and the summary's history is the metadata document's
//!   history (every update is a version, nothing is overwritten).
//! - `ctx-timeline:session:<sid>` / `ctx-timeline:principal:<p>` — the
//!   per-session and per-principal timelines `resolve` searches (see
//!   [`timeline`]); the session's also names the chain's tip.
//! - `ctx-snapshot:<hash>` — a cached materialization ([`materialize`]).
//!
//! A `delta` commit does not copy messages: its artifact is a reference
//! into the paged chat document of its session (`chat:<sid>` items
//! `[from, to)` of the flattened turns, as of transaction `tx`). The chat is
//! append-only in positions (messages change in place only to record a tool
//! call's result object), so storage is proportional to the conversation,
//! not to commits × conversation. `compaction` and `snapshot` commits carry
//! their messages inline (pi's summary; an imported context).

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::model::hashing::sha256_hex;
use crate::model::stable_json::stable_stringify;
use crate::store::embedded::{format_rfc3339_millis, parse_rfc3339_millis};
use crate::store::{Document, Store, TxOp, ID_KEY};

#[cfg(any(test, feature = "conformance"))]
pub mod conformance;
pub mod materialize;
pub mod timeline;

pub use materialize::{materialize, MaterializeOptions, Materialized, OutputFormat, Stop};

/// Format of the messages a commit's artifact holds: pi-ai messages
/// (`{role, content, …}`), version 1. A later format gets a new id and old
/// commits keep theirs (materialize translates).
pub const FORMAT: &str = "pi-messages/1";
/// `type` of a commit document.
pub const COMMIT_DOC_TYPE: &str = "context_commit";
/// `type` of a commit's metadata document.
pub const META_DOC_TYPE: &str = "context_commit_metadata";
/// Id prefix of commits.
pub const ID_PREFIX: &str = "ctx-";

pub fn meta_id(commit_id: &str) -> String {
    format!("ctx-meta:{commit_id}")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommitType {
    Delta,
    Compaction,
    Snapshot,
}

/// What made the commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    TurnBoundary,
    ToolCall,
    Compaction,
    SessionEnd,
    Explicit,
}

impl Trigger {
    pub fn parse(s: &str) -> Result<Trigger> {
        serde_json::from_value(Value::String(s.to_string())).map_err(|_| {
            Error::InvalidArgument(format!(
                "trigger must be one of turn_boundary, tool_call, compaction, session_end, explicit; got {s:?}"
            ))
        })
    }
}

/// Where a commit's messages are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Artifact {
    /// Items `[from, to)` of the flattened turns of chat document `chat` as
    /// of transaction `tx`; `last_fp` is the fingerprint of item `to - 1`
    /// (lets a reader use a later version of the chat and check it holds
    /// the same items).
    ChatRange {
        chat: String,
        tx: i64,
        from: u64,
        to: u64,
        #[serde(rename = "lastFp")]
        last_fp: Option<String>,
    },
    /// The messages themselves (a compaction's summary, a snapshot).
    Messages { messages: Vec<Value> },
}

/// A commit as `show` returns it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Commit {
    pub id: String,
    pub parent: Option<String>,
    pub commit_type: CommitType,
    pub artifact: Artifact,
    pub format: String,
    /// The harness and its version (`pi/0.73.1`): what kind of agent.
    pub template: String,
    /// Who ran it (user@host by default in the facade).
    pub principal: Option<String>,
    /// The filesystem id of the machine (`default_filesystem_id`).
    pub machine: String,
    pub session_id: String,
    pub trigger: Trigger,
    /// Messages in this commit's artifact (not the chain's).
    pub message_count: u64,
    /// Approximate tokens of the artifact (chars / 4).
    pub token_count: u64,
    /// RFC 3339, milliseconds, UTC.
    pub created_at: String,
    /// Mutable metadata (from `ctx-meta:<id>`), null when none.
    #[serde(default)]
    pub summary: Option<String>,
}

/// What a caller gives to create a commit; `parent` None = a root.
#[derive(Debug, Clone)]
pub struct NewCommit {
    pub parent: Option<String>,
    pub commit_type: CommitType,
    pub artifact: Artifact,
    pub template: String,
    pub principal: Option<String>,
    pub machine: String,
    pub session_id: String,
    pub trigger: Trigger,
    pub message_count: u64,
    pub token_count: u64,
    /// None: now.
    pub created_at: Option<String>,
    pub summary: Option<String>,
    /// The session timeline's tip after this commit: the chat position the
    /// next delta starts at (None for a commit that does not move it).
    pub tip_to: Option<u64>,
    /// The tip the caller read (the session timeline must still name it,
    /// or the commit is refused with `CAS_CONFLICT`).
    pub expect_tip: Option<String>,
}

/// The deterministic id of a commit.
pub fn commit_id(
    parent: Option<&str>,
    artifact: &Artifact,
    created_at: &str,
    template: &str,
    session_id: &str,
) -> String {
    let inputs = json!({
        "parent": parent,
        "artifact": artifact,
        "createdAt": created_at,
        "template": template,
        "sessionId": session_id,
    });
    let h = sha256_hex(stable_stringify(&inputs).as_bytes());
    format!("{ID_PREFIX}{}", &h[..32])
}

pub fn now_rfc3339() -> String {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    format_rfc3339_millis(ms)
}

/// A commit id this module could have made (so a bad argument gets a clear
/// error rather than a store lookup of nonsense).
pub fn check_commit_id(id: &str) -> Result<()> {
    let hex = id.strip_prefix(ID_PREFIX).unwrap_or("");
    if hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "not a context commit id (ctx- and 32 hex digits): {id:?}"
        )))
    }
}

fn commit_doc(c: &Commit) -> Result<Document> {
    let Value::Object(mut doc) = serde_json::to_value(c)? else {
        return Err(Error::Internal(
            "commit did not serialise to an object".into(),
        ));
    };
    doc.remove("id");
    doc.remove("summary");
    doc.insert(ID_KEY.into(), c.id.clone().into());
    doc.insert("type".into(), COMMIT_DOC_TYPE.into());
    Ok(doc)
}

fn meta_doc(id: &str, summary: Option<&str>, at: &str) -> Document {
    let mut doc = Map::new();
    doc.insert(ID_KEY.into(), meta_id(id).into());
    doc.insert("type".into(), META_DOC_TYPE.into());
    doc.insert("of".into(), id.into());
    doc.insert("summary".into(), summary.map_or(Value::Null, Value::from));
    doc.insert("updatedAt".into(), at.into());
    doc
}

fn from_doc(mut doc: Document, meta: Option<&Document>) -> Result<Commit> {
    let id = doc
        .remove(ID_KEY)
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    if doc.get("type").and_then(Value::as_str) != Some(COMMIT_DOC_TYPE) {
        return Err(Error::UnknownObject(id));
    }
    doc.remove("type");
    doc.insert("id".into(), id.into());
    if let Some(s) = meta.and_then(|m| m.get("summary")) {
        doc.insert("summary".into(), s.clone());
    }
    serde_json::from_value(Value::Object(doc))
        .map_err(|e| Error::StoreProtocol(format!("malformed context commit: {e}")))
}

/// Creates a commit (and its metadata and timeline entries) in one
/// transaction. The same inputs give the same id: creating it again
/// returns the stored one.
pub async fn create(store: &dyn Store, n: NewCommit) -> Result<Commit> {
    if let Some(p) = &n.parent {
        check_commit_id(p)?;
    }
    let created_at = match &n.created_at {
        Some(t) => format_rfc3339_millis(parse_rfc3339_millis(t)?),
        None => now_rfc3339(),
    };
    let at_ms = parse_rfc3339_millis(&created_at)?;
    let id = commit_id(
        n.parent.as_deref(),
        &n.artifact,
        &created_at,
        &n.template,
        &n.session_id,
    );
    let commit = Commit {
        id: id.clone(),
        parent: n.parent.clone(),
        commit_type: n.commit_type,
        artifact: n.artifact.clone(),
        format: FORMAT.into(),
        template: n.template.clone(),
        principal: n.principal.clone(),
        machine: n.machine.clone(),
        session_id: n.session_id.clone(),
        trigger: n.trigger,
        message_count: n.message_count,
        token_count: n.token_count,
        created_at: created_at.clone(),
        summary: n.summary.clone(),
    };
    let doc = commit_doc(&commit)?;
    let session_tl = timeline::session_key(&n.session_id);
    let principal_tl = n.principal.as_deref().map(timeline::principal_key);
    // A concurrent writer of a timeline (another agent of the same
    // principal) makes the transaction fail its guard: read again, retry.
    for _ in 0..8 {
        let mut ops = vec![
            TxOp::Match {
                id: id.clone(),
                expected: None,
            },
            TxOp::Put(doc.clone()),
        ];
        if n.summary.is_some() {
            ops.push(TxOp::Put(meta_doc(&id, n.summary.as_deref(), &created_at)));
        }
        let head = timeline::read_head(store, &session_tl).await?;
        if head.as_ref().and_then(|h| h.tip.as_deref()) != n.expect_tip.as_deref() {
            return Err(Error::CasConflict {
                id: timeline::head_id(&session_tl),
            });
        }
        let tip = n.tip_to.map(|to| (id.as_str(), to));
        ops.extend(timeline::append_ops(&session_tl, head, at_ms, &id, tip));
        if let Some(key) = &principal_tl {
            let head = timeline::read_head(store, key).await?;
            ops.extend(timeline::append_ops(key, head, at_ms, &id, None));
        }
        let r = store.submit(ops).await?;
        if r.committed {
            return Ok(commit);
        }
        if store.get(&id).await?.is_some() {
            return show(store, &id).await;
        }
    }
    Err(Error::CasConflict { id })
}

/// The commit and its current metadata.
pub async fn show(store: &dyn Store, id: &str) -> Result<Commit> {
    check_commit_id(id)?;
    let docs = store.get_many(&[id.to_string(), meta_id(id)]).await?;
    let mut commit = None;
    let mut meta = None;
    for d in docs {
        match d.get(ID_KEY).and_then(Value::as_str) {
            Some(x) if x == id => commit = Some(d),
            Some(_) => meta = Some(d),
            None => {}
        }
    }
    let doc = commit.ok_or_else(|| Error::UnknownObject(id.to_string()))?;
    from_doc(doc, meta.as_ref())
}

/// The commit without its metadata (one read).
pub(crate) async fn get_bare(store: &dyn Store, id: &str) -> Result<Commit> {
    let doc = store
        .get(id)
        .await?
        .ok_or_else(|| Error::UnknownObject(id.to_string()))?;
    from_doc(doc, None)
}

/// The commits among `ids` that exist, without their metadata (one
/// round trip).
pub(crate) async fn get_many_bare(store: &dyn Store, ids: &[String]) -> Result<Vec<Commit>> {
    let mut out = Vec::new();
    for chunk in ids.chunks(256) {
        for doc in store.get_many(chunk).await? {
            if doc.get("type").and_then(Value::as_str) == Some(COMMIT_DOC_TYPE) {
                out.push(from_doc(doc, None)?);
            }
        }
    }
    Ok(out)
}

/// The tip of `session_id`'s chain as of transaction `tx` (the commit a
/// model call with that basis transaction followed); None before the
/// session's first commit.
pub async fn tip_as_of(store: &dyn Store, session_id: &str, tx: i64) -> Result<Option<String>> {
    let id = timeline::head_id(&timeline::session_key(session_id));
    match store.get_as_of(&id, crate::store::AsOf::TxId(tx)).await? {
        Some(doc) => Ok(timeline::tip_of(doc)?.map(|(tip, _)| tip)),
        None => Ok(None),
    }
}

/// `id` and its ancestors, newest first, at most `depth` of them.
pub async fn history(store: &dyn Store, id: &str, depth: Option<usize>) -> Result<Vec<Commit>> {
    let mut out = Vec::new();
    let mut next = Some(id.to_string());
    let limit = depth.unwrap_or(usize::MAX);
    while let Some(id) = next.take() {
        if out.len() >= limit {
            break;
        }
        let c = show(store, &id).await?;
        next = c.parent.clone();
        out.push(c);
    }
    Ok(out)
}

/// Sets the summary (a new version of `ctx-meta:<id>`; the commit is
/// untouched).
pub async fn update_metadata(store: &dyn Store, id: &str, summary: Option<&str>) -> Result<()> {
    check_commit_id(id)?;
    if store.get(id).await?.is_none() {
        return Err(Error::UnknownObject(id.to_string()));
    }
    store
        .submit(vec![TxOp::Put(meta_doc(id, summary, &now_rfc3339()))])
        .await?;
    Ok(())
}

/// Whose timeline `resolve` searches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimelineOf {
    Session(String),
    Principal(String),
}

/// The newest commit made at or before `at` (RFC 3339) on the timeline, or
/// None when there is none that early.
pub async fn resolve(store: &dyn Store, of: &TimelineOf, at: &str) -> Result<Option<String>> {
    let at_ms = parse_rfc3339_millis(at)?;
    let key = match of {
        TimelineOf::Session(s) => timeline::session_key(s),
        TimelineOf::Principal(p) => timeline::principal_key(p),
    };
    timeline::resolve(store, &key, at_ms).await
}

/// The tip of a session's chain and the chat position after it.
pub async fn session_tip(store: &dyn Store, session_id: &str) -> Result<Option<(String, u64)>> {
    let head = timeline::read_head(store, &timeline::session_key(session_id)).await?;
    Ok(head.and_then(|h| Some((h.tip?, h.tip_to?))))
}

/// Approximate tokens of a value (chars of its JSON / 4).
pub fn approx_tokens(v: &Value) -> u64 {
    (serde_json::to_string(v).map_or(0, |s| s.chars().count()) as u64).div_ceil(4)
}
