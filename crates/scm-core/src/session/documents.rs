//! The chat and session documents, typed: one parse each for every reader
//! (resume, fork, rewind, checkpoint, inspect, reconstruction, commits,
//! memory) instead of `doc.get("turns")` in each. They read a document as
//! stored (materialised from its pages, [`super::paged`]); the writer pages
//! them ([`super::persist`]) with the same field names.
//!
//! Rules, as the readers had them: `turns` must parse (a chat without them
//! has none); any other field that is missing or malformed reads as its
//! default (`None` for the optional ones), and id lists keep their strings.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::policy::UseWindow;
use crate::context::aliases::Aliases;
use crate::context::cache_layout::CacheState;
use crate::context::chat::Turn;
use crate::context::static_refs::ModelCallRecord;
use crate::error::{Error, Result};
use crate::store::Document;

/// A chat document's `cursor`: how much of the host's message list the
/// chat consumed (descriptive, unhashed).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ChatCursor {
    pub consumed: usize,
    pub last_fp: Option<String>,
    /// The first consumed message's head (`context::ingest::head`); absent
    /// in chats stored before it was kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_head: Option<String>,
}

/// `chat:<session>`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatDoc {
    #[serde(default)]
    pub turns: Vec<Turn>,
    #[serde(default, deserialize_with = "ids")]
    pub toolcall_refs: Vec<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub cursor: Option<ChatCursor>,
    #[serde(default, deserialize_with = "lenient")]
    pub model_calls: Option<Vec<ModelCallRecord>>,
    /// Cache layout: the aliases (`t`, `f`).
    #[serde(default, deserialize_with = "lenient")]
    pub aliases: Option<Aliases>,
    /// Cache layout: its persisted state.
    #[serde(default, deserialize_with = "lenient")]
    pub layout: Option<CacheState>,
}

/// `session:<session>`: the sets and the collapse window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionDoc {
    #[serde(default, deserialize_with = "ids")]
    pub session_index: Vec<String>,
    #[serde(default, deserialize_with = "ids")]
    pub metadata_pool: Vec<String>,
    #[serde(default, deserialize_with = "ids")]
    pub active_set: Vec<String>,
    #[serde(default, deserialize_with = "ids")]
    pub pinned_set: Vec<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub recent_use: Option<UseWindow>,
}

impl ChatDoc {
    /// Parses a stored chat document.
    pub fn parse(doc: &Document) -> Result<ChatDoc> {
        deserialize(doc).map_err(|e| Error::StoreProtocol(format!("chat document: {e}")))
    }

    /// The cursor (zero when absent).
    pub fn cursor(&self) -> ChatCursor {
        self.cursor.clone().unwrap_or_default()
    }

    /// The model call records (none when absent).
    pub fn model_calls(&self) -> &[ModelCallRecord] {
        self.model_calls.as_deref().unwrap_or_default()
    }
}

impl SessionDoc {
    /// Parses a stored session document.
    pub fn parse(doc: &Document) -> Result<SessionDoc> {
        deserialize(doc).map_err(|e| Error::StoreProtocol(format!("session document: {e}")))
    }
}

fn deserialize<T: serde::de::DeserializeOwned>(doc: &Document) -> serde_json::Result<T> {
    use serde::de::value::MapDeserializer;
    T::deserialize(MapDeserializer::new(
        doc.iter().map(|(k, v)| (k.as_str(), v)),
    ))
}

/// A field that reads as None when malformed.
fn lenient<'de, D: Deserializer<'de>, T: serde::de::DeserializeOwned>(
    d: D,
) -> std::result::Result<Option<T>, D::Error> {
    let v = Value::deserialize(d)?;
    Ok(T::deserialize(&v).ok())
}

/// An id list: its strings (anything else reads as none).
fn ids<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Vec<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Array(a) => a
            .into_iter()
            .filter_map(|v| match v {
                Value::String(s) => Some(s),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn malformed_fields_read_as_their_defaults_but_turns_must_parse() {
        let doc = json!({"toolcall_refs": ["a", 1, "b"], "cursor": 3, "model_calls": {},
            "aliases": "x", "layout": 7, "metadata_pool": "p"});
        let Value::Object(doc) = doc else {
            unreachable!()
        };
        let c = ChatDoc::parse(&doc).unwrap();
        assert_eq!(c.toolcall_refs, ["a", "b"]);
        assert_eq!(c.cursor(), ChatCursor::default());
        assert!(c.model_calls.is_none() && c.aliases.is_none() && c.layout.is_none());
        assert!(SessionDoc::parse(&doc).unwrap().metadata_pool.is_empty());
        let Value::Object(bad) = json!({"turns": 7}) else {
            unreachable!()
        };
        assert_eq!(ChatDoc::parse(&bad).unwrap_err().code(), "STORE_PROTOCOL");
    }
}
