//! Following references (memory-system-v0 §5.2, §8; issue 12 item 2): a
//! note's links as metadata lines, their version pins, its backlinks.
//! Loading what they name is [`super::expand`].
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

use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::model::{char_count_of, FilesystemSource};
use crate::store::{Document, Store, ID_KEY};

/// Header of the link lines after an active object's content.
pub const LINKS_HEADER: &str =
    "[links: metadata only; expand(id) or activate a link's id to read it]";

pub(super) fn s<'a>(d: &'a Document, k: &str) -> Option<&'a str> {
    d.get(k).and_then(Value::as_str)
}

/// The path of a stored object's filesystem source (None for a tool call).
pub fn source_path(d: &Document) -> Option<String> {
    d.get("source")
        .and_then(FilesystemSource::from_json)
        .map(|x| x.path)
}

/// What a file's line says of its state: nothing when present, ` [unread]`
/// for a discovery stub, ` [deleted]` and the like otherwise.
pub(super) fn file_state_suffix(d: &Document) -> String {
    match s(d, "state") {
        Some("present") | None => String::new(),
        Some("stub") => " [unread]".into(),
        Some(other) => format!(" [{other}]"),
    }
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
            format!(
                "- link id={id} file path={shown} type={} chars={}{}",
                s(d, "file_type").unwrap_or_default(),
                d.get("char_count").and_then(Value::as_u64).unwrap_or(0),
                file_state_suffix(d)
            )
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
            path: source_path(d),
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
