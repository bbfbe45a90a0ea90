//! Memory across sessions (memory-system-v0 §7.3, §8–§14): everything that
//! reads the whole store rather than one session's sets.
//!
//! - [`versions`]: older versions on request (list, show, diff).
//! - [`diff`]: the line diff those use.
//! - [`adopt`]: activating an object of another session by id.
//! - [`notes`]: a Markdown file's frontmatter, tags and links.
//! - [`folders`]: note folders, indexed at session start and watched.
//! - [`links`]: the references in a document: link lines, pins, backlinks.
//! - [`expand`]: loading (or listing) what an object references.
//! - [`portable`]: export/import as JSON Lines.
//! - [`search`]: full-text search over every session's objects.

pub mod adopt;
pub mod diff;
pub mod expand;
pub mod folders;
pub mod links;
/// The note format is part of the object model (a note is a file); named
/// here too, where memory's readers look for it.
pub use crate::model::note as notes;
pub mod portable;
pub mod search;
pub mod versions;

pub use search::{search, SearchHit, SearchOptions};
pub use versions::{diff as diff_versions, show_version, versions, VersionRef};
