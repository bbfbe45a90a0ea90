//! The words the model reads, per layout: one owner for every text that
//! depends on the layout (design §0, "Who owns the words").
//!
//! - the result of a set operation (activate / deactivate / pin / unpin):
//!   the session decides a [`SetOutcome`], this module turns it into the
//!   engine's message (names the object by id; the facade, logs, `expand`)
//!   and into the tool result the model reads ([`set_op_text`]: the cache
//!   layout names the object as the model typed it);
//! - the cache layout's header message ([`HEADER`]);
//! - what a host tells the model about context management, per layout: the
//!   system-prompt section, the set-operation tools' descriptions, the id
//!   parameter and the read tool's addition ([`prompts`]). The pi package
//!   takes them from here (`layoutWords` in the binding) and adds only its
//!   own tools' texts, which are the same in every layout.
//!
//! The texts are byte-identical to what the model saw before they moved
//! here (the replay benchmark and the pi end-to-end tests compare them).

use serde::{Deserialize, Serialize};

use super::Layout;

/// `s` on one line: runs of whitespace and control characters collapsed to
/// single spaces, cut to `max` chars with `…` (a call's arguments in the
/// chat, a user prompt in a fold summary).
pub fn one_line(s: &str, max: usize) -> String {
    let mut out = String::new();
    let mut n = 0;
    let words = s
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty());
    for word in words {
        if n > 0 {
            out.push(' ');
            n += 1;
        }
        for ch in word.chars() {
            if n >= max {
                out.push('…');
                return out;
            }
            out.push(ch);
            n += 1;
        }
    }
    out
}

/// The cache layout's one-line header message (sent before the chat).
pub const HEADER: &str = "Context manager: files and tool outputs are objects with ids (t… tool calls, f… files). Older tool outputs and edit/write bodies are collapsed to refs like [t12 · 340 lines], a successful edit's oldText at once (that text is no longer in the file); activate(id) shows one again (pin(id) keeps it), deactivate(id)/unpin(id) undo. read(path) reads a file. CHANGED messages show files that changed since you saw them.";

/// Why a call that writes a ref as text is not run (the tool result the
/// model reads; see `Session::ref_as_text`).
pub fn ref_as_text(field: &str, token: &str, target: &str) -> String {
    format!(
        "Not run: {field} holds {token}, a ref the context manager showed in place of text you saw. A ref is not file text: write the text itself (activate({target}) shows it again)."
    )
}

/// A working copy (cache layout): the text of a file the agent is editing
/// as it was after tool call `as_of` (`t40`; `None`: before any), shown
/// once when the calls that showed it were collapsed.
pub fn working_copy(alias: &str, path: &str, as_of: Option<&str>, text: &str) -> String {
    let lines = super::cache_layout::line_count(text);
    match as_of {
        Some(t) => format!(
            "FILE {alias} {path} as of {t} ({lines} lines; later edits of it follow):\n{text}"
        ),
        None => format!("FILE {alias} {path} ({lines} lines; later edits of it follow):\n{text}"),
    }
}

/// A collapsed working copy: `[f3 · 620 lines]`, like a collapsed call.
pub fn working_copy_ref(alias: &str, text: &str) -> String {
    format!(
        "[{alias} · {} lines]",
        super::cache_layout::line_count(text)
    )
}

/// One of the agent's set operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SetOp {
    Activate,
    Deactivate,
    Pin,
    Unpin,
}

impl SetOp {
    pub const ALL: [SetOp; 4] = [SetOp::Activate, SetOp::Deactivate, SetOp::Pin, SetOp::Unpin];

    pub fn as_str(self) -> &'static str {
        match self {
            SetOp::Activate => "activate",
            SetOp::Deactivate => "deactivate",
            SetOp::Pin => "pin",
            SetOp::Unpin => "unpin",
        }
    }

    /// `"activate"` … `"unpin"`; None for anything else.
    pub fn parse(s: &str) -> Option<SetOp> {
        SetOp::ALL.into_iter().find(|op| op.as_str() == s)
    }
}

/// What a successful set operation did (the session's decision; the words
/// for it are this module's). Serialized as its snake_case name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SetOutcome {
    /// activate / cache-layout pin: the object became active.
    Activated,
    /// activate: it was active already (its content is refreshed all the same).
    AlreadyActive,
    Deactivated,
    /// Cache layout: deactivate also removed the pin.
    DeactivatedAndUnpinned,
    /// Spec layout: deactivated; the pin stays (it only exempts from auto-collapse).
    DeactivatedStillPinned,
    WasNotActive,
    /// pin: pinned and active.
    Pinned,
    /// Spec layout: pinned, not active (pin does not activate there).
    PinnedNotActive,
    AlreadyPinned,
    Unpinned,
    WasNotPinned,
}

impl SetOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            SetOutcome::Activated => "activated",
            SetOutcome::AlreadyActive => "already_active",
            SetOutcome::Deactivated => "deactivated",
            SetOutcome::DeactivatedAndUnpinned => "deactivated_and_unpinned",
            SetOutcome::DeactivatedStillPinned => "deactivated_still_pinned",
            SetOutcome::WasNotActive => "was_not_active",
            SetOutcome::Pinned => "pinned",
            SetOutcome::PinnedNotActive => "pinned_not_active",
            SetOutcome::AlreadyPinned => "already_pinned",
            SetOutcome::Unpinned => "unpinned",
            SetOutcome::WasNotPinned => "was_not_pinned",
        }
    }
}

/// The note added when an activated file is deleted.
const DELETED_NOTE: &str = " (the file is deleted: a note is shown instead of content)";

/// The engine's message for a set operation's outcome: names the object by
/// its id. The spec layout's tool result is this message.
pub fn set_op_message(layout: Layout, outcome: SetOutcome, id: &str, deleted: bool) -> String {
    use SetOutcome as O;
    let note = if deleted { DELETED_NOTE } else { "" };
    match outcome {
        O::Activated => {
            format!("activated {id}: its content appears in context from the next model call{note}")
        }
        O::AlreadyActive => format!("{id} is already active (its content is in context){note}"),
        O::Deactivated => format!("deactivated {id}: its metadata stays in the pool"),
        O::DeactivatedAndUnpinned => {
            format!("deactivated and unpinned {id}: its metadata stays in the pool")
        }
        O::DeactivatedStillPinned => format!(
            "deactivated {id}: its metadata stays in the pool (still pinned: once activated again, auto-collapse will not hide it)"
        ),
        O::WasNotActive => format!("{id} was not active"),
        O::Pinned => match layout {
            Layout::Cache => format!("pinned {id}: it stays active until unpinned"),
            Layout::Spec => {
                format!("pinned {id}: auto-collapse will not hide it (deactivate still does)")
            }
        },
        O::PinnedNotActive => format!(
            "pinned {id}: it is not active; activate it to show its content (auto-collapse will not hide it)"
        ),
        O::AlreadyPinned => format!("{id} is already pinned"),
        O::Unpinned => format!("unpinned {id}: auto-collapse applies to it again"),
        O::WasNotPinned => format!("{id} was not pinned"),
    }
}

/// The tool result the model reads for a set operation. Spec layout: the
/// engine's message. Cache layout: in the ids the model used (`named`, the
/// target as typed); activate/pin results are replaced by the content in
/// what the model sees, so this text matters for deactivate/unpin.
pub fn set_op_text(
    layout: Layout,
    op: SetOp,
    outcome: SetOutcome,
    id: &str,
    named: &str,
    deleted: bool,
) -> String {
    use SetOutcome as O;
    if layout == Layout::Spec {
        return set_op_message(layout, outcome, id, deleted);
    }
    let t = named;
    let note = if deleted { DELETED_NOTE } else { "" };
    match (op, outcome) {
        // The engine renders the content (or a pointer to where it is live)
        // as this result either way.
        (SetOp::Activate, _) => format!("activated {t}: its content is shown as this result{note}"),
        (SetOp::Pin, O::AlreadyPinned) => format!("{t} is already pinned"),
        (SetOp::Pin, _) => format!("pinned {t}: shown and kept from collapsing until unpin({t})"),
        (SetOp::Deactivate, O::WasNotActive) => format!("{t} is not shown (already collapsed)"),
        (SetOp::Deactivate, O::DeactivatedAndUnpinned) => format!(
            "deactivated and unpinned {t}: it collapses to a ref at the next collapse; activate({t}) shows it again"
        ),
        (SetOp::Deactivate, _) => format!(
            "deactivated {t}: it collapses to a ref at the next collapse; activate({t}) shows it again"
        ),
        (SetOp::Unpin, O::WasNotPinned) => format!("{t} was not pinned"),
        (SetOp::Unpin, _) => format!("unpinned {t}: it may collapse again"),
    }
}

/// One set-operation tool as a host registers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolWords {
    pub name: &'static str,
    pub label: &'static str,
    pub description: &'static str,
    /// The one line a host lists among its tools.
    pub snippet: &'static str,
}

/// What a layout adds to the host's own read tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadWords {
    /// Appended to the host's description after a space.
    pub description_suffix: &'static str,
    /// Replaces the host's snippet when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snippet: Option<&'static str>,
    /// Appended to the host's guidelines.
    pub guidelines: Vec<&'static str>,
}

/// Everything a host tells the model about context management in one
/// layout (besides the context itself).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptWords {
    pub layout: Layout,
    /// The section added to the host's system prompt.
    pub system_section: &'static str,
    /// The description of an `id` parameter (set operations, memory tools).
    pub id_description: &'static str,
    /// activate, deactivate, pin, unpin (in that order).
    pub tools: Vec<ToolWords>,
    pub read: ReadWords,
}

const CACHE_SECTION: &str = "Context management (self-context-manager):
- Every tool call has an id t1, t2, … (shown as the call's id) and every file an id f1, f2, …. Tool output stays where it happened; now and then older outputs and write/edit bodies are collapsed together to refs like [t12 · 340 lines], and a successful edit's oldText right away (that text is no longer in the file). The ids keep working. A ref is not file text: an edit quotes the file as it is.
- FILES messages list files as they become known: \"f3 src/app.ts (1200 chars)\", or \"[unread]\" for a file only seen in ls/find/grep/bash output.
- A CHANGED message shows, as a diff, a file you have in view that changed outside your own edits (on disk, by another agent). The files you are working on stay visible; activate(f3) always shows a file's current text.
- activate(id) shows something again as its own result: t12 that call's output, f3 the file's current text (an [unread] file is read first). pin(id) does the same and keeps it from collapsing until unpin(id). deactivate(id) lets what you no longer need collapse at the next collapse. read(path) reads a file as usual.
- search(query) finds files, notes and tool outputs of every earlier session (activate(id) loads a hit); versions/show_version/diff show older versions of a file on request.
- Notes are Markdown files: [[name]] and [text](path) links, #tags and frontmatter are understood. A note you activate lists what it links to as \"- link id=…\" lines (metadata only); expand(id) loads them, backlinks(id) lists notes linking to an object.";

const SPEC_SECTION: &str = "Context management (self-context-manager):
- Files you read and tool outputs are objects. The METADATA_POOL message lists every object of this session with its id, one line each; a file marked [unread] was only discovered (by ls/find/grep/bash) and has not been read.
- The active set is shown as ACTIVE_CONTENT blocks at the end of the context: the current content of each active object, once. Tool results in the chat are only references (toolcall_ref id=…); the content is in the ACTIVE_CONTENT blocks while the object is active.
- read(path) loads a file into the active set. activate(id) brings back any object from the pool (an [unread] file is read first); deactivate(id) collapses it to its pool line; pin(id) keeps it active until unpin(id). Ids are as shown in the pool (a unique prefix works) or a file path.
- Older tool outputs collapse automatically; deactivate what you no longer need to keep the context small.
- search(query) finds files, notes and tool outputs of every earlier session; activate(id) loads a hit. versions/show_version/diff show older versions on request.
- Notes are Markdown files: [[name]] and [text](path) links, #tags and frontmatter are understood. An active note lists what it links to as \"- link id=…\" lines (metadata only); expand(id) loads them, backlinks(id) lists notes linking to an object.";

/// The host-facing words of `layout`.
pub fn prompts(layout: Layout) -> PromptWords {
    let tool = |name, label, description, snippet| ToolWords {
        name,
        label,
        description,
        snippet,
    };
    match layout {
        Layout::Cache => PromptWords {
            layout,
            system_section: CACHE_SECTION,
            id_description: "t12 (a tool call) or f3 (a file) as shown in the context, or a file path",
            tools: vec![
                tool(
                    "activate",
                    "Activate",
                    "Show something again as this call's result: a tool call's output (t12) or a file's current text (f3 or a path; an [unread] file is read first). It collapses again later like any output unless pinned.",
                    "Show a collapsed output (t12) or a file's current text (f3) again",
                ),
                tool(
                    "deactivate",
                    "Deactivate",
                    "Free an output or file text you no longer need: at the next collapse it becomes a ref like [t12 · 340 lines]. activate(id) shows it again at any time.",
                    "Let an output or file text you no longer need collapse",
                ),
                tool(
                    "pin",
                    "Pin",
                    "Show something like activate and keep it from collapsing until unpin(id); for a file, its newest read or written text.",
                    "Keep an output or file from collapsing",
                ),
                tool(
                    "unpin",
                    "Unpin",
                    "Remove a pin: the object may collapse again at a later collapse.",
                    "Let a pinned object collapse again",
                ),
            ],
            read: ReadWords {
                description_suffix: "The text is this call's result; later it may be collapsed to a ref like [t12 · 340 lines] (activate the file's f-id to see its current text again).",
                snippet: None,
                guidelines: Vec::new(),
            },
        },
        Layout::Spec => PromptWords {
            layout,
            system_section: SPEC_SECTION,
            id_description: "An object id as shown in the METADATA_POOL (a unique prefix is enough), or a file path",
            tools: vec![
                tool(
                    "activate",
                    "Activate",
                    "Load an object's current content into the active context (shown as an ACTIVE_CONTENT block from the next step on). An [unread] file is read first.",
                    "Bring an object from the METADATA_POOL into the active context",
                ),
                tool(
                    "deactivate",
                    "Deactivate",
                    "Collapse an active object to its one-line METADATA_POOL entry; its content leaves the context from the next step on. It can be activated again at any time.",
                    "Remove an object's content from the active context (it stays in the pool)",
                ),
                tool(
                    "pin",
                    "Pin",
                    "Activate an object and keep it active: pinned objects are exempt from automatic collapse until unpinned.",
                    "Keep an object active (exempt from automatic collapse)",
                ),
                tool(
                    "unpin",
                    "Unpin",
                    "Remove an object's pin; it stays active but may collapse automatically again.",
                    "Let a pinned object collapse automatically again",
                ),
            ],
            read: ReadWords {
                description_suffix: "The file's content is shown to you as an ACTIVE_CONTENT block at the end of the context (once, kept current) rather than in this tool's result.",
                snippet: Some("Read a file into the active context (shown as an ACTIVE_CONTENT block)"),
                guidelines: vec!["A file you read stays active (its current content at the end of the context) until you deactivate it; do not read it again to see it, and use activate(id) for files already in the METADATA_POOL."],
            },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "toolcall:s:k1";

    /// The cache layout's texts as pi's `cacheOpMessage` wrote them before
    /// they moved here (target as the model typed it).
    #[test]
    fn cache_texts_name_the_target_as_typed() {
        let t = |op, o, deleted| set_op_text(Layout::Cache, op, o, ID, "t3", deleted);
        use SetOp::*;
        use SetOutcome as O;
        assert_eq!(
            t(Activate, O::Activated, false),
            "activated t3: its content is shown as this result"
        );
        assert_eq!(
            t(Activate, O::AlreadyActive, false),
            "activated t3: its content is shown as this result"
        );
        assert_eq!(
            t(Activate, O::Activated, true),
            "activated t3: its content is shown as this result (the file is deleted: a note is shown instead of content)"
        );
        assert_eq!(t(Pin, O::AlreadyPinned, false), "t3 is already pinned");
        assert_eq!(
            t(Pin, O::Pinned, true),
            "pinned t3: shown and kept from collapsing until unpin(t3)"
        );
        assert_eq!(
            t(Deactivate, O::WasNotActive, false),
            "t3 is not shown (already collapsed)"
        );
        assert_eq!(
            t(Deactivate, O::Deactivated, false),
            "deactivated t3: it collapses to a ref at the next collapse; activate(t3) shows it again"
        );
        assert_eq!(
            t(Deactivate, O::DeactivatedAndUnpinned, false),
            "deactivated and unpinned t3: it collapses to a ref at the next collapse; activate(t3) shows it again"
        );
        assert_eq!(t(Unpin, O::WasNotPinned, false), "t3 was not pinned");
        assert_eq!(
            t(Unpin, O::Unpinned, false),
            "unpinned t3: it may collapse again"
        );
    }

    #[test]
    fn spec_text_is_the_engine_message_by_id() {
        for o in [
            SetOutcome::Activated,
            SetOutcome::DeactivatedStillPinned,
            SetOutcome::PinnedNotActive,
        ] {
            assert_eq!(
                set_op_text(Layout::Spec, SetOp::Activate, o, ID, "t3", false),
                set_op_message(Layout::Spec, o, ID, false)
            );
        }
        assert_eq!(
            set_op_message(Layout::Spec, SetOutcome::AlreadyActive, ID, true),
            "toolcall:s:k1 is already active (its content is in context) (the file is deleted: a note is shown instead of content)"
        );
        assert_eq!(
            set_op_message(Layout::Spec, SetOutcome::Pinned, ID, false),
            "pinned toolcall:s:k1: auto-collapse will not hide it (deactivate still does)"
        );
        assert_eq!(
            set_op_message(Layout::Cache, SetOutcome::Pinned, ID, false),
            "pinned toolcall:s:k1: it stays active until unpinned"
        );
    }

    #[test]
    fn prompts_list_the_four_set_tools_in_order() {
        for layout in [Layout::Cache, Layout::Spec] {
            let p = prompts(layout);
            let names: Vec<_> = p.tools.iter().map(|t| t.name).collect();
            assert_eq!(names, SetOp::ALL.map(SetOp::as_str));
            let json = serde_json::to_value(&p).unwrap();
            assert!(json["systemSection"]
                .as_str()
                .unwrap()
                .starts_with("Context management (self-context-manager):\n- "));
            assert!(json["read"]["descriptionSuffix"].is_string());
        }
        assert!(SetOp::parse("activate").is_some() && SetOp::parse("open").is_none());
    }
}
