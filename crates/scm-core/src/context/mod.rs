//! Context: event ingest (cursor), chat object, assembly (spec and cache
//! layouts), aliases, epochs, folds, static references, and the words the
//! model reads per layout (`words`).
pub mod aliases;
pub mod assembly;
pub mod cache_layout;
pub mod chat;
pub mod epochs;
pub mod images;
pub mod ingest;
pub mod notices;
pub mod output;
pub mod static_refs;
pub mod tool_args;
pub mod words;
pub mod working;
