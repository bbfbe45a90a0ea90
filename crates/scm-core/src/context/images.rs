//! Image parts of tool results (pi's `read` of an image file, screenshots).
//!
//! A toolcall object's `content` is text: an image stands in it as a note
//! naming its type and size (covered by the content hash). The parts
//! themselves are kept in the object's descriptive `images` field — written
//! once with the object, like everything of a toolcall — so a layout can pass
//! them to the model: the cache layout shows them after the result's text
//! while the result is live. The spec layout's ACTIVE_CONTENT blocks are
//! text: there the model gets the note only.

use serde_json::Value;

use crate::store::Document;

/// Decoded size of base64 `data` (padding and whitespace ignored).
fn decoded_len(data: &str) -> usize {
    let n = data
        .bytes()
        .filter(|b| !b.is_ascii_whitespace() && *b != b'=')
        .count();
    n * 3 / 4
}

/// The text that stands for an image part in a toolcall's content.
pub fn note(part: &Value) -> String {
    let mime = part
        .get("mimeType")
        .and_then(Value::as_str)
        .unwrap_or("unknown type");
    let bytes = part
        .get("data")
        .and_then(Value::as_str)
        .map_or(0, decoded_len);
    format!("[image {mime}, {bytes} bytes]")
}

/// The image parts of a tool result's content, as sent.
pub fn parts(content: Option<&Value>) -> Vec<Value> {
    content
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|p| p.get("type").and_then(Value::as_str) == Some("image"))
        .cloned()
        .collect()
}

/// The image parts kept with a toolcall object.
pub fn of_doc(doc: Option<&Document>) -> &[Value] {
    doc.and_then(|d| d.get("images"))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn notes_name_type_and_decoded_size() {
        let p = json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"});
        assert_eq!(note(&p), "[image image/png, 8 bytes]");
        assert_eq!(
            note(&json!({"type": "image"})),
            "[image unknown type, 0 bytes]"
        );
        let content = json!([{"type": "text", "text": "x"}, p]);
        assert_eq!(parts(Some(&content)), vec![p]);
    }
}
