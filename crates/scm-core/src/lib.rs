//! Pure Rust core of self-context-manager. No Node types live here; the
//! napi binding (repository root) only converts between JS and these types.
//!
//! Layers, bottom up: [`model`] (objects, hashes) → [`store`] (trait, embedded,
//! XTDB) → [`fs`] (resolver, indexer, watcher) → [`session`] (sets, policy,
//! persistence) and [`context`] (ingest, chat, assembly).

pub mod commits;
pub mod context;
pub mod error;
pub mod fs;
pub mod memory;
pub mod model;
pub mod session;
pub mod store;

pub use error::{Error, Result};
