//! Thin napi binding over `scm_core`: converts between JS and core types and
//! maps core errors to JS errors with a stable `code`. No decisions here.
//! Large JSON (documents, message arrays) crosses as JSON text: the facade in
//! `lib/` stringifies and parses it, which beats napi's value conversion.

#![deny(clippy::all)]

pub mod commits;
pub mod errors;
pub mod hashing;
pub mod indexer;
pub mod options;
pub mod resolver;
pub mod session;
pub mod store;
pub mod words;
// After `session`: napi-derive must see `JsSession` before this extra `impl` block.
pub mod memory;

use napi_derive::napi;

/// Version of the native addon (matches the npm package version).
#[napi]
pub fn native_version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}
