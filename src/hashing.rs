//! Stable serialisation and the five hashes. JSON values cross as JSON text
//! (the facade `JSON.stringify`s them), so JavaScript's own rules decide what
//! `undefined`, `NaN` or `toJSON` become before Rust sees the value.

use napi::bindgen_prelude::{Buffer, Either};
use napi_derive::napi;
use scm_core::model::{hashing, stable_json};
use serde_json::Value;

use crate::errors::{invalid_arg, parse_json};

/// Stable serialisation (sorted keys, no whitespace) of a JSON text.
#[napi(catch_unwind)]
pub fn stable_stringify_json(json: String) -> napi::Result<String> {
    let value: Value = parse_json(&json, "stableStringify")?;
    Ok(stable_json::stable_stringify(&value))
}

/// `identity_hash`: SHA-256(stable({type, source})) for sourced objects, else
/// SHA-256(stable({type, "xt/id": assignedId})).
#[napi(catch_unwind)]
pub fn identity_hash(
    object_type: String,
    source_json: Option<String>,
    assigned_id: Option<String>,
) -> napi::Result<String> {
    let source: Value = match source_json.as_deref() {
        Some(json) => parse_json(json, "identityHash source")?,
        None => Value::Null,
    };
    if !source.is_null() {
        return Ok(hashing::identity_hash_sourced(&object_type, &source));
    }
    let id = assigned_id
        .ok_or_else(|| invalid_arg("identityHash: an unsourced object needs an assigned id"))?;
    Ok(hashing::identity_hash_assigned(&object_type, &id))
}

/// `file_hash`: SHA-256 of the raw bytes (a string hashes as UTF-8).
#[napi(catch_unwind)]
pub fn file_hash(bytes: Either<String, Buffer>) -> String {
    match bytes {
        Either::A(s) => hashing::file_hash(s.as_bytes()),
        Either::B(b) => hashing::file_hash(&b),
    }
}

/// `content_hash`: SHA-256 of the content string, null for null content.
#[napi(catch_unwind)]
pub fn content_hash(content: Option<String>) -> Option<String> {
    hashing::content_hash(content.as_deref())
}

/// `metadata_hash`: SHA-256 of the stable serialisation of the metadata fields.
#[napi(catch_unwind)]
pub fn metadata_hash_json(fields_json: String) -> napi::Result<String> {
    let fields: Value = parse_json(&fields_json, "metadataHash")?;
    Ok(hashing::metadata_hash(&fields))
}

/// `object_hash`: SHA-256(stable({file_hash, content_hash, metadata_hash})).
#[napi(catch_unwind)]
pub fn object_hash(
    file_hash: Option<String>,
    content_hash: Option<String>,
    metadata_hash: String,
) -> String {
    hashing::object_hash(
        file_hash.as_deref(),
        content_hash.as_deref(),
        &metadata_hash,
    )
}

/// Id of this machine's filesystem: SHA-256 of `/etc/machine-id` (hostname as fallback).
#[napi(catch_unwind)]
pub fn default_filesystem_id() -> String {
    scm_core::fs::resolver::default_filesystem_id()
}
