//! The words a host tells the model about context management, per layout
//! (the core's `context/words.rs`), as JSON for the pi package.

use napi_derive::napi;
use scm_core::session::Layout;

use crate::errors::{invalid_arg, IntoJsResult};

/// `layoutWords("cache" | "spec")`: `{ layout, systemSection, idDescription,
/// tools: [{ name, label, description, snippet }], read: { descriptionSuffix,
/// snippet?, guidelines } }` as JSON.
#[napi]
pub fn layout_words(layout: String) -> napi::Result<String> {
    let layout = Layout::parse(&layout).js()?;
    serde_json::to_string(&scm_core::context::words::prompts(layout))
        .map_err(|e| invalid_arg(e.to_string()))
}
