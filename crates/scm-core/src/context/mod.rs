//! Context: event ingest (cursor), chat object, assembly.
