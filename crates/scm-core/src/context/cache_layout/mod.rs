//! [`Layout::Cache`](super::Layout::Cache): the prompt-cache
//! friendly layout measured in docs/notes/layout-experiments.md (§6, "REC").
//!
//! Rendered, in order: the system prompt (optional), a constant header,
//! the fold (summary, the current turn's prompt if the cut fell inside it,
//! pinned content whose place was folded), then the chat from the fold
//! point. Tool output stays **inline where it happened**; collapsed it is a
//! ref `[t12 · 340 lines]` (edit/write bodies and long bash commands
//! likewise). Collapsing, thinking removal and `FILES +k` lists happen only
//! at **epochs** ([`super::epochs`]); between epochs call n+1's context is
//! call n's plus the new messages, byte for byte.
//!
//! Every rendering decision is stamped with the epoch that made it, so any
//! past call renders again exactly from the persisted state plus its
//! epoch count (static references, reconstruction).

mod copies;
mod dedupe;
mod epoch;
mod fold;
mod items;
mod records;
mod render;
mod state;

pub use items::{Item, ItemKind, Items, PASSTHROUGH_ROLES};
pub use records::{CacheState, EpochRecord, FileEntry, FoldRecord, WorkingCopy};
pub use render::{
    activation_text, arg_chars, collapse_args, line_count, ref_text, rendered_chars, shown_body,
    text_message, DocLookup, Env, Frozen, TextJson, HEADER,
};
pub use state::{shows_files, CacheLayout, CacheStats, Changed, FoldPlan, HostFold};
