//! Object model: types, envelope, the five hashes, stable serialisation.
pub mod hashing;
pub mod note;
pub mod object;
pub mod redact;
pub mod stable_json;
pub mod time;
pub mod version_ref;

pub use object::*;

/// A document as stored: a JSON object with an `"xt/id"` string key.
pub type Document = serde_json::Map<String, serde_json::Value>;

/// The id key inside every document.
pub const ID_KEY: &str = "xt/id";
