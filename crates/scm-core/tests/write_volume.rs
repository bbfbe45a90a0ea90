//! What a flush writes grows with what changed, not with history (issue 5:
//! `transformContext` grows "with new messages, not with history"). A real
//! embedded store behind a counter of the bytes of every submitted document
//! (it forwards everything; nothing is faked) and a session of 400 model
//! calls that each add one assistant tool call and its result.

mod session_support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use scm_core::error::Result;
use scm_core::store::embedded::EmbeddedStore;
use scm_core::store::{AsOf, Document, Store, TxOp, TxReceipt, Version};
use serde_json::{json, Value};
use session_support::*;

/// Forwards to a real store, counting the JSON bytes of submitted documents.
struct Counting {
    inner: Arc<dyn Store>,
    bytes: AtomicU64,
}

#[async_trait]
impl Store for Counting {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }
    async fn submit(&self, ops: Vec<TxOp>) -> Result<TxReceipt> {
        let n: usize = ops
            .iter()
            .map(|op| match op {
                TxOp::Put(d) => Value::Object(d.clone()).to_string().len(),
                TxOp::Match { .. } => 0,
            })
            .sum();
        self.bytes.fetch_add(n as u64, Ordering::SeqCst);
        self.inner.submit(ops).await
    }
    async fn get(&self, id: &str) -> Result<Option<Document>> {
        self.inner.get(id).await
    }
    async fn get_many(&self, ids: &[String]) -> Result<Vec<Document>> {
        self.inner.get_many(ids).await
    }
    async fn get_as_of(&self, id: &str, as_of: AsOf<'_>) -> Result<Option<Document>> {
        self.inner.get_as_of(id, as_of).await
    }
    async fn history(&self, id: &str) -> Result<Vec<Version>> {
        self.inner.history(id).await
    }
    async fn latest_tx_id(&self) -> Result<Option<i64>> {
        self.inner.latest_tx_id().await
    }
    async fn ids_of_type(&self, ty: &str) -> Result<Vec<String>> {
        self.inner.ids_of_type(ty).await
    }
    async fn counts(&self) -> Result<scm_core::store::StoreCounts> {
        self.inner.counts().await
    }
    fn submitted_tx_count(&self) -> u64 {
        self.inner.submitted_tx_count()
    }
}

const CALLS: usize = 400;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flush_writes_what_changed_not_the_history() {
    let counting = Arc::new(Counting {
        inner: Arc::new(EmbeddedStore::open_in_memory().unwrap()),
        bytes: AtomicU64::new(0),
    });
    let ws = Workspace::new(counting.clone());
    let mut s = ws.session("volume").await;
    let mut t = Transcript::default();
    t.user("work through the modules");
    // per_call[i]: bytes written by call i+1's flush; total[i]: up to it.
    let (mut per_call, mut total) = (Vec::new(), Vec::new());
    let start = counting.bytes.load(Ordering::SeqCst);
    for i in 0..CALLS {
        let out = format!("module {i}: ").repeat(60);
        t.call(
            &format!("c{i}"),
            "bash",
            json!({"command": format!("cat m{i}.rs")}),
            &out,
        );
        let before = counting.bytes.load(Ordering::SeqCst);
        s.transform_context(&t.messages).await.unwrap();
        let after = counting.bytes.load(Ordering::SeqCst);
        per_call.push(after - before);
        total.push(after - start);
    }
    // Also the mean over 32 calls, so the tail pages' fill level does not
    // decide the comparison.
    let mean = |r: std::ops::RangeInclusive<usize>| {
        let n = r.clone().count() as u64;
        r.map(|c| per_call[c - 1]).sum::<u64>() / n
    };
    let (early, late) = (mean(9..=40), mean(369..=400));
    println!(
        "call 40: {} B, call 400: {} B; mean 9–40: {early} B, 369–400: {late} B; total 40: {} KiB, 400: {} KiB",
        per_call[39],
        per_call[399],
        total[39] / 1024,
        total[399] / 1024
    );
    assert!(
        per_call[399] <= 2 * per_call[39],
        "call 400 wrote {} B, call 40 {} B",
        per_call[399],
        per_call[39]
    );
    assert!(late <= 2 * early, "mean {late} B late vs {early} B early");
    // Linear: 10× the calls, about 10× the bytes (whole documents: ~50×).
    assert!(
        total[399] <= 12 * total[39],
        "total {} B after 400 calls vs {} B after 40",
        total[399],
        total[39]
    );
    // And nothing was lost: every call still rebuilds exactly.
    for i in [0, 39, 200, CALLS - 1] {
        s.reconstruct_call(i).await.unwrap();
    }
}
