//! The store conformance suite: the one contract every backend must pass.
//!
//! Backend-agnostic: every case writes only ids under a fresh unique prefix
//! and never assumes an empty database, so it can run against a shared XTDB
//! node in parallel with other tests. Cases panic with their own name on
//! failure. Use [`run_all`], or [`store_conformance_tests!`] to get one
//! `#[tokio::test]` per case:
//!
//! ```ignore
//! scm_core::store_conformance_tests!(async {
//!     std::sync::Arc::new(EmbeddedStore::open_in_memory().unwrap()) as Arc<dyn Store>
//! });
//! ```
//!
//! Compiled for this crate's tests and with the `conformance` feature (which
//! the crate's own dev-dependency on itself enables for `tests/`).
#![cfg(any(test, feature = "conformance"))]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};

use super::embedded::parse_rfc3339_millis;
use super::{AsOf, Document, Store, TxOp, TxReceipt, ID_KEY};

/// Every case, in order, each under its own name.
pub const CASES: &[&str] = &[
    "put_then_get_latest",
    "history_accumulates_oldest_first",
    "get_as_of_tx_id",
    "get_as_of_tx_time",
    "multi_put_shares_one_tx",
    "failed_match_writes_nothing",
    "cas_create_if_absent",
    "cas_match_then_put",
    "cas_conflict_leaves_latest_unchanged",
    "match_compares_whole_document",
    "read_your_writes",
    "get_many_omits_missing",
    "documents_round_trip_exactly",
    "ids_round_trip_exactly",
    "latest_tx_id_covers_submits",
    "submitted_tx_count_counts_submits",
    "concurrent_submits_keep_every_version",
    "put_without_string_id_is_invalid_argument",
    "ids_of_type_lists_by_latest_type",
    "counts_cover_every_version",
];

/// Run every case against `store`, one after another.
pub async fn run_all(store: Arc<dyn Store>) {
    macro_rules! run {
        ($($case:ident),* $(,)?) => {{
            let names: &[&str] = &[$(stringify!($case)),*];
            assert_eq!(names, CASES, "run_all and CASES disagree");
            $(
                eprintln!("store conformance [{}]: {}", store.kind(), stringify!($case));
                $case(store.clone()).await;
            )*
        }};
    }
    run!(
        put_then_get_latest,
        history_accumulates_oldest_first,
        get_as_of_tx_id,
        get_as_of_tx_time,
        multi_put_shares_one_tx,
        failed_match_writes_nothing,
        cas_create_if_absent,
        cas_match_then_put,
        cas_conflict_leaves_latest_unchanged,
        match_compares_whole_document,
        read_your_writes,
        get_many_omits_missing,
        documents_round_trip_exactly,
        ids_round_trip_exactly,
        latest_tx_id_covers_submits,
        submitted_tx_count_counts_submits,
        concurrent_submits_keep_every_version,
        put_without_string_id_is_invalid_argument,
        ids_of_type_lists_by_latest_type,
        counts_cover_every_version,
    );
}

/// One `#[tokio::test]` per conformance case. `$make` is an expression that
/// evaluates to a future yielding an `Arc<dyn Store>`; it is evaluated once
/// per test.
#[macro_export]
macro_rules! store_conformance_tests {
    ($make:expr) => {
        $crate::store_conformance_tests!(@cases $make;
            put_then_get_latest,
            history_accumulates_oldest_first,
            get_as_of_tx_id,
            get_as_of_tx_time,
            multi_put_shares_one_tx,
            failed_match_writes_nothing,
            cas_create_if_absent,
            cas_match_then_put,
            cas_conflict_leaves_latest_unchanged,
            match_compares_whole_document,
            read_your_writes,
            get_many_omits_missing,
            documents_round_trip_exactly,
            ids_round_trip_exactly,
            latest_tx_id_covers_submits,
            submitted_tx_count_counts_submits,
            concurrent_submits_keep_every_version,
            put_without_string_id_is_invalid_argument,
            ids_of_type_lists_by_latest_type,
            counts_cover_every_version,
        );
    };
    (@cases $make:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let store: ::std::sync::Arc<dyn $crate::store::Store> = $make.await;
                $crate::store::conformance::$case(store).await;
            }
        )*
    };
}

// ---------------------------------------------------------------- helpers

/// A prefix no other test run, process or case shares.
fn unique(case: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "conformance:{case}:{}-{nanos:x}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

fn doc(id: &str, fields: Value) -> Document {
    let Value::Object(mut map) = fields else {
        panic!("test document fields must be a JSON object");
    };
    map.insert(ID_KEY.to_owned(), Value::String(id.to_owned()));
    map
}

async fn put(store: &Arc<dyn Store>, case: &str, d: Document) -> TxReceipt {
    let r = submit(store, case, vec![TxOp::Put(d)]).await;
    assert!(r.committed, "[{case}] a plain put must commit: {r:?}");
    r
}

async fn submit(store: &Arc<dyn Store>, case: &str, ops: Vec<TxOp>) -> TxReceipt {
    store
        .submit(ops)
        .await
        .unwrap_or_else(|e| panic!("[{case}] submit failed: {e} ({})", e.code()))
}

async fn get(store: &Arc<dyn Store>, case: &str, id: &str) -> Option<Document> {
    store
        .get(id)
        .await
        .unwrap_or_else(|e| panic!("[{case}] get({id:?}) failed: {e}"))
}

async fn as_of(store: &Arc<dyn Store>, case: &str, id: &str, at: AsOf<'_>) -> Option<Document> {
    store
        .get_as_of(id, at)
        .await
        .unwrap_or_else(|e| panic!("[{case}] get_as_of({id:?}, {at:?}) failed: {e}"))
}

fn millis(case: &str, time: &str) -> i64 {
    parse_rfc3339_millis(time)
        .unwrap_or_else(|e| panic!("[{case}] tx time {time:?} is not RFC 3339: {e}"))
}

fn match_op(id: &str, expected: Option<Document>) -> TxOp {
    TxOp::Match {
        id: id.to_owned(),
        expected,
    }
}

// ------------------------------------------------------------------ cases

/// The latest put is what `get` returns; an unknown id is `None`.
pub async fn put_then_get_latest(store: Arc<dyn Store>) {
    const CASE: &str = "put_then_get_latest";
    let id = format!("{}:a", unique(CASE));
    assert_eq!(get(&store, CASE, &id).await, None, "[{CASE}] unknown id");
    let v1 = doc(&id, json!({"n": 1}));
    let v2 = doc(&id, json!({"n": 2, "extra": "x"}));
    put(&store, CASE, v1).await;
    put(&store, CASE, v2.clone()).await;
    assert_eq!(get(&store, CASE, &id).await, Some(v2), "[{CASE}] latest");
}

/// Every put is a version; history is oldest first with ascending tx ids and
/// non-decreasing tx times that match the receipts.
pub async fn history_accumulates_oldest_first(store: Arc<dyn Store>) {
    const CASE: &str = "history_accumulates_oldest_first";
    let id = format!("{}:a", unique(CASE));
    let mut receipts = Vec::new();
    let docs: Vec<Document> = (0..3).map(|n| doc(&id, json!({"n": n}))).collect();
    for d in &docs {
        receipts.push(put(&store, CASE, d.clone()).await);
    }
    let history = store.history(&id).await.expect("history");
    assert_eq!(history.len(), 3, "[{CASE}] three versions: {history:?}");
    for (i, (v, r)) in history.iter().zip(&receipts).enumerate() {
        assert_eq!(v.doc.as_ref(), Some(&docs[i]), "[{CASE}] version {i} doc");
        assert_eq!(v.tx_id, r.tx_id, "[{CASE}] version {i} tx id = receipt");
        assert_eq!(
            millis(CASE, &v.tx_time),
            millis(CASE, &r.tx_time),
            "[{CASE}] version {i} tx time = receipt"
        );
    }
    for w in receipts.windows(2) {
        assert!(w[0].tx_id < w[1].tx_id, "[{CASE}] tx ids ascend: {w:?}");
        assert!(
            millis(CASE, &w[0].tx_time) <= millis(CASE, &w[1].tx_time),
            "[{CASE}] tx times never go back: {w:?}"
        );
    }
    let unknown = store
        .history(&format!("{id}:never"))
        .await
        .expect("history");
    assert!(unknown.is_empty(), "[{CASE}] unknown id has no history");
}

/// As of a tx id: the version written at or before it; `None` before creation.
pub async fn get_as_of_tx_id(store: Arc<dyn Store>) {
    const CASE: &str = "get_as_of_tx_id";
    let id = format!("{}:a", unique(CASE));
    let other = format!("{id}:other");
    let before = put(&store, CASE, doc(&other, json!({}))).await;
    let v1 = doc(&id, json!({"n": 1}));
    let v2 = doc(&id, json!({"n": 2}));
    let r1 = put(&store, CASE, v1.clone()).await;
    // An unrelated tx between the versions: reading as of it still sees v1.
    let between = put(&store, CASE, doc(&other, json!({"b": true}))).await;
    let r2 = put(&store, CASE, v2.clone()).await;
    let cases = [
        (before.tx_id, None),
        (r1.tx_id - 1, None),
        (r1.tx_id, Some(&v1)),
        (between.tx_id, Some(&v1)),
        (r2.tx_id - 1, Some(&v1)),
        (r2.tx_id, Some(&v2)),
    ];
    for (tx_id, expected) in cases {
        assert_eq!(
            as_of(&store, CASE, &id, AsOf::TxId(tx_id)).await.as_ref(),
            expected,
            "[{CASE}] as of tx {tx_id} (v1 at {}, v2 at {})",
            r1.tx_id,
            r2.tx_id
        );
    }
}

/// As of a tx time: the newest version whose tx time is at or before it
/// (two versions may share a millisecond; then the later one is visible).
pub async fn get_as_of_tx_time(store: Arc<dyn Store>) {
    const CASE: &str = "get_as_of_tx_time";
    let id = format!("{}:a", unique(CASE));
    for n in 0..3 {
        put(&store, CASE, doc(&id, json!({"n": n}))).await;
    }
    let history = store.history(&id).await.expect("history");
    assert_eq!(history.len(), 3, "[{CASE}] three versions");
    let first_ms = millis(CASE, &history[0].tx_time);
    let before = super::embedded::format_rfc3339_millis(first_ms - 1);
    assert_eq!(
        as_of(&store, CASE, &id, AsOf::TxTime(&before)).await,
        None,
        "[{CASE}] 1 ms before the first version"
    );
    for v in &history {
        let t = millis(CASE, &v.tx_time);
        let expected = history
            .iter()
            .rfind(|w| millis(CASE, &w.tx_time) <= t)
            .and_then(|w| w.doc.clone());
        assert_eq!(
            as_of(&store, CASE, &id, AsOf::TxTime(&v.tx_time)).await,
            expected,
            "[{CASE}] as of {} (history {history:?})",
            v.tx_time
        );
    }
}

/// Several puts in one transaction share one tx id and all land.
pub async fn multi_put_shares_one_tx(store: Arc<dyn Store>) {
    const CASE: &str = "multi_put_shares_one_tx";
    let p = unique(CASE);
    let docs: Vec<Document> = (0..3)
        .map(|n| doc(&format!("{p}:{n}"), json!({"n": n})))
        .collect();
    let r = submit(&store, CASE, docs.iter().cloned().map(TxOp::Put).collect()).await;
    assert!(r.committed, "[{CASE}] committed");
    for d in &docs {
        let id = d[ID_KEY].as_str().unwrap();
        let h = store.history(id).await.expect("history");
        assert_eq!(h.len(), 1, "[{CASE}] one version of {id}");
        assert_eq!(
            h[0].tx_id, r.tx_id,
            "[{CASE}] {id} written by the shared tx"
        );
        assert_eq!(h[0].doc.as_ref(), Some(d), "[{CASE}] {id} doc");
    }
}

/// A failing `Match` anywhere in a transaction aborts every put in it, even
/// puts listed before it; the tx still gets an id and `committed: false`.
pub async fn failed_match_writes_nothing(store: Arc<dyn Store>) {
    const CASE: &str = "failed_match_writes_nothing";
    let p = unique(CASE);
    let (a, b, guard) = (format!("{p}:a"), format!("{p}:b"), format!("{p}:guard"));
    let a1 = doc(&a, json!({"v": 1}));
    let guard_doc = doc(&guard, json!({"v": 1}));
    let seeded = submit(
        &store,
        CASE,
        vec![TxOp::Put(a1.clone()), TxOp::Put(guard_doc.clone())],
    )
    .await;
    let wrong = doc(&guard, json!({"v": 2}));
    let r = submit(
        &store,
        CASE,
        vec![
            TxOp::Put(doc(&a, json!({"v": 2}))),
            TxOp::Put(doc(&b, json!({"v": 1}))),
            match_op(&guard, Some(wrong)),
        ],
    )
    .await;
    assert!(!r.committed, "[{CASE}] aborted: {r:?}");
    assert!(
        r.tx_id > seeded.tx_id,
        "[{CASE}] aborted tx consumes a tx id"
    );
    assert_eq!(
        get(&store, CASE, &a).await,
        Some(a1),
        "[{CASE}] a unchanged"
    );
    assert_eq!(
        get(&store, CASE, &b).await,
        None,
        "[{CASE}] b never written"
    );
    assert_eq!(store.history(&a).await.expect("history").len(), 1);
    assert!(store.history(&b).await.expect("history").is_empty());
    assert_eq!(get(&store, CASE, &guard).await, Some(guard_doc));
}

/// `Match None` + put creates only if absent.
pub async fn cas_create_if_absent(store: Arc<dyn Store>) {
    const CASE: &str = "cas_create_if_absent";
    let id = format!("{}:a", unique(CASE));
    let first = doc(&id, json!({"who": "first"}));
    let r1 = submit(
        &store,
        CASE,
        vec![match_op(&id, None), TxOp::Put(first.clone())],
    )
    .await;
    assert!(r1.committed, "[{CASE}] absent → created");
    let r2 = submit(
        &store,
        CASE,
        vec![
            match_op(&id, None),
            TxOp::Put(doc(&id, json!({"who": "second"}))),
        ],
    )
    .await;
    assert!(!r2.committed, "[{CASE}] present → refused");
    assert_eq!(get(&store, CASE, &id).await, Some(first));
    assert_eq!(store.history(&id).await.expect("history").len(), 1);
}

/// `Match expected` + put succeeds when the latest version is `expected`.
pub async fn cas_match_then_put(store: Arc<dyn Store>) {
    const CASE: &str = "cas_match_then_put";
    let id = format!("{}:a", unique(CASE));
    let v1 = doc(&id, json!({"n": 1, "nothing": null, "list": [1, 2]}));
    let v2 = doc(&id, json!({"n": 2}));
    put(&store, CASE, v1.clone()).await;
    let r = submit(
        &store,
        CASE,
        vec![match_op(&id, Some(v1)), TxOp::Put(v2.clone())],
    )
    .await;
    assert!(r.committed, "[{CASE}] expected doc matched");
    assert_eq!(get(&store, CASE, &id).await, Some(v2));
}

/// A stale expectation is a conflict: `committed: false`, latest unchanged,
/// and the aborted tx still consumed a tx id.
pub async fn cas_conflict_leaves_latest_unchanged(store: Arc<dyn Store>) {
    const CASE: &str = "cas_conflict_leaves_latest_unchanged";
    let id = format!("{}:a", unique(CASE));
    let v1 = doc(&id, json!({"n": 1}));
    let v2 = doc(&id, json!({"n": 2}));
    put(&store, CASE, v1.clone()).await;
    let r2 = put(&store, CASE, v2.clone()).await;
    let r = submit(
        &store,
        CASE,
        vec![
            match_op(&id, Some(v1)),
            TxOp::Put(doc(&id, json!({"n": 3}))),
        ],
    )
    .await;
    assert!(!r.committed, "[{CASE}] stale expectation must not commit");
    assert!(r.tx_id > r2.tx_id, "[{CASE}] aborted tx has its own tx id");
    let latest = store.latest_tx_id().await.expect("latest_tx_id");
    assert!(
        latest >= Some(r.tx_id),
        "[{CASE}] aborted tx is visible as a tx"
    );
    assert_eq!(get(&store, CASE, &id).await, Some(v2), "[{CASE}] unchanged");
    assert_eq!(store.history(&id).await.expect("history").len(), 2);
}

/// `Match` compares the whole document: a missing key differs from a null
/// one, 1 differs from 1.0, and a subset of keys is not a match.
pub async fn match_compares_whole_document(store: Arc<dyn Store>) {
    const CASE: &str = "match_compares_whole_document";
    let id = format!("{}:a", unique(CASE));
    let stored = doc(&id, json!({"a": null, "n": 1, "s": "x"}));
    put(&store, CASE, stored.clone()).await;
    let near_misses = [
        ("missing vs null", json!({"n": 1, "s": "x"})),
        ("integer vs float", json!({"a": null, "n": 1.0, "s": "x"})),
        ("extra key", json!({"a": null, "n": 1, "s": "x", "t": 0})),
        ("string vs number", json!({"a": null, "n": "1", "s": "x"})),
    ];
    for (what, fields) in near_misses {
        let r = submit(
            &store,
            CASE,
            vec![
                match_op(&id, Some(doc(&id, fields))),
                TxOp::Put(doc(&id, json!({"overwritten": what}))),
            ],
        )
        .await;
        assert!(!r.committed, "[{CASE}] {what} must not match");
    }
    assert!(
        !submit(&store, CASE, vec![match_op(&id, None)])
            .await
            .committed,
        "[{CASE}] an existing doc is not absent"
    );
    let exact = submit(&store, CASE, vec![match_op(&id, Some(stored.clone()))]).await;
    assert!(exact.committed, "[{CASE}] the exact document matches");
    assert_eq!(get(&store, CASE, &id).await, Some(stored));
}

/// Once `submit` returns, every read sees it: get, get_many, history, as-of.
pub async fn read_your_writes(store: Arc<dyn Store>) {
    const CASE: &str = "read_your_writes";
    let id = format!("{}:a", unique(CASE));
    for n in 0..5 {
        let d = doc(&id, json!({"n": n}));
        let r = put(&store, CASE, d.clone()).await;
        assert_eq!(
            get(&store, CASE, &id).await.as_ref(),
            Some(&d),
            "[{CASE}] get {n}"
        );
        let many = store
            .get_many(std::slice::from_ref(&id))
            .await
            .expect("get_many");
        assert_eq!(many, vec![d.clone()], "[{CASE}] get_many {n}");
        let h = store.history(&id).await.expect("history");
        assert_eq!(
            h.last().and_then(|v| v.doc.as_ref()),
            Some(&d),
            "[{CASE}] history {n}"
        );
        assert_eq!(
            as_of(&store, CASE, &id, AsOf::TxId(r.tx_id)).await.as_ref(),
            Some(&d),
            "[{CASE}] as of own tx {n}"
        );
    }
}

/// `get_many` returns the latest version of each present id, none for
/// missing ids.
pub async fn get_many_omits_missing(store: Arc<dyn Store>) {
    const CASE: &str = "get_many_omits_missing";
    let p = unique(CASE);
    let a = doc(&format!("{p}:a"), json!({"n": 1}));
    let b1 = doc(&format!("{p}:b"), json!({"n": 1}));
    let b2 = doc(&format!("{p}:b"), json!({"n": 2}));
    submit(&store, CASE, vec![TxOp::Put(a.clone()), TxOp::Put(b1)]).await;
    put(&store, CASE, b2.clone()).await;
    let ids = vec![
        format!("{p}:missing1"),
        format!("{p}:b"),
        format!("{p}:a"),
        format!("{p}:missing2"),
    ];
    let mut got = store.get_many(&ids).await.expect("get_many");
    got.sort_by(|x, y| x[ID_KEY].as_str().cmp(&y[ID_KEY].as_str()));
    assert_eq!(got, vec![a, b2], "[{CASE}] present ids, latest versions");
    let none = store
        .get_many(&[format!("{p}:missing3")])
        .await
        .expect("get_many");
    assert!(none.is_empty(), "[{CASE}] all missing");
    assert!(store.get_many(&[]).await.expect("get_many").is_empty());
}

/// A document comes back exactly as written: unicode (astral plane too),
/// control characters, quotes and backslashes, deep nesting, nulls, empty
/// containers, integers up to 2^53 and floats.
pub async fn documents_round_trip_exactly(store: Arc<dyn Store>) {
    const CASE: &str = "documents_round_trip_exactly";
    let id = format!("{}:a", unique(CASE));
    let d = doc(
        &id,
        json!({
            "unicode": "héllo wörld — 日本語 — Ω — 😀 𝄞 𐍈",
            "control": "\u{0}\u{1}\u{8}\t\n\u{b}\u{c}\r\u{1b}\u{1f}\u{7f}",
            "quotes": "she said \"hi\" \\ back\\\\slash / slash '",
            "json_looking": "{\"not\": \"parsed\"}",
            "nested": {"a": [1, [2, [3, {"b": null}]], {}], "c": {"d": {"e": "deep"}}},
            "null_kept": null,
            "empty_array": [],
            "empty_object": {},
            "empty_string": "",
            "ints": [0, -1, 1, 2_147_483_648_i64, 9_007_199_254_740_992_i64, -9_007_199_254_740_992_i64],
            "floats": [0.1, -0.5, 1.5, 100.0, 1e-7, 6.022_140_76e23, 1.797_693_134_862_315_7e308, 5e-324],
            "bools": [true, false],
            "mixed": [null, "x", 1, 0.25, {"k": []}, [[]]],
        }),
    );
    put(&store, CASE, d.clone()).await;
    assert_eq!(
        get(&store, CASE, &id).await.as_ref(),
        Some(&d),
        "[{CASE}] get"
    );
    let h = store.history(&id).await.expect("history");
    assert_eq!(h[0].doc.as_ref(), Some(&d), "[{CASE}] history");
    assert_eq!(
        store
            .get_many(std::slice::from_ref(&id))
            .await
            .expect("get_many"),
        vec![d.clone()],
        "[{CASE}] get_many"
    );
    // Exactly equal also means equal to `Match`.
    let r = submit(&store, CASE, vec![match_op(&id, Some(d))]).await;
    assert!(r.committed, "[{CASE}] the round-tripped doc matches itself");
}

/// Ids with `:`, `/`, quotes, backslashes, spaces and unicode are stored and
/// addressed exactly.
pub async fn ids_round_trip_exactly(store: Arc<dyn Store>) {
    const CASE: &str = "ids_round_trip_exactly";
    let p = unique(CASE);
    let ids = [
        format!("{p}:chat:a/b/c"),
        format!("{p}:\"double\" 'single' back\\slash"),
        format!("{p}:ünï/日本/😀 space"),
        format!("{p}:percent%20and?query=1#hash&amp"),
    ];
    for id in &ids {
        let d = doc(id, json!({"id_echo": id}));
        let r = put(&store, CASE, d.clone()).await;
        assert_eq!(
            get(&store, CASE, id).await.as_ref(),
            Some(&d),
            "[{CASE}] {id}"
        );
        assert_eq!(
            as_of(&store, CASE, id, AsOf::TxId(r.tx_id)).await.as_ref(),
            Some(&d),
            "[{CASE}] as of {id}"
        );
        assert_eq!(
            store.history(id).await.expect("history").len(),
            1,
            "[{CASE}] {id}"
        );
    }
    let mut got = store.get_many(&ids).await.expect("get_many");
    got.sort_by(|x, y| x[ID_KEY].as_str().cmp(&y[ID_KEY].as_str()));
    let mut want: Vec<&str> = ids.iter().map(String::as_str).collect();
    want.sort_unstable();
    let got_ids: Vec<&str> = got.iter().map(|d| d[ID_KEY].as_str().unwrap()).collect();
    assert_eq!(got_ids, want, "[{CASE}] get_many by special ids");
}

/// `latest_tx_id` is at least every tx id this client has seen, and reading
/// as of it shows the latest writes.
pub async fn latest_tx_id_covers_submits(store: Arc<dyn Store>) {
    const CASE: &str = "latest_tx_id_covers_submits";
    let id = format!("{}:a", unique(CASE));
    let d = doc(&id, json!({"n": 1}));
    let r = put(&store, CASE, d.clone()).await;
    let latest = store
        .latest_tx_id()
        .await
        .expect("latest_tx_id")
        .unwrap_or_else(|| panic!("[{CASE}] a store with writes has a latest tx id"));
    assert!(
        latest >= r.tx_id,
        "[{CASE}] latest {latest} < own tx {}",
        r.tx_id
    );
    assert_eq!(
        as_of(&store, CASE, &id, AsOf::TxId(latest)).await,
        Some(d),
        "[{CASE}] as of latest"
    );
}

/// `submitted_tx_count` counts this client's submits, committed or not, and
/// reads don't count. Assumes no other task submits through this handle
/// during the case.
pub async fn submitted_tx_count_counts_submits(store: Arc<dyn Store>) {
    const CASE: &str = "submitted_tx_count_counts_submits";
    let id = format!("{}:a", unique(CASE));
    let before = store.submitted_tx_count();
    put(&store, CASE, doc(&id, json!({"n": 1}))).await;
    let aborted = submit(&store, CASE, vec![match_op(&id, None)]).await;
    assert!(!aborted.committed, "[{CASE}] guard fails");
    get(&store, CASE, &id).await;
    store.history(&id).await.expect("history");
    store.latest_tx_id().await.expect("latest_tx_id");
    assert_eq!(
        store.submitted_tx_count(),
        before + 2,
        "[{CASE}] two submits, reads not counted"
    );
}

/// Plain puts racing on one id from two tasks all commit, in some order, and
/// every version stays in history; the latest is the one with the highest
/// tx id.
pub async fn concurrent_submits_keep_every_version(store: Arc<dyn Store>) {
    const CASE: &str = "concurrent_submits_keep_every_version";
    const PER_TASK: usize = 5;
    let id = format!("{}:a", unique(CASE));
    let tasks: Vec<_> = ["left", "right"]
        .into_iter()
        .map(|task| {
            let store = store.clone();
            let id = id.clone();
            tokio::spawn(async move {
                let mut receipts = Vec::new();
                for n in 0..PER_TASK {
                    let d = doc(&id, json!({"task": task, "n": n}));
                    receipts.push((put(&store, CASE, d.clone()).await, d));
                }
                receipts
            })
        })
        .collect();
    let mut written = Vec::new();
    for t in tasks {
        written.extend(t.await.expect("task panicked"));
    }
    written.sort_by_key(|(r, _)| r.tx_id);
    let history = store.history(&id).await.expect("history");
    let got: Vec<(i64, Option<&Document>)> =
        history.iter().map(|v| (v.tx_id, v.doc.as_ref())).collect();
    let want: Vec<(i64, Option<&Document>)> =
        written.iter().map(|(r, d)| (r.tx_id, Some(d))).collect();
    assert_eq!(got, want, "[{CASE}] every version kept, in tx order");
    assert_eq!(
        get(&store, CASE, &id).await.as_ref(),
        written.last().map(|(_, d)| d),
        "[{CASE}] latest is the highest tx id"
    );
}

/// A put whose document has no string `"xt/id"` is refused with
/// `INVALID_ARGUMENT` and writes nothing.
pub async fn put_without_string_id_is_invalid_argument(store: Arc<dyn Store>) {
    const CASE: &str = "put_without_string_id_is_invalid_argument";
    let id = format!("{}:a", unique(CASE));
    let ok = doc(&id, json!({"n": 1}));
    let mut missing = ok.clone();
    missing.remove(ID_KEY);
    let mut numeric = ok.clone();
    numeric.insert(ID_KEY.to_owned(), json!(42));
    for bad in [missing, numeric] {
        let e = store
            .submit(vec![TxOp::Put(ok.clone()), TxOp::Put(bad.clone())])
            .await
            .expect_err("a document without a string id must be refused");
        assert_eq!(e.code(), "INVALID_ARGUMENT", "[{CASE}] {bad:?}: {e}");
    }
    assert_eq!(
        get(&store, CASE, &id).await,
        None,
        "[{CASE}] nothing written"
    );
}

/// `ids_of_type` lists exactly the ids whose latest version has that `type`,
/// sorted; an id whose type changed is listed under the new one only.
pub async fn ids_of_type_lists_by_latest_type(store: Arc<dyn Store>) {
    const CASE: &str = "ids_of_type_lists_by_latest_type";
    let p = unique(CASE);
    let (ty, other) = (format!("{p}:type"), format!("{p}:other"));
    let ids: Vec<String> = ["b", "a", "c"].iter().map(|k| format!("{p}:{k}")).collect();
    for id in &ids {
        put(&store, CASE, doc(id, json!({"type": ty}))).await;
    }
    put(&store, CASE, doc(&ids[2], json!({"type": other}))).await;
    put(
        &store,
        CASE,
        doc(&format!("{p}:d"), json!({"type": other, "n": 1})),
    )
    .await;
    let listed = store.ids_of_type(&ty).await.expect("ids_of_type");
    assert_eq!(
        listed,
        vec![ids[1].clone(), ids[0].clone()],
        "[{CASE}] sorted, latest type"
    );
    let listed = store.ids_of_type(&other).await.expect("ids_of_type");
    assert_eq!(
        listed,
        vec![ids[2].clone(), format!("{p}:d")],
        "[{CASE}] the changed id"
    );
    assert!(
        store
            .ids_of_type(&format!("{p}:none"))
            .await
            .expect("ids_of_type")
            .is_empty(),
        "[{CASE}] an unknown type lists nothing"
    );
}

/// `counts` sees every new object and every version (other writers may add
/// more meanwhile, so the growth is at least what this case wrote).
pub async fn counts_cover_every_version(store: Arc<dyn Store>) {
    const CASE: &str = "counts_cover_every_version";
    let p = unique(CASE);
    let before = store.counts().await.expect("counts");
    put(&store, CASE, doc(&format!("{p}:a"), json!({"n": 1}))).await;
    put(&store, CASE, doc(&format!("{p}:a"), json!({"n": 2}))).await;
    put(&store, CASE, doc(&format!("{p}:b"), json!({"n": 1}))).await;
    let after = store.counts().await.expect("counts");
    assert!(
        after.objects >= before.objects + 2,
        "[{CASE}] objects {before:?} -> {after:?}"
    );
    assert!(
        after.versions >= before.versions + 3,
        "[{CASE}] versions {before:?} -> {after:?}"
    );
    assert!(
        after.versions >= after.objects,
        "[{CASE}] a version per object at least: {after:?}"
    );
}
