//! Context: event ingest (cursor), chat object, assembly, static references.
pub mod assembly;
pub mod chat;
pub mod ingest;
pub mod static_refs;
