//! Cross-language vectors: the Rust stable serialisation, five hashes and
//! document builders must agree byte for byte with the independent JavaScript
//! implementation in `scripts/gen-hash-vectors.mjs`, which wrote
//! `tests/fixtures/hash-vectors.json` (regenerate with
//! `node scripts/gen-hash-vectors.mjs`).

use scm_core::model::hashing::{self, sha256_hex};
use scm_core::model::stable_json::stable_stringify;
use scm_core::model::{
    assigned_document, char_count_of, file_document, file_type_of, toolcall_document,
    ContentOmitted, FilePayload, FilesystemSource, ObjectType, ToolcallFields,
};
use serde_json::{Map, Value};

fn vectors() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/hash-vectors.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("fixture json")
}

fn s(v: &Value) -> &str {
    v.as_str()
        .unwrap_or_else(|| panic!("expected a string, got {v}"))
}

fn opt_s(v: &Value) -> Option<&str> {
    v.as_str()
}

#[test]
fn stable_serialisation_is_byte_identical_to_javascript() {
    let v = vectors();
    let cases = v["stable"].as_array().unwrap();
    assert!(cases.len() >= 1000, "only {} stable vectors", cases.len());
    let mut failures = Vec::new();
    for case in cases {
        let input = s(&case["input"]);
        let parsed: Value = match serde_json::from_str(input) {
            Ok(p) => p,
            Err(e) => {
                failures.push(format!("parse {input:?}: {e}"));
                continue;
            }
        };
        let out = stable_stringify(&parsed);
        if out != s(&case["stable"]) {
            failures.push(format!(
                "input {input:?}\n  rust {out:?}\n  js   {:?}",
                s(&case["stable"])
            ));
        } else if sha256_hex(out.as_bytes()) != s(&case["sha256"]) {
            failures.push(format!("sha256 of {out:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} mismatches:\n{}",
        failures.len(),
        cases.len(),
        failures[..failures.len().min(20)].join("\n")
    );
}

#[test]
fn file_type_matches_node_extname_and_char_count_matches_js_length() {
    let v = vectors();
    for case in v["file_type"].as_array().unwrap() {
        assert_eq!(
            file_type_of(s(&case["path"])),
            s(&case["file_type"]),
            "path {:?}",
            case["path"]
        );
    }
    for case in v["char_count"].as_array().unwrap() {
        assert_eq!(
            char_count_of(Some(s(&case["content"]))),
            case["char_count"].as_u64().unwrap(),
            "content {:?}",
            case["content"]
        );
    }
}

/// The five hashes (and `xt/id`) of a built document against the JS ones.
fn assert_hashes(doc: &Map<String, Value>, expected: &Value, what: &str) {
    for k in [
        "xt/id",
        "identity_hash",
        "file_hash",
        "content_hash",
        "metadata_hash",
        "object_hash",
    ] {
        assert_eq!(
            doc.get(k).unwrap_or(&Value::Null),
            &expected[k],
            "{what}: {k}"
        );
    }
    // Sourced objects are addressed by their identity hash.
    if !doc["source"].is_null() {
        assert_eq!(doc["xt/id"], doc["identity_hash"], "{what}");
    }
}

fn metadata_stable(doc: &Map<String, Value>, t: ObjectType) -> String {
    let mut m = Map::new();
    for f in t.metadata_fields() {
        if let Some(v) = doc.get(*f) {
            m.insert((*f).to_string(), v.clone());
        }
    }
    stable_stringify(&Value::Object(m))
}

fn hex_bytes(h: &str) -> Vec<u8> {
    (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn document_builders_yield_the_javascript_hashes() {
    let v = vectors();
    let docs = v["documents"].as_array().unwrap();
    let mut seen = std::collections::HashMap::<&str, usize>::new();
    for (i, case) in docs.iter().enumerate() {
        let kind = s(&case["kind"]);
        *seen.entry(kind).or_default() += 1;
        let expected = &case["expected"];
        let what = format!("document #{i} ({kind})");
        let (doc, t) = match kind {
            "file" => {
                let source = FilesystemSource::from_json(&case["source"]).expect("source");
                let p = &case["payload"];
                let payload = match s(&p["kind"]) {
                    "text" => {
                        let content = s(&p["content"]).to_string();
                        FilePayload::Text {
                            file_hash: hashing::file_hash(content.as_bytes()),
                            size_bytes: content.len() as u64,
                            content,
                        }
                    }
                    "omitted" => {
                        let bytes = hex_bytes(s(&p["bytes_hex"]));
                        FilePayload::Omitted {
                            reason: match s(&p["reason"]) {
                                "binary" => ContentOmitted::Binary,
                                "non_utf8" => ContentOmitted::NonUtf8,
                                "too_large" => ContentOmitted::TooLarge,
                                r => panic!("reason {r}"),
                            },
                            file_hash: p["hashed"]
                                .as_bool()
                                .unwrap()
                                .then(|| hashing::file_hash(&bytes)),
                            size_bytes: bytes.len() as u64,
                            mtime_ns: None,
                        }
                    }
                    "stub" => FilePayload::Stub,
                    "deleted" => FilePayload::Deleted,
                    k => panic!("payload kind {k}"),
                };
                let doc = file_document(&source, payload);
                assert_eq!(doc["file_type"], expected["file_type"], "{what}");
                assert_eq!(doc["char_count"], expected["char_count"], "{what}");
                (doc, ObjectType::File)
            }
            "toolcall" => {
                let f = &case["fields"];
                let fields = ToolcallFields {
                    content: s(&f["content"]).into(),
                    tool: s(&f["tool"]).into(),
                    args: f["args"].clone(),
                    args_display: opt_s(&f["args_display"]).map(String::from),
                    status: s(&f["status"]).into(),
                    chat_ref: s(&f["chat_ref"]).into(),
                    file_refs: f.get("file_refs").map(|r| {
                        r.as_array()
                            .unwrap()
                            .iter()
                            .map(|x| s(x).to_string())
                            .collect()
                    }),
                };
                (
                    toolcall_document(s(&case["id"]), fields),
                    ObjectType::Toolcall,
                )
            }
            "chat" | "system_prompt" | "session" => {
                let t = ObjectType::parse(kind).unwrap();
                let doc = assigned_document(
                    s(&case["id"]),
                    t,
                    opt_s(&case["content"]).map(String::from),
                    case["fields"].as_object().unwrap().clone(),
                );
                (doc, t)
            }
            k => panic!("kind {k}"),
        };
        assert_eq!(
            metadata_stable(&doc, t),
            s(&expected["metadata_stable"]),
            "{what}"
        );
        assert_hashes(&doc, expected, &what);
    }
    for kind in ["file", "toolcall", "chat", "system_prompt", "session"] {
        assert!(
            seen.get(kind).copied().unwrap_or(0) >= 10,
            "few {kind} vectors"
        );
    }
}
