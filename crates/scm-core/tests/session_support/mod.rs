//! Shared fixtures for the session / context / resume suites: the real
//! embedded store, plus a real XTDB node when `SCM_TEST_XTDB_URL` is set
//! (`SCM_REQUIRE_XTDB=1` makes its absence a failure). Real files in a
//! temporary workspace, pi-ai message shapes.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use scm_core::fs::indexer::{Indexer, IndexerOptions};
use scm_core::fs::resolver::Resolver;
use scm_core::session::{Session, SessionOptions};
use scm_core::store::embedded::EmbeddedStore;
use scm_core::store::xtdb::{XtdbOptions, XtdbStore};
use scm_core::store::Store;
use serde_json::{json, Value};

/// Every configured backend: embedded always, XTDB when a node is given.
pub fn stores() -> Vec<Arc<dyn Store>> {
    let mut out: Vec<Arc<dyn Store>> = vec![Arc::new(EmbeddedStore::open_in_memory().unwrap())];
    match std::env::var("SCM_TEST_XTDB_URL") {
        Ok(url) if !url.trim().is_empty() => out.push(Arc::new(
            XtdbStore::new(XtdbOptions::new(url)).expect("valid XTDB options"),
        )),
        _ => assert!(
            std::env::var("SCM_REQUIRE_XTDB").as_deref() != Ok("1"),
            "SCM_REQUIRE_XTDB=1 but SCM_TEST_XTDB_URL is unset"
        ),
    }
    out
}

/// A session id no other test (or earlier run against the same XTDB node) uses.
pub fn unique_id(prefix: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "{prefix}-{}-{nanos}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// A temporary workspace with a resolver and indexer on `store`.
pub struct Workspace {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub store: Arc<dyn Store>,
    pub indexer: Arc<Indexer>,
}

impl Workspace {
    pub fn new(store: Arc<dyn Store>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let resolver = Arc::new(Resolver::new(
            "fs-session-test".into(),
            root.clone(),
            vec![],
            true,
        ));
        let indexer = Arc::new(Indexer::new(
            store.clone(),
            resolver,
            IndexerOptions::default(),
        ));
        Self {
            _dir: dir,
            root,
            store,
            indexer,
        }
    }

    pub fn write(&self, rel: &str, content: &str) -> String {
        let p = self.root.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, content).unwrap();
        p.to_string_lossy().into_owned()
    }

    pub fn remove(&self, rel: &str) {
        std::fs::remove_file(self.root.join(rel)).unwrap();
    }

    pub fn file_id(&self, rel: &str) -> String {
        self.indexer
            .resolver
            .resolve(rel)
            .unwrap()
            .source
            .file_object_id()
    }

    pub async fn open(&self, options: SessionOptions) -> Session {
        Session::open(self.store.clone(), self.indexer.clone(), options)
            .await
            .unwrap()
    }

    pub async fn session(&self, prefix: &str) -> Session {
        self.open(SessionOptions::new(unique_id(prefix))).await
    }
}

/// A growing pi transcript with increasing timestamps.
#[derive(Default, Clone)]
pub struct Transcript {
    pub messages: Vec<Value>,
    ts: i64,
}

impl Transcript {
    fn tick(&mut self) -> i64 {
        self.ts += 1;
        1_700_000_000_000 + self.ts
    }

    pub fn user(&mut self, text: &str) -> &mut Self {
        let ts = self.tick();
        self.messages
            .push(json!({"role": "user", "content": text, "timestamp": ts}));
        self
    }

    /// An assistant message with tool calls `(call id, tool, arguments)`.
    pub fn assistant(&mut self, text: &str, calls: &[(&str, &str, Value)]) -> &mut Self {
        let ts = self.tick();
        let mut content = vec![json!({"type": "text", "text": text})];
        for (id, name, args) in calls {
            content.push(json!({"type": "toolCall", "id": id, "name": name, "arguments": args}));
        }
        self.messages.push(json!({
            "role": "assistant", "content": content,
            "api": "faux", "provider": "faux", "model": "faux-1",
            "usage": {"input": 10, "output": 5}, "stopReason": if calls.is_empty() { "stop" } else { "toolUse" },
            "timestamp": ts,
        }));
        self
    }

    pub fn result(&mut self, call_id: &str, tool: &str, text: &str, is_error: bool) -> &mut Self {
        let ts = self.tick();
        self.messages.push(json!({
            "role": "toolResult", "toolCallId": call_id, "toolName": tool,
            "content": [{"type": "text", "text": text}], "isError": is_error, "timestamp": ts,
        }));
        self
    }

    /// One assistant call of `tool` with its result.
    pub fn call(&mut self, call_id: &str, tool: &str, args: Value, output: &str) -> &mut Self {
        self.assistant("", &[(call_id, tool, args)])
            .result(call_id, tool, output, false)
    }

    pub fn push(&mut self, v: Value) -> &mut Self {
        self.messages.push(v);
        self
    }
}

/// One model call: the context for `t`'s messages, kept in `outs`.
pub async fn step(s: &mut Session, t: &Transcript, outs: &mut Vec<Vec<Value>>) -> Vec<Value> {
    let out = s.transform_context(&t.messages).await.unwrap();
    outs.push(out.clone());
    out
}

/// Every call so far is reconstructed exactly as it was shown.
pub async fn assert_rebuilt(s: &Session, outs: &[Vec<Value>]) {
    for (k, out) in outs.iter().enumerate() {
        assert_eq!(&s.reconstruct_call(k).await.unwrap(), out, "call {k}");
    }
}

/// Every text in an assembled context (message strings, text parts).
pub fn texts(out: &[Value]) -> Vec<String> {
    let mut v = Vec::new();
    for m in out {
        match &m["content"] {
            Value::String(s) => v.push(s.clone()),
            Value::Array(parts) => {
                for p in parts {
                    for k in ["text", "thinking"] {
                        if let Some(s) = p.get(k).and_then(Value::as_str) {
                            v.push(s.to_string());
                        }
                    }
                }
            }
            _ => {}
        }
    }
    v
}

/// The text of call `call`'s result (the cache layout names calls `t1`,
/// `t2`, …), its parts joined by newlines.
pub fn result_text(out: &[Value], call: &str) -> String {
    let m = out
        .iter()
        .find(|m| m["role"] == "toolResult" && m["toolCallId"] == call)
        .unwrap_or_else(|| panic!("no result of {call}"));
    texts(std::slice::from_ref(m)).join("\n")
}

/// How many times `needle` occurs in the whole assembled context.
pub fn occurrences(out: &[Value], needle: &str) -> usize {
    texts(out).iter().map(|t| t.matches(needle).count()).sum()
}

/// The ACTIVE_CONTENT ids, in order.
pub fn active_ids(out: &[Value]) -> Vec<String> {
    out.iter()
        .filter_map(|m| m["content"].as_str())
        .filter_map(|s| s.strip_prefix("ACTIVE_CONTENT id="))
        .map(|s| s.lines().next().unwrap_or_default().to_string())
        .collect()
}

/// The METADATA_POOL message text.
pub fn pool_text(out: &[Value]) -> String {
    out.iter()
        .filter_map(|m| m["content"].as_str())
        .find(|s| s.starts_with("METADATA_POOL"))
        .unwrap_or_default()
        .to_string()
}

pub fn toolcall_id(session: &Session, call_id: &str) -> String {
    format!("toolcall:{}:{call_id}", session.session_id())
}
