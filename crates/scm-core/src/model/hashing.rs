//! The five hashes (implementation-plan §2). All are lowercase hex SHA-256.
//!
//! | hash            | input                                                      |
//! |-----------------|------------------------------------------------------------|
//! | `identity_hash` | stable({type, source}) or stable({type, "xt/id"})         |
//! | `file_hash`     | raw file bytes (sourced objects only)                      |
//! | `content_hash`  | the `content` string's UTF-8 bytes; null when content null |
//! | `metadata_hash` | stable(per-type metadata fields)                           |
//! | `object_hash`   | stable({file_hash, content_hash, metadata_hash})           |

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::stable_json::stable_stringify;

/// SHA-256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Identity of a sourced object: SHA-256(stable({type, source})).
pub fn identity_hash_sourced(object_type: &str, source: &Value) -> String {
    sha256_hex(stable_stringify(&json!({"type": object_type, "source": source})).as_bytes())
}

/// Identity of an unsourced object with an assigned id: SHA-256(stable({type, "xt/id"})).
pub fn identity_hash_assigned(object_type: &str, assigned_id: &str) -> String {
    sha256_hex(stable_stringify(&json!({"type": object_type, "xt/id": assigned_id})).as_bytes())
}

/// SHA-256 of the raw source bytes.
pub fn file_hash(bytes: &[u8]) -> String {
    sha256_hex(bytes)
}

/// SHA-256 of the `content` field, or `None` when content is null.
pub fn content_hash(content: Option<&str>) -> Option<String> {
    content.map(|c| sha256_hex(c.as_bytes()))
}

/// SHA-256 of the stable serialisation of the type's metadata fields.
pub fn metadata_hash(fields: &Value) -> String {
    sha256_hex(stable_stringify(fields).as_bytes())
}

/// Composite: SHA-256(stable({file_hash, content_hash, metadata_hash})).
pub fn object_hash(
    file_hash: Option<&str>,
    content_hash: Option<&str>,
    metadata_hash: &str,
) -> String {
    sha256_hex(
        stable_stringify(&json!({
            "file_hash": file_hash,
            "content_hash": content_hash,
            "metadata_hash": metadata_hash,
        }))
        .as_bytes(),
    )
}
