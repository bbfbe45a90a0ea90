//! One error enum for the whole core. Every variant has a stable `code()`
//! that reaches JavaScript as `err.code`; messages are for humans.

use std::path::PathBuf;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    // ---- store ----
    /// The store cannot be reached (connection refused, DNS, file cannot be opened).
    #[error("store unavailable: {0}")]
    StoreUnavailable(String),
    /// A store call did not finish within its configured timeout.
    #[error("store timed out after {timeout_ms} ms: {what}")]
    StoreTimeout { what: String, timeout_ms: u64 },
    /// The store answered something we cannot understand (bad JSON, unexpected status).
    #[error("store protocol error: {0}")]
    StoreProtocol(String),
    /// A compare-and-set (XTDB `match`) found a different document: nothing was written.
    #[error("compare-and-set conflict on {id}")]
    CasConflict { id: String },

    // ---- filesystem ----
    #[error("file not found: {}", path.display())]
    FileNotFound { path: PathBuf },
    #[error("file unreadable: {}: {reason}", path.display())]
    FileUnreadable { path: PathBuf, reason: String },
    /// Directories, FIFOs, sockets, devices: never read, never indexed.
    #[error("not a regular file ({kind}): {}", path.display())]
    NotAFile { path: PathBuf, kind: String },
    #[error("watcher error: {0}")]
    Watcher(String),

    // ---- session / context ----
    #[error("unknown object: {0}")]
    UnknownObject(String),
    /// chat / system_prompt / session objects never enter the session sets.
    #[error("{id} is a {object_type} object; only file and toolcall objects can be activated, deactivated, pinned or unpinned")]
    NotContentObject { id: String, object_type: String },
    /// A harness message that cannot be ingested (missing role, wrong field types …).
    #[error("invalid harness message at index {index}: {reason}")]
    InvalidMessage { index: usize, reason: String },
    #[error("session closed")]
    SessionClosed,
    /// Another instance wrote this session (a second process on the same
    /// session id): this one stopped writing and managing it, so the two
    /// never interleave in the store.
    #[error("session {0} was written by another instance since this one read it; this instance stopped (open it again to continue from what is stored)")]
    SessionSuperseded(String),

    // ---- generic ----
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    #[error("i/o error: {0}")]
    Io(String),
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    /// Stable machine-readable code. Never rename a code: users match on them.
    pub fn code(&self) -> &'static str {
        match self {
            Error::StoreUnavailable(_) => "STORE_UNAVAILABLE",
            Error::StoreTimeout { .. } => "STORE_TIMEOUT",
            Error::StoreProtocol(_) => "STORE_PROTOCOL",
            Error::CasConflict { .. } => "CAS_CONFLICT",
            Error::FileNotFound { .. } => "FILE_NOT_FOUND",
            Error::FileUnreadable { .. } => "FILE_UNREADABLE",
            Error::NotAFile { .. } => "NOT_A_FILE",
            Error::Watcher(_) => "WATCHER_ERROR",
            Error::UnknownObject(_) => "UNKNOWN_OBJECT",
            Error::NotContentObject { .. } => "NOT_CONTENT_OBJECT",
            Error::InvalidMessage { .. } => "INVALID_MESSAGE",
            Error::SessionClosed => "SESSION_CLOSED",
            Error::SessionSuperseded(_) => "SESSION_SUPERSEDED",
            Error::InvalidArgument(_) => "INVALID_ARGUMENT",
            Error::Io(_) => "IO_ERROR",
            Error::Internal(_) => "INTERNAL",
        }
    }

    /// Whether retrying the same call may succeed (used by the XTDB client's bounded retry).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Error::StoreUnavailable(_) | Error::StoreTimeout { .. }
        )
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::Internal(format!("json: {e}"))
    }
}
