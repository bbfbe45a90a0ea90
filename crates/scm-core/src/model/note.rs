//! Notes (memory-system-v0 §3.1, §4.5, §8, §10, §12.1, §17): a Markdown
//! file's structure, parsed when its version is built and stored in the
//! file document itself, outside the hashed field list (the hashes stay the
//! plan's; the structure is derived from `content`, which is hashed):
//!
//! - `frontmatter`: the leading YAML block as a JSON object (a subset of
//!   YAML: `key: scalar`, `key: [a, b]`, `key:` followed by `- item` lines;
//!   anything else is kept as its text);
//! - `tags`: frontmatter `tags`/`tag` and inline `#tags`, without `#`,
//!   first occurrence order, no duplicates;
//! - `links`: one entry per reference, where it sits (`field`, `line`),
//!   what was written (`text`, `kind`, `alias`, `heading`) and what it names
//!   (`target` object id, `path`);
//! - `link_ids`: the distinct target ids, top level so that backlinks are a
//!   store query (XTDB indexes top-level vector elements; SQLite reads them
//!   with `json_each`) instead of a second copy to keep in sync.
//!
//! **A link's target id is computed, not looked up**: a file's id is the
//! hash of its source (filesystem id + canonical path), so a link to a file
//! that does not exist yet already carries the id the file will have, and
//! resolves when the file appears — nothing to re-parse. Wikilinks resolve
//! relative to the note's folder (`[[b]]` → `b.md` beside the note,
//! `[[sub/c]]` → `sub/c.md`); Obsidian's vault-wide "shortest unique name"
//! would need a store read at parse time and make the id depend on what
//! else exists. `[[<object id>]]` (64 hex digits, or `toolcall:…`) names an
//! object directly (§4.5).

use serde_json::{json, Map, Value};

use super::FilesystemSource;

/// Extensions parsed as notes (memory-system-v0 §3.1: a note is a Markdown
/// file, not a separate object type).
pub const NOTE_TYPES: [&str; 2] = ["md", "markdown"];

/// Whether a file of this `file_type` is parsed as a note.
pub fn is_note_type(file_type: &str) -> bool {
    NOTE_TYPES.contains(&file_type.to_ascii_lowercase().as_str())
}

/// One reference inside a note.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    /// Object id of the target (computed for paths).
    pub target: String,
    /// Canonical path of a file target; None for an id link.
    pub path: Option<String>,
    /// The target as written (`b`, `../x.md`, an id).
    pub text: String,
    /// `wikilink`, `embed` (`![[…]]`) or `markdown` (`[text](dest)`).
    pub kind: &'static str,
    pub alias: Option<String>,
    pub heading: Option<String>,
    /// The version the link is pinned to, as written after `@` (`v3`, a
    /// hash prefix, `tx:812`, an RFC 3339 time); None follows the latest.
    pub pin: Option<String>,
    /// `content` or `frontmatter.<key>`.
    pub field: String,
    /// 1-based line in the file.
    pub line: usize,
}

impl Link {
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("target".into(), json!(self.target));
        m.insert("path".into(), json!(self.path));
        m.insert("text".into(), json!(self.text));
        m.insert("kind".into(), json!(self.kind));
        if let Some(a) = &self.alias {
            m.insert("alias".into(), json!(a));
        }
        if let Some(h) = &self.heading {
            m.insert("heading".into(), json!(h));
        }
        if let Some(p) = &self.pin {
            m.insert("pin".into(), json!(p));
        }
        m.insert("field".into(), json!(self.field));
        m.insert("line".into(), json!(self.line));
        Value::Object(m)
    }
}

/// What a note's text holds.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NoteStructure {
    pub frontmatter: Map<String, Value>,
    pub tags: Vec<String>,
    pub links: Vec<Link>,
}

impl NoteStructure {
    /// The distinct target ids, in first-link order.
    pub fn link_ids(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for l in &self.links {
            if !out.contains(&l.target) {
                out.push(l.target.clone());
            }
        }
        out
    }

    /// Store the structure in a file document (fields outside the hashed list).
    pub fn write_into(&self, doc: &mut Map<String, Value>) {
        doc.insert(
            "frontmatter".into(),
            Value::Object(self.frontmatter.clone()),
        );
        doc.insert("tags".into(), json!(self.tags));
        doc.insert(
            "links".into(),
            Value::Array(self.links.iter().map(Link::to_json).collect()),
        );
        doc.insert("link_ids".into(), json!(self.link_ids()));
    }
}

/// Parse `content` of the note at `source`.
pub fn parse(source: &FilesystemSource, content: &str) -> NoteStructure {
    let mut out = NoteStructure::default();
    let (front, body, body_line) = split_frontmatter(content);
    if let Some(front) = front {
        out.frontmatter = parse_yaml_subset(front);
        for (k, v) in &out.frontmatter {
            if k == "tags" || k == "tag" {
                let vals: Vec<String> = match v {
                    Value::Array(a) => a.iter().filter_map(scalar_text).collect(),
                    other => scalar_text(other)
                        .map(|s| {
                            s.split(|c: char| c == ',' || c.is_whitespace())
                                .map(str::to_owned)
                                .collect()
                        })
                        .unwrap_or_default(),
                };
                for t in vals {
                    push_tag(&mut out.tags, t.trim().trim_start_matches('#'));
                }
            }
        }
        // Links inside frontmatter values (`related: "[[b]]"`), §8.1.
        for (i, raw) in front.lines().enumerate() {
            let line = i + 2;
            let key = raw.split(':').next().unwrap_or("").trim();
            let key = if raw.starts_with([' ', '\t', '-']) {
                last_key(front, i)
            } else {
                key.to_owned()
            };
            for (text, kind) in wikilinks_in(raw) {
                if let Some(l) = make_link(source, &text, kind, &format!("frontmatter.{key}"), line)
                {
                    out.links.push(l);
                }
            }
        }
    }
    scan_body(source, body, body_line, &mut out);
    out
}

/// The key a continuation line (`  - x`) belongs to.
fn last_key(front: &str, upto: usize) -> String {
    front
        .lines()
        .take(upto + 1)
        .filter(|l| !l.starts_with([' ', '\t', '-']) && l.contains(':'))
        .last()
        .and_then(|l| l.split(':').next())
        .unwrap_or("")
        .trim()
        .to_owned()
}

/// `(frontmatter text, body, 1-based line where the body starts)`.
fn split_frontmatter(content: &str) -> (Option<&str>, &str, usize) {
    let Some(rest) = content
        .strip_prefix("---\n")
        .or_else(|| content.strip_prefix("---\r\n"))
    else {
        return (None, content, 1);
    };
    let mut offset = 0;
    for (i, line) in rest.split_inclusive('\n').enumerate() {
        let t = line.trim_end_matches(['\n', '\r']);
        if t == "---" || t == "..." {
            let front = &rest[..offset];
            let body = &rest[offset + line.len()..];
            return (Some(front), body, i + 3);
        }
        offset += line.len();
    }
    (None, content, 1)
}

fn scalar(raw: &str) -> Value {
    let t = raw.trim();
    if t.len() >= 2
        && ((t.starts_with('"') && t.ends_with('"')) || (t.starts_with('\'') && t.ends_with('\'')))
    {
        return Value::String(t[1..t.len() - 1].to_owned());
    }
    match t {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        _ => {}
    }
    if let Ok(i) = t.parse::<i64>() {
        return json!(i);
    }
    if t.contains('.') {
        if let Ok(f) = t.parse::<f64>() {
            if f.is_finite() {
                return json!(f);
            }
        }
    }
    Value::String(t.to_owned())
}

fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// `key: value`, `key: [a, b]` and block lists; other lines are ignored,
/// a nested block is kept as its text.
fn parse_yaml_subset(front: &str) -> Map<String, Value> {
    let mut out = Map::new();
    let mut current: Option<String> = None;
    let mut block: Vec<String> = Vec::new();
    let mut list: Vec<Value> = Vec::new();
    let finish = |out: &mut Map<String, Value>,
                  key: &mut Option<String>,
                  list: &mut Vec<Value>,
                  block: &mut Vec<String>| {
        if let Some(k) = key.take() {
            let v = if !list.is_empty() {
                Value::Array(std::mem::take(list))
            } else if !block.is_empty() {
                Value::String(std::mem::take(block).join("\n"))
            } else {
                Value::Null
            };
            out.insert(k, v);
        }
        list.clear();
        block.clear();
    };
    for line in front.lines() {
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let indented = line.starts_with([' ', '\t']);
        let trimmed = line.trim();
        if current.is_some() && (indented || trimmed.starts_with("- ") || trimmed == "-") {
            if let Some(item) = trimmed.strip_prefix('-').filter(|_| block.is_empty()) {
                list.push(scalar(item));
            } else {
                block.push(trimmed.to_owned());
            }
            continue;
        }
        finish(&mut out, &mut current, &mut list, &mut block);
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let k = k.trim().to_owned();
        let v = v.trim();
        if v.is_empty() {
            current = Some(k);
        } else if v.starts_with('[') && v.ends_with(']') && !v.starts_with("[[") {
            let items = v[1..v.len() - 1]
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(scalar)
                .collect();
            out.insert(k, Value::Array(items));
        } else {
            out.insert(k, scalar(v));
        }
    }
    finish(&mut out, &mut current, &mut list, &mut block);
    out
}

fn push_tag(tags: &mut Vec<String>, t: &str) {
    if !t.is_empty() && !tags.iter().any(|x| x == t) {
        tags.push(t.to_owned());
    }
}

/// `[[…]]` and `![[…]]` in one line: `(inner text, kind)`.
fn wikilinks_in(line: &str) -> Vec<(String, &'static str)> {
    let mut out = Vec::new();
    let mut rest = line;
    let mut base = 0;
    while let Some(i) = rest.find("[[") {
        let after = &rest[i + 2..];
        let Some(j) = after.find("]]") else { break };
        let inner = &after[..j];
        if !inner.is_empty() && !inner.contains('\n') && !inner.contains("[[") {
            let embed = base + i > 0 && line.as_bytes()[base + i - 1] == b'!';
            out.push((inner.to_owned(), if embed { "embed" } else { "wikilink" }));
        }
        let consumed = i + 2 + j + 2;
        base += consumed;
        rest = &rest[consumed..];
    }
    out
}

/// Remove inline code spans (`` `…` ``) so their text is neither a link nor
/// a tag.
fn strip_code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
            out.push(' ');
        } else {
            out.push(if in_code { ' ' } else { c });
        }
    }
    out
}

fn scan_body(source: &FilesystemSource, body: &str, first_line: usize, out: &mut NoteStructure) {
    let mut fence: Option<&str> = None;
    for (i, raw) in body.lines().enumerate() {
        let line_no = first_line + i;
        let t = raw.trim_start();
        if let Some(f) = fence {
            if t.starts_with(f) {
                fence = None;
            }
            continue;
        }
        if t.starts_with("```") {
            fence = Some("```");
            continue;
        }
        if t.starts_with("~~~") {
            fence = Some("~~~");
            continue;
        }
        let line = strip_code_spans(raw);
        for (text, kind) in wikilinks_in(&line) {
            if let Some(l) = make_link(source, &text, kind, "content", line_no) {
                out.links.push(l);
            }
        }
        for dest in markdown_links_in(&line) {
            if let Some(l) = make_link(source, &dest, "markdown", "content", line_no) {
                out.links.push(l);
            }
        }
        for tag in inline_tags(&line) {
            push_tag(&mut out.tags, &tag);
        }
    }
}

/// Destinations of `[text](dest)` and `![alt](dest)`, not wikilinks.
fn markdown_links_in(line: &str) -> Vec<String> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < b.len() {
        if b[i] == b']' && b[i + 1] == b'(' && !(i > 0 && b[i - 1] == b']') {
            let start = i + 2;
            if let Some(len) = line[start..].find(')') {
                let dest = line[start..start + len].trim();
                // `(dest "title")`
                let dest = dest.split_once(" \"").map_or(dest, |(d, _)| d);
                let dest = dest.trim_start_matches('<').trim_end_matches('>');
                if !dest.is_empty() {
                    out.push(dest.to_owned());
                }
                i = start + len;
            }
        }
        i += 1;
    }
    out
}

/// `#tag` at the start of the line or after whitespace: letters, digits,
/// `_`, `-`, `/`; at least one character that is not a digit.
fn inline_tags(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '#' && (i == 0 || chars[i - 1].is_whitespace()) {
            let mut j = i + 1;
            while j < chars.len()
                && (chars[j].is_alphanumeric() || matches!(chars[j], '_' | '-' | '/'))
            {
                j += 1;
            }
            let tag: String = chars[i + 1..j].iter().collect();
            if !tag.is_empty() && tag.chars().any(|c| !c.is_ascii_digit()) {
                out.push(tag.trim_end_matches('/').to_owned());
            }
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// Whether `s` is an object id rather than a path: a 64-digit hex hash or
/// an assigned id (`toolcall:…`).
pub fn looks_like_id(s: &str) -> bool {
    (s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())) || s.starts_with("toolcall:")
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_owned())
}

/// Join `rel` to the folder of `note_path` and normalise `.`/`..`.
pub fn resolve_path(note_path: &str, rel: &str) -> String {
    let mut parts: Vec<&str> = if rel.starts_with('/') {
        Vec::new()
    } else {
        let dir = note_path.rsplit_once('/').map_or("", |(d, _)| d);
        dir.split('/').filter(|p| !p.is_empty()).collect()
    };
    for p in rel.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    format!("/{}", parts.join("/"))
}

fn make_link(
    source: &FilesystemSource,
    written: &str,
    kind: &'static str,
    field: &str,
    line: usize,
) -> Option<Link> {
    let (target_part, alias, heading) = if kind == "markdown" {
        let (p, h) = match written.split_once('#') {
            Some((p, h)) => (p, Some(h)),
            None => (written, None),
        };
        (percent_decode(p), None, h.map(percent_decode))
    } else {
        let (t, alias) = match written.split_once('|') {
            Some((t, a)) => (t, Some(a.trim().to_owned())),
            None => (written, None),
        };
        let (p, h) = match t.split_once('#') {
            Some((p, h)) => (p, Some(h.trim().to_owned())),
            None => (t, None),
        };
        (p.trim().to_owned(), alias, h)
    };
    // `[[b@v3]]`: a pin, when what follows the last `@` names a version
    // (otherwise the `@` is part of the name). Wikilinks and embeds only: a
    // suffix in a Markdown link's destination would break it in every viewer.
    let (target_part, pin) = match target_part.rsplit_once('@') {
        Some((t, p))
            if kind != "markdown"
                && !t.trim().is_empty()
                && super::version_ref::VersionRef::parse_pin(p.trim()).is_some() =>
        {
            (t.trim().to_owned(), Some(p.trim().to_owned()))
        }
        _ => (target_part, None),
    };
    if target_part.is_empty() {
        return None; // `[[#heading]]`, `[x](#anchor)`: inside the note itself
    }
    if kind == "markdown" {
        let lower = target_part.to_ascii_lowercase();
        let scheme = lower.split_once(':').map(|(s, _)| s);
        if scheme.is_some_and(|s| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c))
        }) || lower.starts_with("//")
        {
            return None; // a URL (http:, mailto:, file: …)
        }
    }
    let heading = heading.filter(|h| !h.is_empty());
    // An object id as it is, else a path relative to the note.
    let (target, path) = if kind != "markdown" && looks_like_id(&target_part) {
        (target_part, None)
    } else {
        let mut rel = target_part;
        if kind != "markdown" && crate::model::file_type_of(&rel).is_empty() {
            rel.push_str(".md");
        }
        let path = resolve_path(&source.path, &rel);
        let target = FilesystemSource {
            filesystem_id: source.filesystem_id.clone(),
            path: path.clone(),
        }
        .file_object_id();
        (target, Some(path))
    };
    Some(Link {
        target,
        path,
        text: written.to_owned(),
        kind,
        alias,
        heading,
        pin,
        field: field.to_owned(),
        line,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(path: &str) -> FilesystemSource {
        FilesystemSource {
            filesystem_id: "fs".into(),
            path: path.into(),
        }
    }

    #[test]
    fn frontmatter_tags_and_links() {
        let text = "---\ntitle: Plan\ntags: [alpha, beta]\nstatus: draft\ncount: 3\nrelated:\n  - \"[[other]]\"\n---\n# Plan #intitle\n\nSee [[b|the b note]] and [[sub/c#Setup]], ![[img.png]].\nAlso [d](../d.md#x) and [web](https://x.y) and [[#local]].\nTagged #gamma and #alpha, not #123 nor `#code [[e]]`.\n```\n[[f]] #fenced\n```\n";
        let s = parse(&src("/w/notes/a.md"), text);
        assert_eq!(s.frontmatter["title"], "Plan");
        assert_eq!(s.frontmatter["count"], 3);
        assert_eq!(s.frontmatter["tags"], json!(["alpha", "beta"]));
        assert_eq!(s.tags, vec!["alpha", "beta", "intitle", "gamma"]);
        let paths: Vec<_> = s.links.iter().map(|l| l.path.clone().unwrap()).collect();
        assert_eq!(
            paths,
            vec![
                "/w/notes/other.md",
                "/w/notes/b.md",
                "/w/notes/sub/c.md",
                "/w/notes/img.png",
                "/w/d.md"
            ]
        );
        assert_eq!(s.links[0].field, "frontmatter.related");
        assert_eq!(s.links[1].alias.as_deref(), Some("the b note"));
        assert_eq!(s.links[1].line, 11);
        assert_eq!(s.links[2].heading.as_deref(), Some("Setup"));
        assert_eq!(s.links[3].kind, "embed");
        assert_eq!(s.links[4].kind, "markdown");
        assert_eq!(s.links[4].heading.as_deref(), Some("x"));
        assert_eq!(s.links[1].target, src("/w/notes/b.md").file_object_id());
    }

    #[test]
    fn id_links_and_no_frontmatter() {
        let id = "a".repeat(64);
        let s = parse(&src("/n.md"), &format!("x [[{id}]] [[toolcall:s:1|out]]"));
        assert_eq!(s.links.len(), 2);
        assert_eq!(s.links[0].target, id);
        assert_eq!(s.links[0].path, None);
        assert_eq!(s.links[1].target, "toolcall:s:1");
        assert!(s.frontmatter.is_empty());
        assert_eq!(s.link_ids().len(), 2);
    }

    #[test]
    fn version_pins() {
        let id = "a".repeat(64);
        let text = format!(
            "[[b@v3]] [[b.md@abcdef1#Setup|old b]] ![[c@2026-11-25T10:00:00Z]] [[{id}@tx:9]]\n[[me@home]] [[r@2]] [x](d.md@v2) [[b]]\n"
        );
        let s = parse(&src("/w/n.md"), &text);
        let got: Vec<(Option<&str>, Option<&str>, Option<&str>)> = s
            .links
            .iter()
            .map(|l| (l.path.as_deref(), l.pin.as_deref(), l.heading.as_deref()))
            .collect();
        assert_eq!(
            got,
            vec![
                (Some("/w/b.md"), Some("v3"), None),
                (Some("/w/b.md"), Some("abcdef1"), Some("Setup")),
                (Some("/w/c.md"), Some("2026-11-25T10:00:00Z"), None),
                (None, Some("tx:9"), None),
                (Some("/w/me@home.md"), None, None),
                (Some("/w/r@2.md"), None, None),
                (Some("/w/b.md"), None, None),
                (Some("/w/d.md@v2"), None, None),
            ]
        );
        assert_eq!(s.links[1].alias.as_deref(), Some("old b"));
        assert_eq!(s.links[3].target, id);
        assert_eq!(s.links[0].to_json()["pin"], "v3");
        assert!(s.links[6].to_json().get("pin").is_none());
        // One target id for pinned and unpinned links to one file.
        assert_eq!(s.link_ids().len(), 6);
    }
}
