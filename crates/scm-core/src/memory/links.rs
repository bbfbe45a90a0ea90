//! Following references (memory-system-v0 §5.2, §8, §9; issue 12 item 2):
//! a note's links as metadata lines, its backlinks, and `expand`.
//!
//! - **Link metadata lines.** An active object with links shows, after its
//!   content, one line per distinct target: id, path, type, size and its
//!   state (`[unread]`, `[deleted]`, `[not found]` for a file that does not
//!   exist yet), without activating it ([`link_lines`]). The lines are built
//!   from the objects the session knows, never from a store read while
//!   rendering: the targets join the session's pool when the note enters it
//!   ([`targets_to_discover`]: files that exist become discovery stubs,
//!   §5.2 "making them inactive/visible without loading their content").
//! - **Backlinks** ([`backlinks`]): the store's `backlinks` query (objects
//!   whose latest version links here), with their metadata.
//! - **expand** ([`plan_expand`] + [`ExpandStep`]): activates what an
//!   object references, all of it or a selection ([`Select`]); the caller
//!   runs the steps (adopt a stored object, read a file) because reading a
//!   file goes through the indexer.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::model::{char_count_of, FilesystemSource};
use crate::session::paged;
use crate::store::{Document, Store, ID_KEY};

/// Header of the link lines after an active object's content.
pub const LINKS_HEADER: &str =
    "[links: metadata only; expand(id) or activate a link's id to read it]";

fn s<'a>(d: &'a Document, k: &str) -> Option<&'a str> {
    d.get(k).and_then(Value::as_str)
}

/// The links stored in a document (`[]` for anything but a parsed note).
pub fn links_of(doc: &Document) -> Vec<&serde_json::Map<String, Value>> {
    doc.get("links")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_object).collect())
        .unwrap_or_default()
}

/// One distinct reference of a document: a target, and the version it is
/// pinned to (None: the latest). Link lines, `expand` positions and
/// selections go by these, in first-link order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkRef {
    pub id: String,
    pub path: Option<String>,
    pub pin: Option<String>,
}

/// The distinct `(target, pin)` references of a document, first-link order.
pub fn link_refs(doc: &Document) -> Vec<LinkRef> {
    let mut out: Vec<LinkRef> = Vec::new();
    for l in links_of(doc) {
        let Some(t) = l.get("target").and_then(Value::as_str) else {
            continue;
        };
        let pin = l.get("pin").and_then(Value::as_str);
        if !out.iter().any(|r| r.id == t && r.pin.as_deref() == pin) {
            out.push(LinkRef {
                id: t.to_owned(),
                path: l.get("path").and_then(Value::as_str).map(str::to_owned),
                pin: pin.map(str::to_owned),
            });
        }
    }
    out
}

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

/// The path of a stored file object's source.
fn source_path(d: &Document) -> Option<String> {
    d.get("source")
        .and_then(FilesystemSource::from_json)
        .map(|x| x.path)
}

/// What a pin resolved to: the object hash of the version it names, or
/// None when it names no version. Keyed by [`pin_key`].
pub type PinStates = std::collections::HashMap<String, Option<String>>;

/// The key of a pinned reference in [`PinStates`].
pub fn pin_key(id: &str, pin: &str) -> String {
    format!("{id}@{pin}")
}

/// The pinned references of `doc` whose key `known` does not hold yet.
pub fn pins_to_resolve(doc: &Document, known: &dyn Fn(&str) -> bool) -> Vec<(String, String)> {
    link_refs(doc)
        .into_iter()
        .filter_map(|r| Some((r.id, r.pin?)))
        .filter(|(id, pin)| !known(&pin_key(id, pin)))
        .collect()
}

/// Resolves pins against the store's histories: the object hash of each
/// pinned version, None for a pin that names no version (or an object the
/// store does not hold). A version is immutable once written, so the answer
/// only changes for a time pin in the future.
pub async fn resolve_pins(store: &dyn Store, pins: &[(String, String)]) -> Result<PinStates> {
    let mut out = PinStates::new();
    for (id, pin) in pins {
        let hash = match pinned_version(store, id, pin).await? {
            Ok(v) => v.info.object_hash.or(Some(String::new())),
            Err(_) => None,
        };
        out.insert(pin_key(id, pin), hash);
    }
    Ok(out)
}

/// The version a pin names; the inner error says why there is none
/// (`UNKNOWN_OBJECT`: no such object or version; `INVALID_ARGUMENT`: not a
/// pin). Store failures are the outer error.
pub async fn pinned_version(
    store: &dyn Store,
    id: &str,
    pin: &str,
) -> Result<std::result::Result<super::versions::ShownVersion, Error>> {
    let Some(at) = super::versions::VersionRef::parse_pin(pin) else {
        return Ok(Err(Error::InvalidArgument(format!(
            "{pin:?} is not a version pin"
        ))));
    };
    match super::versions::show_version(store, id, &at).await {
        Ok(v) => Ok(Ok(v)),
        Err(e @ Error::UnknownObject(_)) => Ok(Err(e)),
        Err(e) => Err(e),
    }
}

/// Distinct `(target id, path)` of a document's links, first-link order.
pub fn targets(doc: &Document) -> Vec<(String, Option<String>)> {
    let mut out: Vec<(String, Option<String>)> = Vec::new();
    for l in links_of(doc) {
        let Some(t) = l.get("target").and_then(Value::as_str) else {
            continue;
        };
        if !out.iter().any(|(x, _)| x == t) {
            let p = l.get("path").and_then(Value::as_str).map(str::to_owned);
            out.push((t.to_owned(), p));
        }
    }
    out
}

/// One metadata line for a link target known as `target` (or not known).
pub fn target_line(
    id: &str,
    path: Option<&str>,
    target: Option<&Document>,
    display_path: &dyn Fn(&FilesystemSource) -> String,
) -> String {
    let Some(d) = target else {
        return match path {
            Some(p) => format!("- link id={id} path={p} [not found]"),
            None => format!("- link id={id} [not found]"),
        };
    };
    match s(d, "type") {
        Some("file") => {
            let shown = d
                .get("source")
                .and_then(FilesystemSource::from_json)
                .map(|src| display_path(&src))
                .or_else(|| path.map(str::to_owned))
                .unwrap_or_default();
            let mut line = format!(
                "- link id={id} file path={shown} type={} chars={}",
                s(d, "file_type").unwrap_or_default(),
                d.get("char_count").and_then(Value::as_u64).unwrap_or(0)
            );
            match s(d, "state") {
                Some("present") | None => {}
                Some(other) => {
                    line.push_str(if other == "stub" { " [unread" } else { " [" });
                    if other != "stub" {
                        line.push_str(other);
                    }
                    line.push(']');
                }
            }
            line
        }
        Some(t) => format!(
            "- link id={id} {t}{} chars={}",
            s(d, "tool")
                .map(|x| format!(" tool={x}"))
                .unwrap_or_default(),
            char_count_of(s(d, "content"))
        ),
        None => format!("- link id={id} [unknown type]"),
    }
}

/// What a pinned reference's line adds: the pin, then whether the target
/// (as shown, `target`) has newer versions than the pinned one, or that the
/// pin names no version. `state`: the pin's [`PinStates`] entry, None when
/// not resolved (yet).
pub fn pin_suffix(pin: &str, state: Option<&Option<String>>, target: Option<&Document>) -> String {
    let shown = target.and_then(|d| s(d, "object_hash"));
    match state {
        None => format!(" pinned={pin}"),
        Some(None) => format!(" pinned={pin} [no such version]"),
        Some(Some(h)) if Some(h.as_str()) == shown => format!(" pinned={pin} (the latest)"),
        Some(Some(_)) => format!(" pinned={pin} [newer versions exist]"),
    }
}

/// The lines shown after an active object's content, or `None` when it has
/// no links. `lookup` answers from the objects the session knows, `pins` with
/// the resolved pins ([`PinStates`]).
pub fn link_lines<'a>(
    doc: &Document,
    lookup: &dyn Fn(&str) -> Option<&'a Document>,
    pins: &PinStates,
    display_path: &dyn Fn(&FilesystemSource) -> String,
) -> Option<String> {
    let refs = link_refs(doc);
    if refs.is_empty() {
        return None;
    }
    let mut out = String::from(LINKS_HEADER);
    for r in &refs {
        out.push('\n');
        let target = lookup(&r.id);
        out.push_str(&target_line(&r.id, r.path.as_deref(), target, display_path));
        if let Some(pin) = &r.pin {
            out.push_str(&pin_suffix(pin, pins.get(&pin_key(&r.id, pin)), target));
        }
    }
    Some(out)
}

/// Paths of link targets to bring into a session's pool as discovery stubs:
/// file targets the session does not know (`known`) that exist on disk now.
/// A target that does not exist stays a `[not found]` line until it does.
pub fn targets_to_discover(doc: &Document, known: &dyn Fn(&str) -> bool) -> Vec<String> {
    targets(doc)
        .into_iter()
        .filter(|(id, _)| !known(id))
        .filter_map(|(_, p)| p)
        .filter(|p| std::path::Path::new(p).exists())
        .collect()
}

/// Ids of link targets that are not paths (`[[toolcall:…]]`, `[[<hash>]]`)
/// and that the session does not know: adopted from the store if they exist.
pub fn id_targets_to_adopt(doc: &Document, known: &dyn Fn(&str) -> bool) -> Vec<String> {
    targets(doc)
        .into_iter()
        .filter(|(id, p)| p.is_none() && !known(id))
        .map(|(id, _)| id)
        .collect()
}

/// One object that links to another.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Backlink {
    pub id: String,
    #[serde(rename = "type")]
    pub object_type: String,
    pub path: Option<String>,
    /// Where the links sit in it: `(field, line)` of each link to the target.
    pub at: Vec<LinkSite>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LinkSite {
    pub field: String,
    pub line: u64,
}

/// Who references `id` (latest versions), with where in each the links sit.
pub async fn backlinks(store: &dyn Store, id: &str) -> Result<Vec<Backlink>> {
    let ids = store.backlinks(id).await?;
    let docs = store.get_many(&ids).await?;
    let mut out: Vec<Backlink> = docs
        .iter()
        .map(|d| Backlink {
            id: s(d, ID_KEY).unwrap_or_default().to_owned(),
            object_type: s(d, "type").unwrap_or_default().to_owned(),
            path: d
                .get("source")
                .and_then(FilesystemSource::from_json)
                .map(|x| x.path),
            at: links_of(d)
                .into_iter()
                .filter(|l| l.get("target").and_then(Value::as_str) == Some(id))
                .map(|l| LinkSite {
                    field: l
                        .get("field")
                        .and_then(Value::as_str)
                        .unwrap_or("content")
                        .to_owned(),
                    line: l.get("line").and_then(Value::as_u64).unwrap_or(0),
                })
                .collect(),
        })
        .collect();
    out.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(out)
}

/// The text the agent sees for a backlinks answer.
pub fn render_backlinks(id: &str, list: &[Backlink]) -> String {
    if list.is_empty() {
        return format!("no object links to {id}");
    }
    let mut out = format!("{} objects link to {id}:", list.len());
    for b in list {
        out.push_str(&format!(
            "\n- id={} {}{} at {}",
            b.id,
            b.object_type,
            b.path
                .as_deref()
                .map(|p| format!(" path={p}"))
                .unwrap_or_default(),
            b.at.iter()
                .map(|x| format!("{}:{}", x.field, x.line))
                .collect::<Vec<_>>()
                .join(", ")
        ));
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
        Some("file") => {
            let state = match s(d, "state") {
                Some("present") | None => String::new(),
                Some("stub") => " [unread]".into(),
                Some(other) => format!(" [{other}]"),
            };
            format!(
                "file type={} chars={chars}{state}",
                s(d, "file_type").unwrap_or_default()
            )
        }
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
