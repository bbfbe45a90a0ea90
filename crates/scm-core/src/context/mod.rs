//! Context: event ingest (cursor), chat object, the two layouts (`spec_layout`,
//! `cache_layout`; [`Layout`] names them), aliases, epochs, folds, static references, and the words the
//! model reads per layout (`words`).
pub mod aliases;
pub mod cache_layout;
pub mod chat;
pub mod epochs;
pub mod images;
pub mod ingest;
pub mod notices;
pub mod output;
pub mod refs_as_text;
pub mod scale;
pub mod shell_read;
pub mod spec_layout;
pub mod static_refs;
pub mod tool_args;
pub mod words;
pub mod working;

use serde::{Deserialize, Serialize};

/// Which arrangement of the four parts to produce.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    /// System, pool, chat, active content (the spec's order). The drop-in
    /// contract (METADATA_POOL, toolcall_ref, ACTIVE_CONTENT).
    #[default]
    Spec,
    /// Content inline where it happened, collapsed in batched epochs, folds
    /// owned by the engine: see [`crate::context::cache_layout`]. The
    /// session assembles it; [`spec_layout::assemble_json`](crate::context::spec_layout::assemble_json) renders the spec layout only.
    Cache,
}

impl Layout {
    /// `"spec"` or `"cache"`, as hosts name it.
    pub fn parse(name: &str) -> crate::error::Result<Layout> {
        match name {
            "spec" => Ok(Layout::Spec),
            "cache" => Ok(Layout::Cache),
            other => Err(crate::error::Error::InvalidArgument(format!(
                "layout must be \"spec\" or \"cache\", got {other:?}"
            ))),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Layout::Spec => "spec",
            Layout::Cache => "cache",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RenderOptions {
    /// Put the system prompt in the output as a `system` message. pi 1.x's
    /// `context` hook prepends its own system prompt: turn this off there.
    pub emit_system_message: bool,
}

impl Default for RenderOptions {
    fn default() -> Self {
        Self {
            emit_system_message: true,
        }
    }
}
