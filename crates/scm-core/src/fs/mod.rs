//! Filesystem: resolver (agent path → source), indexer, watcher.
pub mod indexer;
pub mod note_walk;
mod poller;
pub mod resolver;
pub mod secrets;
mod settle;
pub mod watch_backend;
pub mod watcher;
