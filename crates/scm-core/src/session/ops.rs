//! Agent operations: read, activate, deactivate, pin, unpin, and the
//! observation of write / edit / discovery / bash.

use std::borrow::Cow;
use std::path::Path;

use serde_json::Value;

use super::{discovery, Layout, OpResult, Session, SetOp, SetOutcome};
use crate::context::words;
use crate::error::{Error, Result};
use crate::fs::indexer::{IndexResult, VersionPlan};
use crate::fs::resolver::ResolvedPath;
use crate::model::ObjectType;

/// Shortest hash prefix accepted as an id.
const MIN_PREFIX: usize = 6;

/// How an observed file operation is described.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileOp {
    Read,
    /// A read that did not show the file's text whole: a line range, an
    /// image. The file is indexed (so the toolcall's `file_refs` names an
    /// object that exists) and listed, not made active: the model saw the
    /// tool's output, not the file.
    PartialRead,
    /// A `bash` command that printed the file whole (`cat F`, `cat -n F`;
    /// context/shell_read.rs): listed, not made active, as a partial read —
    /// but the version printed is the one the model saw, as a `read`'s is
    /// (a change before its next call is told against it).
    Print,
    Write,
    Edit,
}

impl FileOp {
    fn verb(self) -> &'static str {
        match self {
            FileOp::Read => "read",
            FileOp::PartialRead => "read part of",
            FileOp::Print => "printed",
            FileOp::Write => "wrote",
            FileOp::Edit => "edited",
        }
    }
}

/// Candidate paths of a discovery, already absolute, that exist as regular
/// files here. Computed without the session (no lock needed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiscoveryPlan {
    pub paths: Vec<String>,
}

fn infra_type(id: &str) -> Option<ObjectType> {
    let (prefix, _) = id.split_once(':')?;
    match prefix {
        "chat" => Some(ObjectType::Chat),
        "session" => Some(ObjectType::Session),
        "system_prompt" => Some(ObjectType::SystemPrompt),
        _ => None,
    }
}

/// What the agent typed as a target, read the way pi's tools read a path
/// (they accept `@path` and `~/path`) and the pool shows an id (`id=…`):
/// trimmed, a leading `@` dropped, `~` expanded to the home directory, an
/// `id=` prefix dropped. The set operations' result text keeps the target
/// as typed.
pub fn agent_target(target: &str) -> Cow<'_, str> {
    let t = target.trim();
    let t = t.strip_prefix('@').unwrap_or(t);
    let t = t.strip_prefix("id=").unwrap_or(t);
    let home = || std::env::home_dir().map(|h| h.to_string_lossy().into_owned());
    if t == "~" {
        if let Some(h) = home() {
            return Cow::Owned(h);
        }
    } else if let Some(rest) = t.strip_prefix("~/") {
        if let Some(h) = home() {
            return Cow::Owned(format!("{}/{rest}", h.trim_end_matches('/')));
        }
    }
    Cow::Borrowed(t)
}

fn is_regular_file(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file())
}

impl Session {
    /// Resolves what the agent typed to a content object of this session:
    /// a full id; a toolcall's harness call id; a unique hash prefix
    /// (≥ 6 characters); or a file path.
    pub fn resolve_target(&self, target: &str) -> std::result::Result<String, OpResult> {
        let t = agent_target(target);
        let t = t.as_ref();
        if t.is_empty() {
            return Err(OpResult::failure(
                &Error::InvalidArgument("empty object id".into()),
                None,
            ));
        }
        if let Some(r) = self.resolve_alias(t) {
            return r;
        }
        if let Some(ty) = infra_type(t) {
            return Err(OpResult::failure(
                &Error::NotContentObject {
                    id: t.into(),
                    object_type: ty.as_str().into(),
                },
                Some(t.into()),
            ));
        }
        if self.sets.index.contains(t) {
            return Ok(t.to_string());
        }
        if let Some(ids) = self.chat.by_call_id.get(t) {
            if let Some(last) = ids.last() {
                return Ok(last.clone());
            }
        }
        if t.len() >= MIN_PREFIX && t.bytes().all(|b| b.is_ascii_hexdigit()) {
            let t = t.to_ascii_lowercase();
            let hits: Vec<&String> = self
                .sets
                .index
                .iter()
                .filter(|id| id.starts_with(&t))
                .collect();
            match hits.len() {
                1 => return Ok(hits[0].clone()),
                0 => {}
                n => {
                    return Err(OpResult::failure(
                        &Error::InvalidArgument(format!(
                            "id prefix {t} is ambiguous: it matches {n} objects"
                        )),
                        None,
                    ))
                }
            }
        }
        if let Ok(resolved) = self.resolver().resolve(t) {
            let id = resolved.source.file_object_id();
            if self.sets.index.contains(&id) {
                return Ok(id);
            }
            if t.contains('/') || t.contains('.') {
                return Err(OpResult::failure(
                    &Error::UnknownObject(format!(
                        "{t}: this file is not in the session yet; read it first"
                    )),
                    Some(id),
                ));
            }
        }
        Err(OpResult::failure(&Error::UnknownObject(t.into()), None))
    }

    /// Reads a discovery stub's source now (blocking std::fs) and queues the
    /// upgraded version. On failure the object stays a stub.
    fn upgrade_stub(&mut self, id: &str) -> Result<()> {
        let source = self
            .objects
            .get(id)
            .and_then(super::Known::source)
            .ok_or_else(|| Error::Internal(format!("stub {id} has no source")))?;
        let resolver = self.resolver();
        let resolved = ResolvedPath {
            host_path: resolver.host_path(&source),
            watchable: false,
            source: source.clone(),
        };
        let stub = self.objects.get(id).map(|c| c.doc.clone());
        let plan = self.indexer.plan_blocking(&resolved, stub)?;
        self.take_version(plan);
        self.track(id);
        Ok(())
    }

    /// Reads an indexed file's source again (blocking std::fs) so that an
    /// activation shows its current version even when no watcher reported
    /// the change yet (issue 14, defect 6, too). A file found gone, or no
    /// longer a regular file, gets a deletion version; any other failure
    /// keeps the version known. Withheld files stay unread.
    fn refresh_file(&mut self, id: &str) {
        let Some(c) = self.objects.get(id) else {
            return;
        };
        if c.object_type() != Some(ObjectType::File) || c.is_stub() {
            return;
        }
        let Some(source) = c.source() else {
            return;
        };
        let resolver = self.resolver();
        let Some(host_path) = resolver.host_path(&source) else {
            return;
        };
        let resolved = ResolvedPath {
            host_path: Some(host_path),
            watchable: false,
            source: source.clone(),
        };
        let known = Some(c.doc.clone());
        let plan = match self.indexer.plan_blocking(&resolved, known.clone()) {
            Ok(p) => p,
            Err(Error::FileNotFound { .. } | Error::NotAFile { .. }) => {
                VersionPlan::of(&source, crate::model::FilePayload::Deleted, known, None)
            }
            Err(_) => return,
        };
        self.take_version(plan);
    }

    fn make_active(&mut self, id: &str) -> Result<bool> {
        if self.objects.get(id).is_some_and(super::Known::is_stub) {
            self.upgrade_stub(id)?;
        } else {
            self.refresh_file(id);
            // Shown now, so followed: a file discovered whole (the store
            // knew it from another session) was never tracked (random
            // seed 116, forks).
            self.track(id);
        }
        // Ask before `enter`, which inserts into the active set itself.
        let was_active = self.sets.active.contains(id);
        self.enter(id, true, true);
        self.cache_undeactivate(id);
        self.record_use(id);
        Ok(was_active)
    }

    pub(super) fn is_deleted(&self, id: &str) -> bool {
        self.objects.get(id).and_then(|c| c.str("state")) == Some("deleted")
    }

    /// Shared start of the set operations: the session is open, watcher
    /// versions are applied, and `target` names a content object.
    fn op_target(&mut self, target: &str) -> std::result::Result<String, OpResult> {
        if let Err(e) = self.ensure_open() {
            return Err(OpResult::failure(&e, None));
        }
        self.drain_watch();
        self.resolve_target(target)
    }

    /// Brings an object of the store this session has not seen (another
    /// session's toolcall, a file found by search) into the session index
    /// and the pool, from its latest version `doc` (memory-system-v0 §6.3,
    /// issue 12). Only content objects; returns the id.
    pub fn adopt(&mut self, doc: crate::store::Document) -> Result<String> {
        self.ensure_open()?;
        let id = doc
            .get(crate::store::ID_KEY)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| Error::InvalidArgument("adopt: document without an id".into()))?;
        match crate::model::type_of(&doc) {
            Some(t) if t.is_content() => {}
            t => {
                return Err(Error::NotContentObject {
                    object_type: t.map_or("unknown", ObjectType::as_str).into(),
                    id,
                })
            }
        }
        if !self.sets.index.contains(&id) {
            self.put_object(doc, None, false);
            self.enter(&id, true, false);
            self.track(&id);
        }
        Ok(id)
    }

    /// Loads an object's content into context (counts as fresh use).
    pub fn activate(&mut self, target: &str) -> OpResult {
        self.set_op(SetOp::Activate, target)
    }

    /// Collapses an object to its metadata line (it stays in the pool).
    /// Spec layout: the pin stays (it only ever exempted the object from
    /// auto-collapse; an explicit deactivate still hides it). Cache layout:
    /// deactivate also unpins.
    pub fn deactivate(&mut self, target: &str) -> OpResult {
        self.set_op(SetOp::Deactivate, target)
    }

    /// Spec layout: exempts an object from auto-collapse until unpinned; it
    /// does not change whether the object is active. Cache layout: also
    /// activates it (shows it again).
    pub fn pin(&mut self, target: &str) -> OpResult {
        self.set_op(SetOp::Pin, target)
    }

    /// Removes the pin; the object stays active until the window collapses it.
    pub fn unpin(&mut self, target: &str) -> OpResult {
        self.set_op(SetOp::Unpin, target)
    }

    /// One set operation on `target`; the result's text names the object as
    /// the model typed it.
    pub fn set_op(&mut self, op: SetOp, target: &str) -> OpResult {
        self.set_op_named(op, target, target)
    }

    /// [`Session::set_op`] whose result text names the object `named`: the
    /// target as the model typed it when `target` is already resolved (an
    /// object of the store the session adopted first).
    pub fn set_op_named(&mut self, op: SetOp, target: &str, named: &str) -> OpResult {
        let id = match self.op_target(target) {
            Ok(id) => id,
            Err(r) => return r,
        };
        let outcome = match op {
            SetOp::Activate => self.activate_id(&id),
            SetOp::Deactivate => Ok(self.deactivate_id(&id)),
            SetOp::Pin => self.pin_id(&id),
            SetOp::Unpin => Ok(self.unpin_id(&id)),
        };
        let outcome = match outcome {
            Ok(o) => o,
            Err(e) => return OpResult::failure(&e, Some(id)),
        };
        // What the result will show (cache layout): the object as it is now.
        if matches!(op, SetOp::Activate | SetOp::Pin) && self.options.layout == Layout::Cache {
            if let Some(c) = self.objects.get(&id) {
                let hash = c.object_hash().to_string();
                let doc = c.doc.clone();
                self.cache.frozen.insert((id.clone(), hash.clone()), doc);
                let shows = self.cache.state.op_shows.entry(id.clone()).or_default();
                shows.push(hash);
                self.writes.pending.chat = true;
            }
        }
        let layout = self.options.layout;
        // Only an activation speaks of a deleted file.
        let deleted = op == SetOp::Activate && self.is_deleted(&id);
        OpResult {
            ok: true,
            message: words::set_op_message(layout, outcome, &id, deleted),
            text: words::set_op_text(layout, op, outcome, &id, named, deleted),
            outcome: Some(outcome),
            id: Some(id),
            code: None,
        }
    }

    fn activate_id(&mut self, id: &str) -> Result<SetOutcome> {
        Ok(if self.make_active(id)? {
            SetOutcome::AlreadyActive
        } else {
            SetOutcome::Activated
        })
    }

    /// Whether `pin` only exempts from auto-collapse (the spec layout, SSOT
    /// §3.1 "Pinned set") rather than also showing the object (the cache
    /// layout's pin: "show it and keep it", see design §5).
    fn pin_only_exempts(&self) -> bool {
        self.options.layout == Layout::Spec
    }

    fn deactivate_id(&mut self, id: &str) -> SetOutcome {
        // Cache layout: its live calls collapse at the next epoch.
        let scheduled = self.cache_deactivate(id);
        if !self.sets.active.remove(id) && scheduled == 0 {
            return SetOutcome::WasNotActive;
        }
        self.writes.pending.session = true;
        if self.pin_only_exempts() {
            if self.sets.pinned.contains(id) {
                SetOutcome::DeactivatedStillPinned
            } else {
                SetOutcome::Deactivated
            }
        } else if self.sets.pinned.remove(id) {
            SetOutcome::DeactivatedAndUnpinned
        } else {
            SetOutcome::Deactivated
        }
    }

    fn pin_id(&mut self, id: &str) -> Result<SetOutcome> {
        let exempt_only = self.pin_only_exempts();
        if !exempt_only {
            self.make_active(id)?;
        }
        if !self.sets.pinned.insert(id) {
            return Ok(SetOutcome::AlreadyPinned);
        }
        self.writes.pending.session = true;
        Ok(if !exempt_only || self.sets.active.contains(id) {
            SetOutcome::Pinned
        } else {
            SetOutcome::PinnedNotActive
        })
    }

    fn unpin_id(&mut self, id: &str) -> SetOutcome {
        if self.sets.pinned.remove(id) {
            self.writes.pending.session = true;
            SetOutcome::Unpinned
        } else {
            SetOutcome::WasNotPinned
        }
    }

    /// Applies the outcome of indexing a file the agent read, wrote or edited:
    /// index + pool + active, used now; a partial read: index + pool only.
    /// An error changes nothing.
    pub fn apply_file_op(&mut self, op: FileOp, result: Result<VersionPlan>) -> OpResult {
        if let Err(e) = self.ensure_open() {
            return OpResult::failure(&e, None);
        }
        self.drain_watch();
        let res = match result {
            Ok(r) => r,
            Err(e) => return OpResult::failure(&e, None),
        };
        let id = res.object_id.clone();
        let action = res.action;
        if op == FileOp::Edit {
            self.note_edit_indexed(&res);
        }
        if matches!(op, FileOp::Read | FileOp::Print) {
            self.note_read_indexed(&res);
        }
        self.take_version(res);
        let whole = matches!(op, FileOp::Read | FileOp::Write | FileOp::Edit);
        self.enter(&id, true, whole);
        if whole {
            self.record_use(&id);
        }
        self.track(&id);
        if op == FileOp::Write {
            self.look_again(&id);
        }
        let c = &self.objects[&id];
        let path = c
            .source()
            .map(|s| self.resolver().display_path(&s))
            .unwrap_or_default();
        let what = match c.str("content_omitted") {
            Some(reason) => format!("metadata only: {reason}"),
            None => format!(
                "{} chars",
                c.doc.get("char_count").and_then(Value::as_u64).unwrap_or(0)
            ),
        };
        let state = if whole { "is active" } else { "is in the pool" };
        OpResult::success(
            format!(
                "{} {path} ({what}, {}); id={id} {state}",
                op.verb(),
                action.as_str()
            ),
            Some(id),
        )
    }

    /// The agent reads a file: index it and make it active.
    pub async fn read(&mut self, path: &str) -> Result<OpResult> {
        self.file_op(FileOp::Read, path).await
    }

    /// The agent read part of a file (a line range, an image): index it and
    /// list it in the pool; it does not become active.
    pub async fn observe_partial_read(&mut self, path: &str) -> Result<OpResult> {
        self.file_op(FileOp::PartialRead, path).await
    }

    /// The agent wrote a file (the harness did the write): new version, active.
    pub async fn observe_write(&mut self, path: &str) -> Result<OpResult> {
        self.file_op(FileOp::Write, path).await
    }

    /// The agent edited a file: new version, active.
    pub async fn observe_edit(&mut self, path: &str) -> Result<OpResult> {
        self.file_op(FileOp::Edit, path).await
    }

    /// Which discovered paths exist as regular files (absolute agent paths).
    /// `base_dir` is the directory the tool listed or searched (pi's ls, find
    /// and grep print paths relative to it); relative to the workspace root
    /// if relative itself. Only `std::fs` metadata calls, no store access.
    pub fn plan_discovery(&self, tool: &str, output: &str, base_dir: &str) -> DiscoveryPlan {
        let candidates = discovery::extract_paths(tool, output);
        self.existing_files(candidates, base_dir, false)
    }

    /// Same for tokens of a bash command and its output; only files under
    /// the workspace root count.
    pub fn plan_bash(&self, command: &str, output: &str) -> DiscoveryPlan {
        let root = self.resolver().workspace_root.to_string_lossy().to_string();
        self.existing_files(discovery::bash_tokens(command, output), &root, true)
    }

    fn existing_files(
        &self,
        candidates: Vec<String>,
        base: &str,
        in_workspace: bool,
    ) -> DiscoveryPlan {
        let resolver = self.resolver();
        let base = match resolver.absolute_agent_path(if base.is_empty() { "." } else { base }) {
            Ok(b) => b,
            Err(_) => return DiscoveryPlan::default(),
        };
        let root = resolver.workspace_root.clone();
        let mut paths = Vec::new();
        for c in candidates {
            let full = if c.starts_with('/') {
                c
            } else {
                format!("{}/{}", base.trim_end_matches('/'), c)
            };
            let Ok(resolved) = resolver.resolve(&full) else {
                continue;
            };
            let Some(host) = resolved.host_path.as_deref() else {
                continue;
            };
            if in_workspace && !host.starts_with(&root) && !Path::new(&full).starts_with(&root) {
                continue;
            }
            if is_regular_file(host) && !paths.contains(&full) {
                paths.push(full);
            }
        }
        DiscoveryPlan { paths }
    }

    /// Applies discovery results: index + pool only, never active; existing
    /// objects keep their state.
    pub fn apply_discovery(&mut self, results: Result<Vec<IndexResult>>) -> OpResult {
        if let Err(e) = self.ensure_open() {
            return OpResult::failure(&e, None);
        }
        self.drain_watch();
        let results = match results {
            Ok(r) => r,
            Err(e) => return OpResult::failure(&e, None),
        };
        let mut new = 0;
        for r in &results {
            if !self.objects.contains_key(&r.object_id) {
                self.put_object(r.doc.clone(), r.receipt.as_ref().map(|x| x.tx_id), false);
            }
            if !self.sets.pool.contains(&r.object_id) {
                new += 1;
            }
            self.enter(&r.object_id, true, false);
        }
        OpResult::success(
            format!(
                "discovered {} files ({new} new to this session's metadata pool)",
                results.len()
            ),
            None,
        )
    }

    /// ls / find / grep output → discovery stubs (index + pool only).
    pub async fn observe_discovery(
        &mut self,
        tool: &str,
        output: &str,
        base_dir: &str,
    ) -> Result<OpResult> {
        let plan = self.plan_discovery(tool, output, base_dir);
        self.discover(plan).await
    }

    /// A bash command and its output: the file it only prints is read
    /// (context/shell_read.rs), the other files under the workspace it
    /// names are discovery stubs (best effort).
    pub async fn observe_bash(&mut self, command: &str, output: &str) -> Result<OpResult> {
        super::drive::observe_bash(self, command, output).await
    }

    /// The resolved path of a cached file object, for reconciliation.
    pub(super) fn resolved_of(&self, id: &str) -> Option<ResolvedPath> {
        let source = self.objects.get(id)?.source()?;
        let resolver = self.resolver();
        Some(ResolvedPath {
            host_path: resolver.host_path(&source),
            watchable: resolver.is_watchable(&source),
            source,
        })
    }
}
