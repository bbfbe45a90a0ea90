//! `expand` (memory-system-v0 §9; issue 12 item 2, session 29): activates
//! what an object references — a note's links, a chat's tool calls, a tool
//! call's files — all of it or a selection ([`Select`]), or lists it
//! (metadata only). [`plan_expand`] reads the store and says what to do per
//! target ([`ExpandStep`]); the session runs the steps (adopt a stored
//! object, read a file), because reading a file goes through the indexer.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::links::{file_state_suffix, link_refs, pinned_version, s, source_path, LinkRef};
use crate::error::{Error, Result};
use crate::model::char_count_of;
use crate::session::paged;
use crate::store::{Document, Store, ID_KEY};

/// The references `expand` follows in `doc` (§9), in document order: a
/// note's links ([`link_refs`]); a chat's tool calls (`toolcall_refs`, "expand
/// all toolcall references inside this chat document"); the files a tool call
/// read, wrote or found (`file_refs`: a `grep`'s hits, a `read`'s file).
/// Only notes show link lines: the others' references are structure the
/// layouts already render (the chat itself, a tool call's output).
pub fn expand_refs(doc: &Document) -> Vec<LinkRef> {
    let field = match s(doc, "type") {
        Some("chat") => "toolcall_refs",
        Some("toolcall") => "file_refs",
        _ => return link_refs(doc),
    };
    let mut out: Vec<LinkRef> = Vec::new();
    for id in doc
        .get(field)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !out.iter().any(|r| r.id == id) {
            out.push(LinkRef {
                id: id.to_owned(),
                path: None,
                pin: None,
            });
        }
    }
    out
}

/// Which of an object's links `expand` follows; all of them when empty.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Select {
    /// Target types (`file`, `toolcall`; `note` = a Markdown file).
    pub types: Option<Vec<String>>,
    /// A path pattern: `*` any run of characters, `?` one; matched against
    /// the end of the target's path (`*.md`, `notes/*`).
    pub path: Option<String>,
    /// 1-based positions in the object's link list (its link lines' order;
    /// a chat's tool calls in chat order).
    pub positions: Option<Vec<usize>>,
    /// Only metadata (§9 "expand only metadata for these refs"): list what
    /// is selected, one line each, and activate nothing.
    pub metadata: bool,
}

/// Glob match with `*` and `?` (no classes), anchored at both ends.
pub fn glob_match(pat: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pat.chars().collect(), text.chars().collect());
    let (mut pi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(st) = star {
            pi = st + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// What `expand` does for one selected target.
#[derive(Debug, Clone, PartialEq)]
pub enum ExpandStep {
    /// The target is stored: adopt it into the session (if new) and activate.
    Activate { id: String, doc: Document },
    /// A file the store does not hold yet but the disk does: read it.
    Read { id: String, path: String },
    /// Neither stored nor on disk.
    NotFound { id: String, path: Option<String> },
    /// A link pinned to a version: show that version (as `show_version`),
    /// never activate the latest in its place (§7.3, §9).
    ShowVersion {
        id: String,
        path: Option<String>,
        pin: String,
    },
    /// A metadata-only expand: the target's metadata, nothing activated.
    Metadata {
        id: String,
        path: Option<String>,
        line: String,
    },
}

/// A stored target's metadata as a metadata-only expand lists it: type,
/// then a file's type, size and state, or a tool call's tool, status, size
/// and arguments (one line).
pub fn metadata_of(d: &Document) -> String {
    let chars = d
        .get("char_count")
        .and_then(Value::as_u64)
        .unwrap_or_else(|| char_count_of(s(d, "content")));
    match s(d, "type") {
        Some("file") => format!(
            "file type={} chars={chars}{}",
            s(d, "file_type").unwrap_or_default(),
            file_state_suffix(d)
        ),
        Some("toolcall") => format!(
            "toolcall tool={} status={} chars={chars}{}",
            s(d, "tool").unwrap_or_default(),
            s(d, "status").unwrap_or_default(),
            s(d, "args_display")
                .filter(|a| !a.is_empty())
                .map(|a| format!(" args={}", a.replace('\n', " ")))
                .unwrap_or_default()
        ),
        Some(t) => format!("{t} chars={chars}"),
        None => "unknown type".into(),
    }
}

/// The item for a metadata-only step.
pub fn listed(id: String, path: Option<String>, line: String) -> ExpandItem {
    ExpandItem {
        id,
        path,
        outcome: "listed".into(),
        message: line,
        pin: None,
        version: None,
    }
}

/// What `expand` did, per target.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExpandItem {
    pub id: String,
    pub path: Option<String>,
    /// `activated`, `already active`, `not found`, `failed`, `version
    /// shown` (a pinned link), `no such version`, `listed` (metadata only).
    pub outcome: String,
    pub message: String,
    /// The pin of a pinned link.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pin: Option<String>,
    /// A pinned link's version as `show_version` renders it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// The item for a pinned link: the version it names, in the result only
/// (the session's sets are not touched), or why there is none.
pub async fn show_pinned(
    store: &dyn Store,
    id: &str,
    path: Option<String>,
    pin: &str,
) -> Result<ExpandItem> {
    Ok(match pinned_version(store, id, pin).await? {
        Ok(v) => ExpandItem {
            id: id.to_owned(),
            path,
            outcome: "version shown".into(),
            message: format!(
                "pinned to {pin}: version {} of {}, shown here only, not activated",
                v.info.version, v.of
            ),
            pin: Some(pin.to_owned()),
            version: Some(v.render()),
        },
        Err(e) => ExpandItem {
            id: id.to_owned(),
            path,
            outcome: "no such version".into(),
            message: format!("pinned to {pin}: {}", e),
            pin: Some(pin.to_owned()),
            version: None,
        },
    })
}

/// The references `select` keeps, in link-line order, as `(position,
/// reference)`.
pub fn selected(
    doc: &Document,
    select: &Select,
    target_doc: &dyn Fn(&str) -> Option<Document>,
) -> Result<Vec<(usize, LinkRef)>> {
    if let Some(types) = &select.types {
        for t in types {
            if !matches!(t.as_str(), "file" | "toolcall" | "note") {
                return Err(Error::InvalidArgument(format!(
                    "expand: unknown type {t:?} in select.types (file, toolcall, note)"
                )));
            }
        }
    }
    // A reference without a path in the document (a tool call's file) takes
    // its target's, so path patterns select it too.
    let ts: Vec<LinkRef> = expand_refs(doc)
        .into_iter()
        .map(|r| LinkRef {
            path: r
                .path
                .clone()
                .or_else(|| target_doc(&r.id).as_ref().and_then(source_path)),
            ..r
        })
        .collect();
    if let Some(pos) = &select.positions {
        if let Some(bad) = pos.iter().find(|&&p| p == 0 || p > ts.len()) {
            return Err(Error::InvalidArgument(format!(
                "expand: position {bad} is not one of this object's {} links (1-based)",
                ts.len()
            )));
        }
    }
    Ok(ts
        .into_iter()
        .enumerate()
        .map(|(i, r)| (i + 1, r))
        .filter(|(i, _)| select.positions.as_ref().is_none_or(|ps| ps.contains(i)))
        .filter(|(_, r)| {
            select.path.as_ref().is_none_or(|pat| {
                r.path.as_ref().is_some_and(|p| {
                    glob_match(pat, p)
                        || glob_match(&format!("*/{}", pat.trim_start_matches('/')), p)
                })
            })
        })
        .filter(|(_, LinkRef { id, path: p, .. })| {
            select.types.as_ref().is_none_or(|types| {
                let ty = target_doc(id)
                    .and_then(|d| s(&d, "type").map(str::to_owned))
                    .unwrap_or_else(|| {
                        if p.is_some() {
                            "file".into()
                        } else {
                            String::new()
                        }
                    });
                let note = p
                    .as_deref()
                    .is_some_and(|p| super::notes::is_note_type(&crate::model::file_type_of(p)));
                types.iter().any(|t| t == &ty || (t == "note" && note))
            })
        })
        .collect())
}

/// At most this many targets are loaded by one `expand` (a chat holds
/// hundreds of tool calls: all of them at once would flood the context).
pub const MAX_EXPAND_LOADS: usize = 50;
/// At most this many are listed by one metadata-only `expand`.
pub const MAX_EXPAND_LISTED: usize = 200;

/// The object `expand` starts from (latest version, read from the store).
pub async fn source_doc(store: &dyn Store, id: &str) -> Result<Document> {
    paged::get(store, id)
        .await?
        .ok_or_else(|| Error::UnknownObject(id.to_owned()))
}

/// The steps that expand `doc`'s selected links.
pub async fn plan_expand(
    store: &dyn Store,
    doc: &Document,
    select: &Select,
) -> Result<Vec<ExpandStep>> {
    let ids: Vec<String> = expand_refs(doc).into_iter().map(|r| r.id).collect();
    let stored: std::collections::HashMap<String, Document> = store
        .get_many(&ids)
        .await?
        .into_iter()
        .filter_map(|d| Some((s(&d, ID_KEY)?.to_owned(), d)))
        .collect();
    let chosen = selected(doc, select, &|id| stored.get(id).cloned())?;
    let most = if select.metadata {
        MAX_EXPAND_LISTED
    } else {
        MAX_EXPAND_LOADS
    };
    if chosen.len() > most {
        return Err(Error::InvalidArgument(format!(
            "expand: {} targets selected, at most {most} are {} at once; narrow with types, path or positions{}",
            chosen.len(),
            if select.metadata { "listed" } else { "loaded" },
            if select.metadata {
                ""
            } else {
                " (metadata: true lists them with their positions)"
            }
        )));
    }
    if select.metadata {
        return Ok(chosen
            .into_iter()
            .map(|(pos, r)| ExpandStep::Metadata {
                line: format!(
                    "position {pos}: {}",
                    stored
                        .get(&r.id)
                        .map(metadata_of)
                        .unwrap_or_else(|| "not stored".into())
                ),
                id: r.id,
                path: r.path,
            })
            .collect());
    }
    Ok(chosen
        .into_iter()
        .map(
            |(_, LinkRef { id, path, pin })| match (stored.get(&id), path, pin) {
                (_, path, Some(pin)) => ExpandStep::ShowVersion { id, path, pin },
                (stored_doc, path, None) => match (stored_doc, path) {
                    (Some(d), Some(p)) if s(d, "state") == Some("stub") => {
                        ExpandStep::Read { id, path: p }
                    }
                    (Some(d), _) => ExpandStep::Activate { id, doc: d.clone() },
                    (None, Some(p)) if std::path::Path::new(&p).exists() => {
                        ExpandStep::Read { id, path: p }
                    }
                    (None, path) => ExpandStep::NotFound { id, path },
                },
            },
        )
        .collect())
}

/// The text the agent sees for an expand answer.
pub fn render_expand(id: &str, items: &[ExpandItem]) -> String {
    if items.is_empty() {
        return format!("{id} has no links that match");
    }
    let mut out = if items.iter().all(|i| i.outcome == "listed") {
        format!(
            "{} links of {id}, metadata only (expand with positions to load them):",
            items.len()
        )
    } else {
        format!("expanded {} links of {id}:", items.len())
    };
    for i in items {
        out.push_str(&format!(
            "\n- id={}{}: {} ({})",
            i.id,
            i.path
                .as_deref()
                .map(|p| format!(" path={p}"))
                .unwrap_or_default(),
            i.outcome,
            i.message
        ));
    }
    // Pinned versions after the list, so the ids above read back
    // ([`expanded_ids`]) without looking into their text.
    for v in items.iter().filter_map(|i| i.version.as_deref()) {
        out.push_str("\n\n");
        out.push_str(v);
    }
    out
}

/// The ids an expand result (as [`render_expand`] wrote it) activated: the
/// cache layout shows them in that result, as it does for `activate`.
pub fn expanded_ids(text: &str) -> Vec<String> {
    text.split("\n\n")
        .next()
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.strip_prefix("- id="))
        .filter(|l| l.contains(": activated (") || l.contains(": already active ("))
        .filter_map(|l| l.split(' ').next())
        .map(|id| id.trim_end_matches(':').to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("*.md", "/a/b.md"));
        assert!(!glob_match("*.md", "/a/b.rs"));
        assert!(glob_match("/a/?.rs", "/a/b.rs"));
        assert!(glob_match("*", ""));
    }

    #[test]
    fn expanded_ids_read_back_render_expand() {
        let item = |id: &str, outcome: &str| ExpandItem {
            id: id.into(),
            path: Some("/a b/c.md".into()),
            outcome: outcome.into(),
            message: "m".into(),
            pin: None,
            version: None,
        };
        let text = render_expand(
            "n",
            &[
                item("x1", "activated"),
                item("x2", "not found"),
                item("toolcall:s:1", "already active"),
            ],
        );
        assert_eq!(expanded_ids(&text), vec!["x1", "toolcall:s:1"]);
    }
}
