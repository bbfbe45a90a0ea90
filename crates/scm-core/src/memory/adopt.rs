//! Activating any object of the store (issue 12): a hit of another session
//! can be activated by id. The session's own resolution runs first; when it
//! does not know the id, the store is asked and the object joins the
//! session (`Session::adopt`) before the operation is retried.

use crate::error::Result;
use crate::model::type_of;
use crate::session::{paged, OpResult};
use crate::store::{Document, Store};

/// The id to look up in the store after a set operation on `target`
/// failed: only an `UNKNOWN_OBJECT` that named no object (not a path of a
/// file never read, not an ambiguous prefix).
pub fn store_candidate(target: &str, failed: &OpResult) -> Option<String> {
    if failed.ok || failed.code.as_deref() != Some("UNKNOWN_OBJECT") || failed.id.is_some() {
        return None;
    }
    let t = crate::session::agent_target(target);
    (!t.is_empty()).then(|| t.into_owned())
}

/// The latest version of `id` if it is a content object of the store.
pub async fn fetch(store: &dyn Store, id: &str) -> Result<Option<Document>> {
    Ok(paged::get(store, id)
        .await?
        .filter(|d| type_of(d).is_some_and(|t| t.is_content())))
}
