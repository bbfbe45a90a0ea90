//! Object types, the immutable envelope and document builders.
//!
//! Every document carries the envelope (`xt/id`, `type`, `source`,
//! `identity_hash`), the five hashes, and its type's metadata fields. Only the
//! fields in [`ObjectType::metadata_fields`] enter `metadata_hash`; documents
//! may carry further descriptive fields (a file's `state`, why its content was
//! omitted) that are not hashed.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::hashing;
use super::{Document, ID_KEY};

/// The five object types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObjectType {
    File,
    Toolcall,
    Chat,
    SystemPrompt,
    Session,
}

impl ObjectType {
    pub fn as_str(self) -> &'static str {
        match self {
            ObjectType::File => "file",
            ObjectType::Toolcall => "toolcall",
            ObjectType::Chat => "chat",
            ObjectType::SystemPrompt => "system_prompt",
            ObjectType::Session => "session",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "file" => ObjectType::File,
            "toolcall" => ObjectType::Toolcall,
            "chat" => ObjectType::Chat,
            "system_prompt" => ObjectType::SystemPrompt,
            "session" => ObjectType::Session,
            _ => return None,
        })
    }

    /// Content objects enter the session sets; the others are infrastructure.
    pub fn is_content(self) -> bool {
        matches!(self, ObjectType::File | ObjectType::Toolcall)
    }

    /// The explicit metadata field list per type (implementation-plan §2).
    pub fn metadata_fields(self) -> &'static [&'static str] {
        match self {
            ObjectType::File => &["file_type", "char_count"],
            ObjectType::Toolcall => &[
                "tool",
                "args",
                "args_display",
                "status",
                "chat_ref",
                "file_refs",
            ],
            ObjectType::Chat => &["turns", "session_ref", "turn_count", "toolcall_refs"],
            ObjectType::SystemPrompt => &[],
            ObjectType::Session => &[
                "session_id",
                "chat_ref",
                "system_prompt_ref",
                "session_index",
                "metadata_pool",
                "active_set",
                "pinned_set",
            ],
        }
    }
}

/// A filesystem source binding: `{type: "filesystem", filesystemId, path}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FilesystemSource {
    #[serde(rename = "filesystemId")]
    pub filesystem_id: String,
    /// Canonical absolute path within that filesystem.
    pub path: String,
}

impl FilesystemSource {
    pub fn to_json(&self) -> Value {
        json!({"type": "filesystem", "filesystemId": self.filesystem_id, "path": self.path})
    }

    /// The object id (= identity hash) of the file at this source.
    pub fn file_object_id(&self) -> String {
        hashing::identity_hash_sourced(ObjectType::File.as_str(), &self.to_json())
    }

    pub fn from_json(v: &Value) -> Option<Self> {
        if v.get("type")?.as_str()? != "filesystem" {
            return None;
        }
        Some(Self {
            filesystem_id: v.get("filesystemId")?.as_str()?.to_string(),
            path: v.get("path")?.as_str()?.to_string(),
        })
    }
}

/// Assigned ids of a session's infrastructure objects.
pub fn session_object_id(session_id: &str) -> String {
    format!("session:{session_id}")
}
pub fn chat_object_id(session_id: &str) -> String {
    format!("chat:{session_id}")
}
pub fn system_prompt_object_id(session_id: &str) -> String {
    format!("system_prompt:{session_id}")
}

/// File state: a descriptive (unhashed) field so a deleted file and an unread
/// stub, which both have null content and hashes, render differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileState {
    /// Content (or a reason it was omitted) was read from the source.
    Present,
    /// Discovered by ls/find/grep/bash; never read.
    Stub,
    /// The source was confirmed deleted.
    Deleted,
}

impl FileState {
    pub fn as_str(self) -> &'static str {
        match self {
            FileState::Present => "present",
            FileState::Stub => "stub",
            FileState::Deleted => "deleted",
        }
    }
}

/// Why a present file's content is null (descriptive, unhashed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContentOmitted {
    /// NUL bytes: not text.
    Binary,
    /// Not valid UTF-8.
    NonUtf8,
    /// Larger than the configured size limit (not read, not hashed).
    TooLarge,
    /// Matches the secret list (not read, not hashed; `withheld: "secret"`).
    Secret,
    /// Outside the workspace and the configured mounts (not read, not
    /// hashed; `withheld: "outside_workspace"`).
    OutsideWorkspace,
}

impl ContentOmitted {
    pub fn as_str(self) -> &'static str {
        match self {
            ContentOmitted::Binary => "binary",
            ContentOmitted::NonUtf8 => "non_utf8",
            ContentOmitted::TooLarge => "too_large",
            ContentOmitted::Secret => "secret",
            ContentOmitted::OutsideWorkspace => "outside_workspace",
        }
    }

    /// Withheld on purpose (the bytes are never read): the reasons that
    /// also set the document's `withheld` field.
    pub fn is_withheld(self) -> bool {
        matches!(
            self,
            ContentOmitted::Secret | ContentOmitted::OutsideWorkspace
        )
    }
}

/// `file_type`: the path's extension without the dot, as Node's
/// `path.extname(p).slice(1)` gives it (`""` for `Makefile` or `.bashrc`).
pub fn file_type_of(path: &str) -> String {
    // extname ignores trailing separators: extname("a.b/") === ".b".
    let trimmed = path.trim_end_matches('/');
    let base = trimmed.rsplit('/').next().unwrap_or(trimmed);
    match base.rfind('.') {
        Some(0) | None => String::new(),
        Some(i) => base[i + 1..].to_string(),
    }
}

/// `char_count`: UTF-16 code units (JavaScript `String.length`), 0 for null,
/// so a JS client derives the same `metadata_hash`.
pub fn char_count_of(content: Option<&str>) -> u64 {
    content.map_or(0, utf16_len)
}

/// UTF-16 length (JavaScript `String.length`), counted on the UTF-8 bytes:
/// one unit per character (every byte that is not a continuation byte) plus
/// one more for each 4-byte character (a surrogate pair). A plain byte count
/// the compiler vectorises, where decoding every char is ~10× slower on the
/// 100 KiB tool outputs it runs over.
pub fn utf16_len(s: &str) -> u64 {
    // Counted in u8 lanes over chunks of 127 bytes (at most 2 per byte, so a
    // chunk's count fits a u8): 16 or 32 bytes per vector operation, where
    // u64 lanes did 2 or 4 (the assembled context, ~0.5 MB, is counted on
    // calls that rewrite it).
    s.as_bytes()
        .chunks(127)
        .map(|c| {
            let n = c.iter().fold(0u8, |n, &b| {
                n + u8::from((b & 0xC0) != 0x80) + u8::from(b >= 0xF0)
            });
            u64::from(n)
        })
        .sum()
}

/// Fill in `identity_hash` (if absent), `content_hash`, `metadata_hash` and
/// `object_hash` from the document's own fields. `file_hash` must already be set
/// (null for unsourced objects, stubs and deletions).
pub fn seal(mut doc: Document, object_type: ObjectType) -> Document {
    if !doc.contains_key("identity_hash") {
        let identity = match doc.get("source") {
            Some(src) if !src.is_null() => {
                hashing::identity_hash_sourced(object_type.as_str(), src)
            }
            _ => hashing::identity_hash_assigned(
                object_type.as_str(),
                doc.get(ID_KEY).and_then(Value::as_str).unwrap_or_default(),
            ),
        };
        doc.insert("identity_hash".into(), Value::String(identity));
    }
    let content = doc
        .get("content")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let content_hash = hashing::content_hash(content.as_deref());
    let mut fields = Map::new();
    for f in object_type.metadata_fields() {
        // Absent optional fields are omitted, as JSON.stringify omits undefined.
        if let Some(v) = doc.get(*f) {
            fields.insert((*f).to_string(), v.clone());
        }
    }
    let metadata_hash = hashing::metadata_hash(&Value::Object(fields));
    let file_hash = doc
        .get("file_hash")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let object_hash = hashing::object_hash(
        file_hash.as_deref(),
        content_hash.as_deref(),
        &metadata_hash,
    );
    doc.entry("file_hash").or_insert(Value::Null);
    doc.insert(
        "content_hash".into(),
        content_hash.map_or(Value::Null, Value::String),
    );
    doc.insert("metadata_hash".into(), Value::String(metadata_hash));
    doc.insert("object_hash".into(), Value::String(object_hash));
    doc
}

fn envelope(id: &str, object_type: ObjectType, source: Value) -> Document {
    let mut doc = Map::new();
    doc.insert(ID_KEY.into(), Value::String(id.to_string()));
    doc.insert("type".into(), Value::String(object_type.as_str().into()));
    doc.insert("source".into(), source);
    doc
}

/// What a file's payload holds when building a version.
#[derive(Debug, Clone, PartialEq)]
pub enum FilePayload {
    /// Text content read from disk, with the hash of the raw bytes.
    Text {
        content: String,
        file_hash: String,
        size_bytes: u64,
    },
    /// Content withheld (binary, non-UTF-8: read; too large, secret,
    /// outside the workspace: never read, so no `file_hash`).
    Omitted {
        reason: ContentOmitted,
        file_hash: Option<String>,
        size_bytes: u64,
        /// Modification time (ns since the epoch) of a file that was not
        /// read: with the size, what tells its versions apart.
        mtime_ns: Option<i64>,
    },
    /// Discovery stub: never read.
    Stub,
    /// Confirmed deleted.
    Deleted,
}

/// Build a sealed file document for `source`.
pub fn file_document(source: &FilesystemSource, payload: FilePayload) -> Document {
    let id = source.file_object_id();
    let mut doc = envelope(&id, ObjectType::File, source.to_json());
    doc.insert("identity_hash".into(), Value::String(id));
    let mut mtime = None;
    let (content, file_hash, state, omitted, size): (
        Option<String>,
        Option<String>,
        FileState,
        Option<ContentOmitted>,
        Option<u64>,
    ) = match payload {
        FilePayload::Text {
            content,
            file_hash,
            size_bytes,
        } => (
            Some(content),
            Some(file_hash),
            FileState::Present,
            None,
            Some(size_bytes),
        ),
        FilePayload::Omitted {
            reason,
            file_hash,
            size_bytes,
            mtime_ns,
        } => {
            mtime = mtime_ns;
            (
                None,
                file_hash,
                FileState::Present,
                Some(reason),
                Some(size_bytes),
            )
        }
        FilePayload::Stub => (None, None, FileState::Stub, None, None),
        FilePayload::Deleted => (None, None, FileState::Deleted, None, None),
    };
    doc.insert(
        "file_type".into(),
        Value::String(file_type_of(&source.path)),
    );
    doc.insert(
        "char_count".into(),
        json!(char_count_of(content.as_deref())),
    );
    if let Some(text) = content.as_deref() {
        if super::note::is_note_type(&file_type_of(&source.path)) {
            super::note::parse(source, text).write_into(&mut doc);
        }
    }
    doc.insert("content".into(), content.map_or(Value::Null, Value::String));
    doc.insert(
        "file_hash".into(),
        file_hash.map_or(Value::Null, Value::String),
    );
    doc.insert("state".into(), Value::String(state.as_str().into()));
    doc.insert(
        "content_omitted".into(),
        omitted.map_or(Value::Null, |o| Value::String(o.as_str().into())),
    );
    if let Some(w) = omitted.filter(|o| o.is_withheld()) {
        doc.insert("withheld".into(), Value::String(w.as_str().into()));
    }
    doc.insert("size_bytes".into(), size.map_or(Value::Null, |s| json!(s)));
    if let Some(t) = mtime {
        doc.insert("mtime_ns".into(), json!(t));
    }
    seal(doc, ObjectType::File)
}

/// Fields of a toolcall object.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolcallFields {
    pub content: String,
    pub tool: String,
    pub args: Value,
    pub args_display: Option<String>,
    /// `ok` or `fail`.
    pub status: String,
    pub chat_ref: String,
    pub file_refs: Option<Vec<String>>,
}

/// Build a sealed toolcall document with an assigned id.
pub fn toolcall_document(id: &str, f: ToolcallFields) -> Document {
    let mut doc = envelope(id, ObjectType::Toolcall, Value::Null);
    doc.insert("content".into(), Value::String(f.content));
    doc.insert("tool".into(), Value::String(f.tool));
    doc.insert("args".into(), f.args);
    if let Some(d) = f.args_display {
        doc.insert("args_display".into(), Value::String(d));
    }
    doc.insert("status".into(), Value::String(f.status));
    doc.insert("chat_ref".into(), Value::String(f.chat_ref));
    if let Some(refs) = f.file_refs {
        doc.insert("file_refs".into(), json!(refs));
    }
    seal(doc, ObjectType::Toolcall)
}

/// Build a sealed document of an infrastructure type (chat, system_prompt,
/// session) from its assigned id, content and type-specific fields.
pub fn assigned_document(
    id: &str,
    object_type: ObjectType,
    content: Option<String>,
    fields: Map<String, Value>,
) -> Document {
    let mut doc = envelope(id, object_type, Value::Null);
    doc.insert("content".into(), content.map_or(Value::Null, Value::String));
    for (k, v) in fields {
        doc.insert(k, v);
    }
    seal(doc, object_type)
}

/// The `type` of a stored document.
pub fn type_of(doc: &Document) -> Option<ObjectType> {
    doc.get("type")
        .and_then(Value::as_str)
        .and_then(ObjectType::parse)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_len_counts_like_javascript() {
        for t in [
            "",
            "abc",
            "é",
            "€uro",
            "😀",
            "a😀b\u{10FFFF}ĳ\n",
            "\u{7f}\u{80}\u{7ff}\u{800}\u{ffff}\u{10000}",
        ] {
            assert_eq!(utf16_len(t), t.encode_utf16().count() as u64, "{t:?}");
        }
        // Longer than the counting chunks, with characters across their edges.
        for t in [
            "a".repeat(1000),
            "😀".repeat(300),
            "ab€😀\n".repeat(211),
            format!("{}😀", "x".repeat(126)),
        ] {
            assert_eq!(utf16_len(&t), t.encode_utf16().count() as u64);
        }
    }

    fn src(path: &str) -> FilesystemSource {
        FilesystemSource {
            filesystem_id: "fs1".into(),
            path: path.into(),
        }
    }

    #[test]
    fn same_source_same_identity_different_fs_different_identity() {
        let a = src("/w/a.ts").file_object_id();
        assert_eq!(a, src("/w/a.ts").file_object_id());
        let other = FilesystemSource {
            filesystem_id: "fs2".into(),
            path: "/w/a.ts".into(),
        };
        assert_ne!(a, other.file_object_id());
    }

    #[test]
    fn file_document_has_five_hashes() {
        let doc = file_document(
            &src("/w/a.ts"),
            FilePayload::Text {
                content: "hi".into(),
                file_hash: hashing::file_hash(b"hi"),
                size_bytes: 2,
            },
        );
        for k in [
            "identity_hash",
            "file_hash",
            "content_hash",
            "metadata_hash",
            "object_hash",
        ] {
            assert!(doc[k].is_string(), "{k}");
        }
        assert_eq!(doc["file_type"], "ts");
        assert_eq!(doc["char_count"], 2);
        assert_eq!(doc["xt/id"], doc["identity_hash"]);
    }

    #[test]
    fn stub_has_null_content_and_hashes() {
        let doc = file_document(&src("/w/a.ts"), FilePayload::Stub);
        assert!(
            doc["content"].is_null() && doc["file_hash"].is_null() && doc["content_hash"].is_null()
        );
        assert_eq!(doc["state"], "stub");
        assert_eq!(doc["char_count"], 0);
    }

    #[test]
    fn file_type_follows_node_extname() {
        assert_eq!(file_type_of("/a/b.test.ts"), "ts");
        assert_eq!(file_type_of("/a/Makefile"), "");
        assert_eq!(file_type_of("/a/.bashrc"), "");
        assert_eq!(file_type_of("/a/x."), "");
        assert_eq!(file_type_of("a.b/"), "b");
        assert_eq!(file_type_of("/"), "");
    }
}
