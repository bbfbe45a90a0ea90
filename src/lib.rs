//! Thin napi binding over `scm_core`: converts between JS and core types and
//! maps core errors to JS errors with a stable `code`. No decisions here.

#![deny(clippy::all)]

mod errors;

use napi_derive::napi;

/// Version of the native addon (matches the npm package version).
#[napi]
pub fn native_version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}
