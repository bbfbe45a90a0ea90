//! The options a session is opened with, from JS to the core's
//! (`HandleOptions`, `IndexerOptions`, the resolver). Every option left
//! unset keeps the core's default.

use std::path::PathBuf;
use std::sync::Arc;

use napi_derive::napi;
use scm_core::fs::indexer::{Indexer, IndexerOptions};
use scm_core::fs::resolver::{MountMapping, Resolver};
use scm_core::session::handle::{HandleOptions, OpenFrom};
use scm_core::session::{CachePolicy, CollapsePolicy, Layout};
use scm_core::store::Store;

use crate::errors::{invalid_arg, parse_json, IntoJsResult};
use crate::resolver::NapiMountMapping;

/// Auto-collapse policy (SSOT §4.3). Defaults: 5 per turn, 3 turns back,
/// files do not collapse, the context tools are exempt.
#[napi(object)]
pub struct NapiCollapsePolicy {
    pub per_turn: Option<u32>,
    pub turns_back: Option<u32>,
    pub collapse_files: Option<bool>,
    pub exempt_tools: Option<Vec<String>>,
}

impl From<NapiCollapsePolicy> for CollapsePolicy {
    fn from(p: NapiCollapsePolicy) -> Self {
        let d = CollapsePolicy::default();
        CollapsePolicy {
            per_turn: p.per_turn.map_or(d.per_turn, |n| n as usize),
            turns_back: p.turns_back.map_or(d.turns_back, |n| n as usize),
            collapse_files: p.collapse_files.unwrap_or(d.collapse_files),
            exempt_tools: p.exempt_tools.unwrap_or(d.exempt_tools),
        }
    }
}

/// Thresholds of the cache layout (sizes in chars/4 units unless named
/// `…Chars`). Defaults: the measured recommendation (high 10,000, low
/// 2,000, fold 4,000, min collapse 200 chars, bash 300 chars, summary
/// 4,000 chars; rewrite call ids, drop old thinking, dedupe re-reads,
/// honour host compaction on; forced epoch when deactivations free 5,000).
#[napi(object)]
pub struct NapiCachePolicy {
    pub high: Option<u32>,
    pub low: Option<u32>,
    pub min_collapse_chars: Option<u32>,
    pub bash_collapse_chars: Option<u32>,
    pub fold: Option<u32>,
    pub summary_chars: Option<u32>,
    pub rewrite_call_ids: Option<bool>,
    pub drop_thinking: Option<bool>,
    pub dedupe_reads: Option<bool>,
    pub honour_host_compaction: Option<bool>,
    pub deactivate_epoch: Option<u32>,
    /// Working files: a file touched by one of the newest this many tool
    /// calls keeps its view through epochs (default 12; 0 = off).
    pub working_calls: Option<u32>,
    /// An edited or written file stays working while one of the newest this
    /// many tool calls edited or wrote it (default 32; a file edited from memory twice as long).
    pub working_edited_calls: Option<u32>,
    /// Units the working files' views may keep at an epoch (default 6,000).
    pub working_units: Option<u32>,
    /// Units the working copies (the current version of an edited file
    /// whose view does not fit) may take (default 16,000; 0 = off).
    pub working_copy_units: Option<u32>,
    /// Once 20 reads are in and their median output is larger than this
    /// (units), high, low, workingUnits and workingCopyUnits grow in
    /// proportion, up to 2× (default 1,000; 0 = never).
    pub scale_above: Option<u32>,
}

impl From<NapiCachePolicy> for CachePolicy {
    fn from(p: NapiCachePolicy) -> Self {
        let d = CachePolicy::default();
        CachePolicy {
            high: p.high.unwrap_or(d.high),
            low: p.low.unwrap_or(d.low),
            min_collapse_chars: p.min_collapse_chars.unwrap_or(d.min_collapse_chars),
            bash_collapse_chars: p.bash_collapse_chars.unwrap_or(d.bash_collapse_chars),
            fold: p.fold.unwrap_or(d.fold),
            summary_chars: p.summary_chars.unwrap_or(d.summary_chars),
            rewrite_call_ids: p.rewrite_call_ids.unwrap_or(d.rewrite_call_ids),
            drop_thinking: p.drop_thinking.unwrap_or(d.drop_thinking),
            dedupe_reads: p.dedupe_reads.unwrap_or(d.dedupe_reads),
            honour_host_compaction: p.honour_host_compaction.unwrap_or(d.honour_host_compaction),
            deactivate_epoch: p.deactivate_epoch.unwrap_or(d.deactivate_epoch),
            working_calls: p.working_calls.unwrap_or(d.working_calls),
            working_edited_calls: p.working_edited_calls.unwrap_or(d.working_edited_calls),
            working_units: p.working_units.unwrap_or(d.working_units),
            working_copy_units: p.working_copy_units.unwrap_or(d.working_copy_units),
            scale_above: p.scale_above.unwrap_or(d.scale_above),
        }
    }
}

/// Unset fields keep the core's defaults (`HandleOptions::new`).
#[napi(object)]
pub struct NapiSessionOptions {
    pub session_id: String,
    /// Relative agent paths resolve against this (the facade defaults it to `process.cwd()`).
    pub workspace_root: String,
    pub system_prompt: Option<String>,
    pub mounts: Option<Vec<NapiMountMapping>>,
    pub default_filesystem_id: Option<String>,
    pub default_is_local: Option<bool>,
    pub policy: Option<NapiCollapsePolicy>,
    /// `"cache"` (default: content inline, collapsed in epochs) or `"spec"`
    /// (METADATA_POOL, toolcall_refs, ACTIVE_CONTENT).
    pub layout: Option<String>,
    pub cache_policy: Option<NapiCachePolicy>,
    /// Track indexed files with a watcher (default false).
    pub watch: Option<bool>,
    /// When the watcher polls directories: `"auto"` (default: network
    /// filesystems and directories the platform's watcher refuses),
    /// `"always"` (every directory, no platform watcher), `"never"`.
    pub watch_poll: Option<String>,
    /// Time between two looks at a polled directory, 10 ms to one hour
    /// (default 1000).
    pub watch_poll_ms: Option<i64>,
    /// Put the system prompt in the output as a `system` message (default true).
    pub emit_system_message: Option<bool>,
    pub max_content_bytes: Option<i64>,
    /// File-name globs whose files are never read (metadata-only,
    /// `withheld: "secret"`); replaces the default list.
    pub secret_patterns: Option<Vec<String>>,
    /// Opt-in: read files on the secret list like any other.
    pub read_secrets: Option<bool>,
    /// Opt-in: read files outside the workspace and the mounts.
    pub read_outside_workspace: Option<bool>,
    /// On resume, read discovery stubs whose source exists (default true).
    pub resume_upgrades_stubs: Option<bool>,
    /// Note folders (relative to the workspace root, or absolute): every
    /// `.md`/`.markdown` under them is indexed as a note at open, and
    /// watched with `watch`.
    pub note_folders: Option<Vec<String>>,
    /// Open a new session as a fork of another (ignored when it exists).
    pub fork_of: Option<NapiForkOf>,
    /// Open from a context commit (`ctx-…`): a new session branches from
    /// it, an existing one whose chain runs through it resumes.
    pub from_commit: Option<String>,
    /// transformContext resolves after its write landed (default false:
    /// the write goes behind, see `flush`).
    pub durable_transform: Option<bool>,
    /// Open an existing session for reading only (the command-line tool):
    /// no reconciliation, no watcher, no write; the layout is the stored one.
    pub read_only: Option<bool>,
}

/// The parent of a fork and the child's transcript at start.
#[napi(object)]
pub struct NapiForkOf {
    pub session_id: String,
    /// JSON array: the child's messages, a prefix of the parent's transcript.
    pub messages_json: String,
}

/// The core's options from the facade's: every field left unset keeps
/// `HandleOptions::new`'s default (the product's, in one place).
pub(crate) fn build(
    store: Arc<dyn Store>,
    o: NapiSessionOptions,
) -> napi::Result<(HandleOptions, Arc<Indexer>)> {
    let mut h = HandleOptions::new(o.session_id);
    let opts = &mut h.session;
    opts.system_prompt = o.system_prompt;
    if let Some(p) = o.policy {
        opts.policy = p.into();
    }
    if let Some(l) = o.layout.as_deref() {
        opts.layout = Layout::parse(l).js()?;
    }
    if let Some(p) = o.cache_policy {
        opts.cache = p.into();
    }
    if let Some(w) = o.watch {
        opts.watch = w;
    }
    opts.watch_poll =
        scm_core::fs::watcher::PollOptions::from_settings(o.watch_poll.as_deref(), o.watch_poll_ms)
            .js()?;
    if let Some(e) = o.emit_system_message {
        opts.render.emit_system_message = e;
    }
    if let Some(b) = o.resume_upgrades_stubs {
        opts.resume_upgrades_stubs = b;
    }
    if let Some(f) = o.note_folders {
        opts.note_folders = f;
    }
    if let Some(d) = o.durable_transform {
        h.durable_transform = d;
    }
    h.from = match (o.fork_of, o.from_commit, o.read_only.unwrap_or(false)) {
        (_, _, true) => OpenFrom::ReadOnly,
        (Some(_), Some(_), _) => {
            return Err(invalid_arg("open: pass forkOf or fromCommit, not both"))
        }
        (Some(f), None, _) => OpenFrom::Fork {
            parent: f.session_id,
            messages: parse_json(&f.messages_json, "forkOf messages")?,
        },
        (None, Some(c), _) => OpenFrom::Commit(c),
        (None, None, _) => OpenFrom::Latest,
    };
    let resolver = Resolver::new(
        o.default_filesystem_id
            .unwrap_or_else(scm_core::fs::resolver::default_filesystem_id),
        PathBuf::from(o.workspace_root),
        o.mounts
            .unwrap_or_default()
            .into_iter()
            .map(MountMapping::from)
            .collect(),
        o.default_is_local.unwrap_or(true),
    );
    let mut iopts = IndexerOptions::default();
    if let Some(max) = o.max_content_bytes {
        iopts.max_content_bytes =
            u64::try_from(max).map_err(|_| invalid_arg("maxContentBytes must be ≥ 0"))?;
    }
    if let Some(p) = o.secret_patterns {
        iopts.secrets.patterns = p;
    }
    if let Some(b) = o.read_secrets {
        iopts.secrets.read_secrets = b;
    }
    if let Some(b) = o.read_outside_workspace {
        iopts.secrets.read_outside_workspace = b;
    }
    let indexer = Arc::new(Indexer::new(store, Arc::new(resolver), iopts));
    Ok((h, indexer))
}
