// Public types of self-context-manager (hand-written; the napi-generated
// native.d.ts describes the raw binding, which is not public API).
//
// Loading: the package is CommonJS. `require('self-context-manager')`,
// `import { ContextManager } from 'self-context-manager'` (Node's CJS interop
// exposes every named export) and pi's jiti loader all work.
//
// Errors: every error thrown or rejected by this package carries a stable
// `code` (see ErrorCode). Messages are for humans and may change; codes never.

// ---------------------------------------------------------------------------
// Errors

export type ErrorCode =
  | 'STORE_UNAVAILABLE'
  | 'STORE_TIMEOUT'
  | 'STORE_PROTOCOL'
  | 'CAS_CONFLICT'
  | 'FILE_NOT_FOUND'
  | 'FILE_UNREADABLE'
  | 'NOT_A_FILE'
  | 'WATCHER_ERROR'
  | 'UNKNOWN_OBJECT'
  | 'NOT_CONTENT_OBJECT'
  | 'INVALID_MESSAGE'
  | 'SESSION_CLOSED'
  /** Another instance (a second process on the same session id) wrote the session since this one read it: this one stopped writing; every call but close fails with it. */
  | 'SESSION_SUPERSEDED'
  | 'INVALID_ARGUMENT'
  | 'IO_ERROR'
  | 'INTERNAL';

export interface ScmError extends Error {
  code: ErrorCode;
}

// ---------------------------------------------------------------------------
// Objects

export type ObjectType = 'file' | 'toolcall' | 'chat' | 'system_prompt' | 'session';

export interface FilesystemSource {
  type: 'filesystem';
  filesystemId: string;
  /** Canonical absolute path within that filesystem. */
  path: string;
}

/**
 * A stored object version. Every document carries the envelope (`xt/id`,
 * `type`, `source`, `identity_hash`), the five hashes and its type's fields.
 */
export interface ObjectDocument {
  'xt/id': string;
  type: ObjectType;
  source: FilesystemSource | null;
  identity_hash: string;
  file_hash: string | null;
  content_hash: string | null;
  metadata_hash: string;
  object_hash: string;
  content?: string | null;
  [field: string]: unknown;
}

export interface FileDocument extends ObjectDocument {
  type: 'file';
  source: FilesystemSource;
  content: string | null;
  /** The path's extension without the dot ('' for none). */
  file_type: string;
  /** UTF-16 code units of content (0 when content is null). */
  char_count: number;
  /** present: read; stub: discovered, never read; deleted: confirmed gone. */
  state: 'present' | 'stub' | 'deleted';
  /** Why a present file's content is null. */
  content_omitted: 'binary' | 'non_utf8' | 'too_large' | 'secret' | 'outside_workspace' | null;
  /** Set when the file was withheld on purpose (never read): why. */
  withheld?: 'secret' | 'outside_workspace';
  /** Modification time (ns) of a file that was not read (too large, withheld). */
  mtime_ns?: number;
  size_bytes: number | null;
}

// ---------------------------------------------------------------------------
// Stable serialisation and the five hashes (all lowercase hex SHA-256)

/** JSON with object keys sorted (UTF-16 order) and no whitespace; scalars exactly as JSON.stringify prints them. */
export declare function stableStringify(value: unknown): string;
/** SHA-256(stable({type, source})) for sourced objects, else SHA-256(stable({type, "xt/id": assignedId})). */
export declare function identityHash(type: ObjectType | string, source: FilesystemSource | null, assignedId?: string): string;
/** SHA-256 of raw bytes (a string hashes as its UTF-8 bytes). */
export declare function fileHash(bytes: string | Uint8Array): string;
/** SHA-256 of the content string; null for null content. */
export declare function contentHash(content: string | null): string | null;
/** SHA-256 of the stable serialisation of a type's metadata fields. */
export declare function metadataHash(fields: Record<string, unknown>): string;
/** SHA-256(stable({file_hash, content_hash, metadata_hash})). */
export declare function objectHash(fileHash: string | null, contentHash: string | null, metadataHash: string): string;
/** This machine's filesystem id: SHA-256 of /etc/machine-id (hostname as fallback). */
export declare function defaultFilesystemId(): string;
/** Version of the native addon. */
export declare function nativeVersion(): string;

/** One set-operation tool as a host registers it. */
export interface ToolWords {
  name: 'activate' | 'deactivate' | 'pin' | 'unpin';
  label: string;
  description: string;
  /** The one line a host lists among its tools. */
  snippet: string;
}

/**
 * What a host tells the model about context management in one layout (the core's `context/words.rs`, which also
 * writes the cache layout's header and the set operations' result texts): the pi package takes its system-prompt
 * section and tool texts from here.
 */
export interface LayoutWords {
  layout: 'spec' | 'cache';
  /** The section added to the host's system prompt. */
  systemSection: string;
  /** The description of an `id` parameter. */
  idDescription: string;
  /** activate, deactivate, pin, unpin (in that order). */
  tools: ToolWords[];
  /** What the layout adds to the host's read tool. */
  read: { descriptionSuffix: string; snippet?: string; guidelines: string[] };
}

/** The words of `layout`; INVALID_ARGUMENT for anything but 'spec' or 'cache'. */
export declare function layoutWords(layout: 'spec' | 'cache'): LayoutWords;

// ---------------------------------------------------------------------------
// Resolver

/**
 * Agent paths under `agentPrefix` live on filesystem `filesystemId` at
 * `canonicalPrefix`; `hostPrefix` is where this process can read them
 * (absent: unreachable from here, never read or watched). Longest prefix wins.
 */
export interface MountMapping {
  agentPrefix: string;
  canonicalPrefix: string;
  filesystemId: string;
  hostPrefix?: string;
}

export interface ResolverOptions {
  /** Relative agent paths resolve against this. Default: process.cwd(). */
  workspaceRoot?: string;
  /** Default: defaultFilesystemId(). */
  defaultFilesystemId?: string;
  mounts?: MountMapping[];
  /** The agent runs on this host (no sandbox): default-filesystem paths are readable and watchable. Default true. */
  defaultIsLocal?: boolean;
}

export interface ResolvedPath {
  source: FilesystemSource;
  /** The file object's id (= its identity hash). */
  objectId: string;
  /** Where this process reads the file; null when it cannot reach it. */
  hostPath: string | null;
  watchable: boolean;
}

export declare class Resolver {
  constructor(options?: ResolverOptions);
  readonly defaultFilesystemId: string;
  readonly workspaceRoot: string;
  /** Agent path (absolute, or relative to the workspace root) → source. INVALID_ARGUMENT for '' or NUL. */
  resolve(agentPath: string): ResolvedPath;
  /** Source → the path the agent sees. */
  agentPath(source: Omit<FilesystemSource, 'type'> & { type?: 'filesystem' }): string;
  /** Source → short path for rendering (relative to the workspace root when inside it). */
  displayPath(source: Omit<FilesystemSource, 'type'> & { type?: 'filesystem' }): string;
}

// ---------------------------------------------------------------------------
// Stores

/**
 * `embedded`: one SQLite file (no `path`: a private in-memory store).
 * `xtdb`: an XTDB v1 node over HTTP; `timeoutMs` bounds every call (default 10 000).
 */
export type StoreOptions =
  | { kind: 'embedded'; path?: string }
  | { kind: 'xtdb'; url: string; timeoutMs?: number };

export type TxOp =
  | { op: 'put'; doc: { 'xt/id': string; [k: string]: unknown } }
  /** Compare-and-set guard: the transaction commits only if the latest version equals `expected` (null: must not exist). */
  | { op: 'match'; id: string; expected: Record<string, unknown> | null };

export interface TxReceipt {
  txId: number;
  /** RFC 3339 (XTDB: whole seconds; address versions by txId). */
  txTime: string;
  /** False when a match failed and the whole transaction was aborted. */
  committed: boolean;
}

export interface Version<D = ObjectDocument> {
  txId: number;
  txTime: string;
  doc: D | null;
}

export type AsOf = { txId: number } | { txTime: string };

export declare class Store {
  private constructor();
  readonly kind: 'embedded' | 'xtdb';
  /** Apply ops atomically; resolves once every later read sees them. */
  submit(ops: TxOp[]): Promise<TxReceipt>;
  get<D = ObjectDocument>(id: string): Promise<D | null>;
  /** Latest versions of many objects; unknown ids are left out. */
  getMany<D = ObjectDocument>(ids: string[]): Promise<D[]>;
  getAsOf<D = ObjectDocument>(id: string, asOf: AsOf): Promise<D | null>;
  /** Every version, oldest first (chat and session documents whole). */
  history<D = ObjectDocument>(id: string): Promise<Version<D>[]>;
  /** Every version as stored: chat and session heads not expanded (their pages are separate documents). */
  storedHistory(id: string): Promise<Version<Record<string, unknown>>[]>;
  /** Newest visible transaction id (null for an empty store). */
  latestTxId(): Promise<number | null>;
  /** Transactions this handle submitted (committed or not). */
  submittedTxCount(): number;
  /** Ids whose latest version has `"type": type` ('session', 'file', 'toolcall', …), sorted. */
  idsOfType(type: string): Promise<string[]>;
  /** Objects, versions and size of the whole store (bytes null where the backend does not say; slow on XTDB). */
  counts(): Promise<{ objects: number; versions: number; bytes: number | null }>;
  /** Every session in the store, oldest first. */
  listSessions(): Promise<SessionSummary[]>;
  /** Full-text search over every session's objects, as `ContextManager.search` but without opening a session. */
  search(query: string, options?: SearchOptions): Promise<SearchResult>;
  /**
   * Write the whole store, or these sessions, to `path` as scm-export JSON Lines (every stored version in
   * transaction order, documents as stored: ids and hashes preserved).
   */
  exportTo(path: string, sessions?: string[]): Promise<PortableStats>;
  /** Import an scm-export file (one transaction per source transaction; versions already held are skipped). */
  importFrom(path: string): Promise<PortableStats>;
}

/** What `exportTo` / `importFrom` did. */
export interface PortableStats {
  objects: number;
  versions: number;
  transactions: number;
  /** Versions an import skipped because the store already held them. */
  skipped: number;
  bytes: number;
}

/** One session of a store (`Store.listSessions`); times are RFC 3339 transaction times. */
export interface SessionSummary {
  sessionId: string;
  started: string;
  lastActivity: string;
  /** Model calls recorded. */
  calls: number;
  /** Objects the session knows. */
  objects: number;
  /**
   * Estimated tokens (⌈UTF-16 length / 4⌉ per message) of the context of the last call, as its record keeps them;
   * null with no call, or for a session recorded before records kept them.
   */
  lastCallTokens: number | null;
}

/** One object of a session (`ContextManager.objects`). */
export interface ObjectLine {
  /** The id the model sees: `t12` (tool call), `f3` (file); null before the model was shown it. */
  alias: string | null;
  id: string;
  type: string;
  path: string | null;
  charCount: number | null;
  tool: string | null;
  status: string | null;
  /** Files: 'present', 'stub' (discovered, unread), 'deleted'. */
  state: string | null;
  active: boolean;
  pinned: boolean;
}

/** One model call (`ContextManager.callSummaries`). Tokens: Σ ⌈UTF-16 length of each message's JSON / 4⌉. */
export interface CallSummary {
  call: number;
  messages: number;
  tokens: number;
  /** Tokens of the leading messages equal to the previous call's (what a prompt cache can reuse). */
  cachedTokens: number;
  /** Harness messages consumed up to this call. */
  transcriptMessages: number;
  /** What the harness alone would send: the system prompt and the whole transcript, outputs in full (same estimate). */
  transcriptTokens: number;
  /** Collapses (cache layout epochs) run at this call, and the folds among them. */
  epochs: number;
  folds: number;
  /** Object ids shown (system prompt and pool objects with a recorded version). */
  shown: string[];
  /** The context commit the call followed (the session's tip as of the call's basis tx); null before the first. */
  commit: string | null;
  /** What the model was sent, as `reconstructCall` gives it: only with `callSummaries(from, to, { context: true })`. */
  context?: HarnessMessage[];
}

/** Open a store. XTDB reachability is checked: STORE_UNAVAILABLE / STORE_TIMEOUT within `timeoutMs`. */
export declare function openStore(options: StoreOptions): Promise<Store>;

// ---------------------------------------------------------------------------
// Indexer

export interface IndexerOptions {
  /** Files larger than this are indexed metadata-only (content_omitted 'too_large'). Default 1 MiB. */
  maxContentBytes?: number;
}

export interface IndexResult {
  objectId: string;
  action: 'created' | 'updated' | 'unchanged';
  /** The latest document after indexing. */
  doc: FileDocument;
  /** Null when nothing was written. */
  receipt: TxReceipt | null;
}

export declare class Indexer {
  constructor(store: Store, resolver: Resolver, options?: IndexerOptions);
  /** Read and index a file. Unchanged bytes: one lookup, zero writes. FILE_NOT_FOUND, NOT_A_FILE, FILE_UNREADABLE. */
  indexFile(agentPath: string): Promise<IndexResult>;
  /** Discovery: stubs for unseen paths in one write; existing objects are never overwritten. */
  discoverFiles(agentPaths: string[]): Promise<IndexResult[]>;
  /** Confirmed deletion: a new version with null content and hashes (history kept). */
  indexFileDeletion(agentPath: string): Promise<IndexResult>;
}

// ---------------------------------------------------------------------------
// Sessions
//
// Default store of ContextManager and SelfContextManager (when no store /
// xtdbBaseUrl is given): the embedded SQLite store at
//   <workspaceRoot>/.scm/store.sqlite
// or at $SCM_STORE_PATH (resolved against the current directory) when set.
// Every manager of the same workspace therefore finds the same store, in one
// process and across processes (SQLite WAL; the file must be on a local disk).

/** The embedded store path a manager of `workspaceRoot` uses by default. */
export declare function defaultStorePath(workspaceRoot: string): string;

/** Auto-collapse (SSOT §4.3). */
export interface CollapsePolicy {
  /** Most recently used tool outputs kept active per turn. Default 5. */
  perTurn?: number;
  /** Turns (the current one included) the window spans. Default 3. */
  turnsBack?: number;
  /** Whether files collapse too. Default false (only toolcalls). */
  collapseFiles?: boolean;
  /** Tools whose results never count and are never auto-activated. Default activate, deactivate, pin, unpin. */
  exemptTools?: string[];
}

export interface ContextManagerOptions {
  /** The harness's session id (pi: a UUIDv7). 1–512 printable characters. */
  sessionId: string;
  /** Default: the embedded store at the default location (see above). `{ kind: 'embedded' }` without a path means the same; `path: ':memory:'` a private in-memory store. */
  store?: { kind: 'embedded'; path?: string } | { kind: 'xtdb'; url: string; timeoutMs?: number };
  /** Relative agent paths resolve against this. Default process.cwd(). */
  workspaceRoot?: string;
  /** Set or replace the system prompt; omitted: a resumed session keeps its own. */
  systemPrompt?: string;
  mounts?: MountMapping[];
  defaultFilesystemId?: string;
  /** The agent runs on this host (no sandbox). Default true. */
  defaultIsLocal?: boolean;
  /** Spec layout's sliding-window auto-collapse (ignored by the cache layout). */
  policy?: CollapsePolicy;
  /**
   * What the model sees. 'cache' (default): tool output inline where it happened, collapsed in batched epochs to
   * refs like `[t12 · 340 lines]`, short ids `t12`/`f3`, chat folded into a summary when long — the prompt-cache
   * friendly layout (docs/design.md, "Context assembly: layouts"). 'spec': METADATA_POOL on top, toolcall_refs in
   * the chat, ACTIVE_CONTENT at the end (SSOT §4; the drop-in SelfContextManager's contract).
   */
  layout?: 'cache' | 'spec';
  /** Thresholds of the cache layout. */
  cachePolicy?: CachePolicy;
  /** Track indexed files: edits outside the agent become new versions (sets never change). Default false. */
  watch?: boolean;
  /**
   * When the watcher polls directories instead of (or as well as) relying on the platform's events:
   * `'auto'` (default) polls a directory on a network or user-space filesystem (NFS, SMB, 9p such as
   * WSL's `/mnt/c`, FUSE such as sshfs), whose changes made elsewhere send no event, and one the
   * platform's watcher refuses (inotify limit); `'always'` polls every directory and uses no platform
   * watcher; `'never'` never polls. Anything else: INVALID_ARGUMENT.
   */
  watchPoll?: 'auto' | 'always' | 'never';
  /** Time between two looks at a polled directory, in ms (10 to 3,600,000); a change is reported once it has settled, one to two intervals after it. Default 1000. */
  watchPollMs?: number;
  /** Emit the system prompt as a `system` message (pi 1.x prepends its own: pass false there). Default true. */
  emitSystemMessage?: boolean;
  /** Files larger than this are metadata-only (never read: no file_hash). Default 1 MiB. */
  maxContentBytes?: number;
  /**
   * File-name globs (`*`, `?`, `!` to take a name back out; the last match wins) whose files are
   * indexed metadata-only with `withheld: 'secret'` and never read. Replaces the default list
   * (`.env`, `.env.*` except `.env.example`/`.sample`/`.template`, `*.pem`, `*.key`, `*.p12`, `*.pfx`,
   * `id_rsa*`/`id_ed25519*`/… except `*.pub`, `.npmrc`, `.netrc`, `.pgpass`, `*.kdbx`, `credentials` …).
   */
  secretPatterns?: string[];
  /** Opt-in: read files on the secret list like any other (default false; env SCM_READ_SECRETS=1). */
  readSecrets?: boolean;
  /**
   * Opt-in: read files outside the workspace root and the configured mounts (default false:
   * metadata-only with `withheld: 'outside_workspace'`; env SCM_READ_OUTSIDE_WORKSPACE=1).
   */
  readOutsideWorkspace?: boolean;
  /**
   * Note folders (relative to `workspaceRoot`, or absolute): every `.md`/`.markdown` under them (hidden
   * entries skipped, at most 10,000 files) is indexed as a note when the session opens — content,
   * frontmatter, links, tags — so `search` and `backlinks` find notes the agent never read; with `watch`,
   * new, changed and deleted notes there become new versions. The notes join the store, not the session's
   * sets. A folder that does not exist is skipped. pi: `selfContextManager.noteFolders` or `SCM_NOTE_FOLDERS`.
   */
  noteFolders?: string[];
  /** On resume, read discovery stubs whose file exists. Default true. */
  resumeUpgradesStubs?: boolean;
  /**
   * transformContext resolves only after its store write landed. Default false: it resolves once the context is
   * assembled and the write follows behind (`flush()`, `close()`, `getObject`, `history`, `reconstructCall` wait
   * for it; a failed write is queued and reported by `lastError` like an outage).
   */
  durableTransform?: boolean;
  /**
   * Open an existing session only to look at it (the command-line tool): no reconciliation with the files, no
   * watcher, no write ever; the layout is the one it was recorded with. UNKNOWN_OBJECT if there is no such session.
   */
  readOnly?: boolean;
  /**
   * Open a session that does not exist yet as a fork of `sessionId`: it starts from the parent's state at the
   * parent's last model call whose transcript is a prefix of `messages` (sets, chat, cursor, aliases; the parent's
   * toolcall objects are shared), so the copied transcript is not ingested again. `messages`: the child's transcript
   * at start. Ignored when the session exists (opening a fork twice resumes it); an unknown parent, or none at a
   * prefix, gives a fresh session.
   */
  forkOf?: { sessionId: string; messages: HarnessMessage[] };
  /**
   * Open from a context commit (`ctx-…`): a new session id branches from it (its sets, chat and cursor as they were at
   * the commit; its first commit names it as parent); an existing session whose chain runs through it resumes; one off
   * its chain is INVALID_ARGUMENT. Not with `forkOf`.
   */
  fromCommit?: string;
  /** Provenance of this session's context commits: the harness and its version (default `scm/<version>`). */
  template?: string;
  /** Who runs it (default `user@host`). */
  principal?: string;
}

export type CommitType = 'delta' | 'compaction' | 'snapshot';
export type CommitTrigger = 'turn_boundary' | 'tool_call' | 'compaction' | 'session_end' | 'explicit';

/** A context commit (agent-context-commits.md). Immutable except `summary`. */
export interface ContextCommit {
  /** `ctx-` + 32 hex digits, derived from parent, artifact, createdAt, template and session. */
  id: string;
  parent: string | null;
  commitType: CommitType;
  /** A delta refers to the session's chat (items `[from, to)` as of tx `tx`); compaction/snapshot carry messages. */
  artifact:
    | { kind: 'chat_range'; chat: string; tx: number; from: number; to: number; lastFp: string | null }
    | { kind: 'messages'; messages: HarnessMessage[] };
  /** `pi-messages/1`. */
  format: string;
  template: string;
  principal: string | null;
  /** The filesystem id of the machine. */
  machine: string;
  sessionId: string;
  trigger: CommitTrigger;
  /** Messages in this commit's artifact (not the chain's). */
  messageCount: number;
  /** Approximate (chars / 4). */
  tokenCount: number;
  /** RFC 3339 (ms, UTC). */
  createdAt: string;
  summary: string | null;
}

export interface CheckpointOptions {
  summary?: string;
  /** Default 'explicit'. With nothing new, a non-explicit checkpoint makes no commit and returns the tip. */
  trigger?: CommitTrigger;
  /** A host compaction: the messages that replace the prefix (pi's compactionSummary). */
  compaction?: HarnessMessage[];
  /** RFC 3339; default now. */
  createdAt?: string;
  template?: string;
  principal?: string;
}

export interface Materialized {
  /** The `ctx-snapshot:` document holding it. */
  snapshot: string;
  commit: string;
  stop: string;
  format: string;
  /** format 'pi-messages' */
  messages?: HarnessMessage[];
  /** format 'pi-jsonl': a pi session file */
  jsonl?: string;
  messageCount: number;
  tokenCount: number;
  /** Commits of the chain that contributed. */
  commits: number;
  /** Served from the stored snapshot. */
  cached: boolean;
}

/** Context commit operations on a store. */
export declare class Commits {
  show(id: string): Promise<ContextCommit>;
  /** Newest first, back to the root (at most `depth`). */
  history(id: string, options?: { depth?: number }): Promise<ContextCommit[]>;
  /** The newest commit at or before `at` on the session's or the principal's timeline, or null. */
  resolve(request: { sessionId?: string; principal?: string; at: string | Date }): Promise<string | null>;
  updateMetadata(id: string, fields: { summary?: string | null }): Promise<void>;
  /** The tip of a session's chain (what its next commit names as parent; after /tree, the commit moved to), or null. */
  tip(sessionId: string): Promise<string | null>;
  /**
   * The conversation at commit `id`. stop: 'compaction' (default), 'root', or a ctx id (what came after it).
   * The same request later returns the stored snapshot (`cached: true`).
   */
  materialize(id: string, options?: { stop?: 'compaction' | 'root' | string; format?: 'pi-messages' | 'pi-jsonl' }): Promise<Materialized>;
}
/** The commit operations on `store`. */
export declare function commitsOf(store: Store): Commits;

/** Cache layout thresholds; sizes in chars/4 units (chars = UTF-16 code units) unless named `…Chars`. */
export interface CachePolicy {
  /** Epoch when live collapsible content exceeds this. Default 10000. */
  high?: number;
  /** An epoch keeps the newest tool calls that fit in this. Default 2000. */
  low?: number;
  /** Results and edit/write bodies shorter than this never collapse. Default 200. */
  minCollapseChars?: number;
  /** bash commands longer than this collapse. Default 300. */
  bashCollapseChars?: number;
  /** Fold the chat into a summary when its skeleton exceeds this after an epoch; 0 = never. Default 4000. */
  fold?: number;
  /** Budget of the engine's extractive fold summary. Default 4000. */
  summaryChars?: number;
  /** Provider tool-call ids become the call's alias (t12). Turn off when something outside the model matches results to calls by provider id; ids containing '|' (OpenAI Responses) are never rewritten. Default true. */
  rewriteCallIds?: boolean;
  /** Drop thinking of assistant messages older than the kept region at epochs. Default false: dropping it rewrites messages the provider has cached, which costs more than the thinking saves (docs/benchmarks.md, session 16). */
  dropThinking?: boolean;
  /** An unchanged re-read of a still-live read renders as a pointer. Default true. */
  dedupeReads?: boolean;
  /** Render a host compaction summary (pi's compactionSummary) as a fold at the host's cut. Default true. */
  honourHostCompaction?: boolean;
  /** Force an epoch when pending deactivations free more than this; 0 = never. Default 5000. */
  deactivateEpoch?: number;
  /** Working files: a file read, edited, written or activated by one of the newest this many tool calls keeps its view through collapses; a file being edited whose view is too large keeps the bodies of its edits among them (default 12; 0 = off). */
  workingCalls?: number;
  /** An edited or written file stays working while one of the newest this many tool calls edited or wrote it (default 32; a file edited from memory twice as long). */
  workingEditedCalls?: number;
  /** Units (chars/4) the working files' views may keep at a collapse, on top of `low`; at most a third of it goes to recent edits' bodies (default 6,000). */
  workingUnits?: number;
  /** Units the working copies may take: the current version of a file the agent is editing, shown once when its view no longer fits (default 16,000; 0 = off). */
  workingCopyUnits?: number;
  /** Once 20 reads are in and their median output is larger than this (units, chars/4), `high`, `low`, `workingUnits` and `workingCopyUnits` grow in proportion, up to 2×: the sizes follow a codebase's file sizes (default 1,000; 0 = never). */
  scaleAbove?: number;
}

/** Cache layout counters. */
export interface CacheStats {
  epochs: number;
  /** `CHANGED` notices given. */
  notices: number;
  folds: number;
  hostFolds: number;
  collapsedResults: number;
  collapsedArgs: number;
  dedupes: number;
  /** Working copies shown (a file's current text, once, while the agent edits it from memory). */
  copies: number;
  liveUnits: number;
  items: number;
  /** The factor the session's reads put on the sizes (1 until 20 reads are in and their median is over `scaleAbove`). */
  sizeScale: number;
}

/** Outcome of an agent operation. Failures the agent can act on are data (`ok: false`, `code`), never exceptions. */
/** A ref found in what a tool call would write (`checkToolCall`). */
export interface RefAsText {
  code: 'REF_AS_TEXT';
  /** The argument holding it. */
  field: 'content' | 'newText' | 'oldText';
  /** The ref as written: `[t12 · 40 lines]`, or the spec layout's `toolcall_ref id=…`. */
  token: string;
  /** What `activate` takes to show its text again (`t12`, `f3`, an id). */
  target: string;
  /** Why the call is not run, for the model. */
  message: string;
}

export interface OpResult {
  ok: boolean;
  /** The engine's account; names the object by id. */
  message: string;
  /**
   * The tool result the model reads, in the session layout's words: the same as `message` except for the cache
   * layout's set operations, which name the object as it was typed (`deactivated t12: …`). A host passes it through.
   */
  text: string;
  /** The object concerned, when known. */
  id?: string;
  /** Set when ok is false, e.g. FILE_NOT_FOUND, UNKNOWN_OBJECT, NOT_CONTENT_OBJECT. */
  code?: ErrorCode;
  /** What a successful set operation did. */
  outcome?: SetOutcome;
}

/** What a successful activate/deactivate/pin/unpin did (the words for it are the layout's). */
export type SetOutcome =
  | 'activated'
  | 'already_active'
  | 'deactivated'
  | 'deactivated_and_unpinned'
  | 'deactivated_still_pinned'
  | 'was_not_active'
  | 'pinned'
  | 'pinned_not_active'
  | 'already_pinned'
  | 'unpinned'
  | 'was_not_pinned';

/** One metadata pool entry as the user (not the model) sees it. */
export interface PoolEntry {
  id: string;
  type: 'file' | 'toolcall';
  /** Files: the path the agent sees. */
  path?: string;
  file_type?: string;
  char_count?: number;
  tool?: string;
  status?: 'ok' | 'fail';
  /** Files: present, stub (discovered, unread) or deleted. */
  state?: 'present' | 'stub' | 'deleted';
  /** Files held as metadata only (their bytes never reach the context): why. */
  content_omitted?: 'binary' | 'non_utf8' | 'too_large';
}

export interface SessionSnapshot {
  /** Every content object the session has seen (append-only). */
  sessionIndex: string[];
  metadataPool: PoolEntry[];
  activeSet: string[];
  pinnedSet: string[];
}

export interface SessionStats {
  turnCount: number;
  /** Harness messages consumed so far. */
  cursor: number;
  /** transformContext calls recorded (each one reconstructible). */
  modelCallCount: number;
  /** Writes queued and not yet flushed. */
  hasPending: boolean;
  /** Directories the watcher watches; null when the session does not watch. */
  watchedDirs: number | null;
  /** Of those, the ones polled (a network filesystem, or `watchPoll: 'always'`). */
  polledDirs: number;
}

/** A pi-ai message (user, assistant, toolResult, …); passed through as JSON. */
export type HarnessMessage = { role: string; [field: string]: unknown };

/** The async API over one agent session. */
export declare class ContextManager {
  private constructor();
  /** Create session `sessionId`, or resume it (sets restored, files reconciled with disk). */
  static open(options: ContextManagerOptions): Promise<ContextManager>;
  readonly sessionId: string;
  /** `session:<sessionId>` */
  readonly sessionObjectId: string;
  /** `chat:<sessionId>` */
  readonly chatObjectId: string;
  /** `system_prompt:<sessionId>` */
  readonly systemPromptObjectId: string;
  readonly workspaceRoot: string;
  readonly store: Store;
  readonly closed: boolean;
  /**
   * The last store write that failed (`code` STORE_UNAVAILABLE, STORE_TIMEOUT, …), or null once a write landed.
   * Meanwhile the session works from memory: transformContext, read, observeWrite and observeEdit still answer, and
   * their writes stay queued for the next call or `flush()` (`stats().hasPending`).
   */
  readonly lastError: (Error & { code: string }) | null;

  /**
   * Harness transcript in (only new messages are consumed; replaced arrays
   * after compaction or branch switches are detected), the context the model
   * sees out. Layout 'cache' (default): `[system?, header, fold summary?, …chat
   * with tool output inline, older output and edit/write bodies as refs
   * "[t12 · 340 lines]", "FILES +k" deltas at epochs…]`. Layout 'spec':
   * `[system?, METADATA_POOL, …chat with tool results as
   * "toolcall_ref id=… tool=… status=ok|fail"…, ACTIVE_CONTENT id=… blocks]`.
   * Resolves once the context is assembled; the store write follows behind
   * (`flush()`, `close()` and the store reads wait for it), or lands first when
   * the session was opened with `durableTransform: true`.
   * If the store is unreachable (STORE_UNAVAILABLE, STORE_TIMEOUT) it still
   * resolves with the context; the writes stay queued and `lastError` is set.
   * INVALID_MESSAGE for a malformed new message, including one JSON cannot
   * serialise (a cycle, a BigInt, nesting too deep, a throwing getter or
   * toJSON; the original error is its `cause`); nothing changes.
   * A fresh array each call; the message objects of the prefix that did not
   * change are the previous result's (only new messages cross from the addon):
   * treat them as read-only. Messages passed in are taken as immutable too:
   * while `messages` holds the objects already consumed, only the ones after
   * them are serialised; pass a new object to change a message.
   */
  transformContext(messages: HarnessMessage[]): Promise<HarnessMessage[]>;
  /**
   * Harness transcript in, nothing out: the new messages are ingested and
   * stored without a model call (no context assembled, none recorded). For
   * messages that would otherwise reach the engine only with the next
   * transformContext, e.g. a run's final answer before the user navigates the
   * session tree, forks or quits. Same cursor as transformContext: the next
   * call ingests none of them again, and observing twice is a no-op.
   * Resolves with how many messages were new, once stored; an unreachable
   * store leaves the write queued (`lastError`). INVALID_MESSAGE for a
   * malformed new message, as for transformContext (nothing changes).
   */
  observeMessages(messages: HarnessMessage[]): Promise<number>;
  /** The agent reads a file: indexed, added to the session, active. */
  read(path: string): Promise<OpResult>;
  /**
   * The agent read part of a file (a line range, an image): indexed and listed in the pool, not made active, so the
   * read's toolcall names a file object that exists.
   */
  observePartialRead(path: string): Promise<OpResult>;
  /**
   * The system prompt the model gets, when the harness sends it itself (`emitSystemMessage: false`): stored as a new
   * version of `system_prompt:<sessionId>` when it changed, recorded with the next model call (reconstructCall). Set
   * it before the transformContext of the call it belongs to.
   */
  setSystemPrompt(prompt: string): void;
  /**
   * `target`: object id, a unique id prefix (≥ 6 chars), a harness tool-call
   * id, or a file path. Any file or toolcall id in the store works (another
   * session's, e.g. a `search` hit): it joins this session's index and pool
   * first. The set change is immediate; the promise resolves once
   * it is stored (a store failure rejects with a coded error and the write
   * stays queued for the next flush).
   */
  activate(target: string): Promise<OpResult>;
  deactivate(target: string): Promise<OpResult>;
  /**
   * Exempt from auto-collapse until unpinned. Layout 'spec' (SSOT §3.1): only
   * that — it does not activate, and an explicit deactivate still hides the
   * object and keeps the pin. Layout 'cache': also shows the object again
   * (activate), and deactivate unpins.
   */
  pin(target: string): Promise<OpResult>;
  unpin(target: string): Promise<OpResult>;
  /** Synchronous form of activate/deactivate/pin/unpin: the change is immediate, its write queued until `flush()`. */
  setOpSync(op: 'activate' | 'deactivate' | 'pin' | 'unpin', target: string): OpResult;
  /**
   * Before a tool call runs: whether it would write a ref this session showed into a file (the model copied
   * `[t12 · 40 lines]` into a write's `content` or an edit's `newText`/`oldText` in place of the text it stands
   * for). The ref, or null when the call may run; a host refuses the call with `message` (the pi package does).
   * A file that holds the ref's text already, and a ref-like text naming no call or file of this session (or
   * with another line count), are let through.
   */
  checkToolCall(toolName: string, args: unknown): RefAsText | null;
  /** The harness wrote / edited a file for the agent: new version, active. */
  observeWrite(path: string): Promise<OpResult>;
  observeEdit(path: string): Promise<OpResult>;
  /** Tool output listing paths relative to `cwd` (default the workspace root) → discovery stubs (pool only, never active). */
  observeLs(output: string, cwd?: string): Promise<OpResult>;
  observeFind(output: string, cwd?: string): Promise<OpResult>;
  observeGrep(output: string, cwd?: string): Promise<OpResult>;
  /** Files under the workspace named in a bash command or its output → discovery stubs; a file the command only prints (`cat F`, `sed -n 'A,Bp' F`) is indexed and tracked, into the pool. */
  observeBash(command: string, output?: string): Promise<OpResult>;
  /** The sets, synchronously (in memory). */
  snapshot(): SessionSnapshot;
  stats(): SessionStats;
  /** Cache layout counters (zeros in the spec layout). */
  cacheStats(): CacheStats;
  /** Agent path → source, object id, host path (this session's resolver). */
  resolve(agentPath: string): ResolvedPath;
  /** Latest version of any object, or null. */
  getObject<D = ObjectDocument>(id: string): Promise<D | null>;
  /** Every version, oldest first. */
  history<D = ObjectDocument>(id: string): Promise<Version<D>[]>;
  /** The version visible at transaction `txId`, or null. */
  getObjectAsOf<D = ObjectDocument>(id: string, txId: number): Promise<D | null>;
  /** Full-text search over every session's objects (latest versions of files and toolcalls), best first; metadata hits only. */
  search(query: string, options?: SearchOptions): Promise<SearchResult>;
  /**
   * Activate what an object refers to — a note's links, the files a tool call read or found (`file_refs`: a grep's
   * hits, a bash command's files), a chat's tool calls in chat order (`chat:<session id>`) — all or a selection;
   * `{ metadata: true }` lists them instead. INVALID_ARGUMENT for a bad selection.
   */
  expand(target: string, select?: ExpandSelect): Promise<ExpandResult>;
  /** Who links to an object (latest versions of notes). */
  backlinks(target: string): Promise<BacklinksResult>;
  /** Every version of an object (id, prefix, call id, path; any object in the store), oldest first. UNKNOWN_OBJECT if none. */
  versions(target: string): Promise<VersionList>;
  /** One version, shown to the caller only (never added to the context). UNKNOWN_OBJECT for a missing version. */
  showVersion<D = ObjectDocument>(target: string, version: VersionRef): Promise<ShownVersion<D>>;
  /** Unified diff between two versions (`to` defaults to `'latest'`). */
  diff(target: string, from: VersionRef, to?: VersionRef): Promise<VersionDiff>;
  /**
   * Rebuild exactly what model call `n` (0-based, one per transformContext) received, from stored versions: its
   * context, headed by the session's system prompt of that call as a `system` message, also when the harness sent
   * that prompt itself (`emitSystemMessage: false` with setSystemPrompt). INVALID_ARGUMENT for an unknown call.
   */
  reconstructCall(n: number): Promise<HarnessMessage[]>;
  /** Commit the conversation since the last commit (a context commit); null when there is none and nothing new. */
  checkpoint(options?: CheckpointOptions): Promise<ContextCommit | null>;
  /**
   * The host moved to another branch of this session (pi's /tree; `messages`: the branch as the context hook would
   * get it): commits what is new, then moves the session to the commit the branch maps to, so the model sees exactly
   * that branch. A branch that continues the session changes nothing and commits nothing (`moved` false; also when
   * nothing maps); `commit` null when it moved
   * to the root (a branch before the session's first commit). A session opened by a fork or `fromCommit`, moved back
   * to where it was seeded, is the session as it was forked (its pins kept; `commit` the one it was opened from, null
   * for a fork of a session).
   */
  rewind(messages: HarnessMessage[], options?: { trigger?: CommitTrigger }): Promise<{ moved: boolean; commit: ContextCommit | null }>;
  /** The tip of this session's commit chain, or null. */
  readonly commitTip: string | null;
  /** Commit operations on this session's store. */
  readonly commits: Commits;
  /** 'cache' or 'spec'. */
  readonly layout: 'cache' | 'spec';
  /** Every object of the session, in the order it became known, with the id the model sees. */
  objects(): ObjectLine[];
  /** A full object id from an alias (`t12`, `f3`), a full id or a unique prefix; UNKNOWN_OBJECT otherwise. */
  resolveId(target: string): string;
  /** Model calls `from..to` (default all), each rebuilt from the store; `context: true` adds what the model was sent. */
  callSummaries(from?: number, to?: number, options?: { context?: boolean }): Promise<CallSummary[]>;
  /** The context commit model call `n` followed (the session's tip as of its basis tx); null before the first. */
  callCommit(n: number): Promise<string | null>;
  /** Write everything queued in one transaction; null when nothing was queued. */
  flush(): Promise<TxReceipt | null>;
  /** Flush, stop watching, release the session. Idempotent; afterwards every call fails with SESSION_CLOSED. */
  close(): Promise<void>;
}

export interface SelfContextManagerOptions {
  sessionId: string;
  /** Default process.cwd(). */
  workspaceRoot?: string;
  systemPrompt?: string;
  /** Use this XTDB v1 node instead of the embedded store at the default location. */
  xtdbBaseUrl?: string;
  /** Track indexed files (as the original class did). Default true. */
  watch?: boolean;
}

export interface SelfContextSnapshot {
  sessionIndex: Set<string>;
  metadataPool: PoolEntry[];
  activeSet: Set<string>;
  pinnedSet: Set<string>;
}

/**
 * Drop-in replacement for the original TypeScript class: same constructor,
 * properties and method shapes. Every method works before `load()`: async
 * methods load on first use; the synchronous ones open the session on the
 * spot and queue their write, which is flushed in the background at once
 * (and by the next async call or `close()` at the latest).
 */
export declare class SelfContextManager {
  constructor(options: SelfContextManagerOptions);
  readonly sessionId: string;
  readonly workspaceRoot: string;
  /** `session:<sessionId>` */
  readonly sessionObjectId: string;
  /** `chat:<sessionId>` */
  readonly chatObjectId: string;
  /** `system_prompt:<sessionId>` */
  readonly systemPromptObjectId: string;
  /** The error of the last background write, or null. */
  readonly lastFlushError: ScmError | null;
  /** The underlying ContextManager (null until loaded). */
  readonly contextManager: ContextManager | null;
  load(): Promise<void>;
  transformContext(messages: HarnessMessage[]): Promise<HarnessMessage[]>;
  /** ContextManager.observeMessages: store new messages without a model call. */
  observeMessages(messages: HarnessMessage[]): Promise<number>;
  read(path: string): Promise<OpResult>;
  activate(id: string): OpResult;
  /** Hides the object (its metadata stays in the pool); a pin stays. */
  deactivate(id: string): OpResult;
  /** Exempts the object from auto-collapse until unpinned; does not activate it (SSOT §3.1). */
  pin(id: string): OpResult;
  unpin(id: string): OpResult;
  /** Before a tool call runs: the ref this session showed that it would write into a file, or null (see ContextManager). */
  checkToolCall(toolName: string, args: unknown): RefAsText | null;
  /** Writes the file (parent directories created), then indexes it active. */
  wrappedWrite(path: string, content: string | Uint8Array): Promise<void>;
  wrappedEdit(path: string): Promise<void>;
  wrappedLs(output: string): Promise<void>;
  wrappedFind(output: string): Promise<void>;
  wrappedGrep(output: string): Promise<void>;
  /**
   * `bash`: the command (optionally followed by its output on the next lines: the listing of an `ls <dir>` resolves
   * against that directory); `ls` / `find` / `grep`: their output. Other tools are ignored.
   */
  observeToolExecutionEnd(toolName: string, commandOrOutput: string): Promise<void>;
  getXtEntity<D = ObjectDocument>(id: string): Promise<D | null>;
  getSnapshot(): SelfContextSnapshot;
  close(): Promise<void>;
}

/** A version: its number (1 = oldest), `'tx:<txId>'`, `'latest'`, an RFC 3339 time (the version visible then), or a hash prefix (7+ hex digits of its content or object hash). */
export type VersionRef = number | string;

/** One entry of `versions()`: where a version sits and what it holds, without its content. */
export interface VersionInfo {
  version: number;
  txId: number;
  txTime: string;
  contentHash: string | null;
  metadataHash: string | null;
  objectHash: string | null;
  /** Content length in characters (UTF-16 units). */
  size: number;
  /** A file version's state: 'present' | 'stub' | 'deleted'. */
  state: string | null;
}

export interface VersionList {
  id: string;
  versions: VersionInfo[];
  /** One line per version, as the agent sees it. */
  text: string;
}

export interface ShownVersion<D = ObjectDocument> extends VersionInfo {
  id: string;
  /** How many versions the object has. */
  of: number;
  doc: D;
  /** A header line, then the version's content. */
  text: string;
}

export interface VersionDiff {
  id: string;
  from: VersionInfo;
  to: VersionInfo;
  /** Unified diff of the two versions' text; empty when equal. */
  diff: string;
  text: string;
}

export interface SearchOptions {
  /** Object types to keep; all searchable types when absent. */
  types?: Array<'file' | 'toolcall'>;
  /** Sessions whose objects to keep (their toolcalls and their session index). */
  sessions?: string[];
  /** RFC 3339: objects whose latest version was written at or after it. */
  since?: string;
  /** 1..200, default 10. */
  limit?: number;
}

export interface SearchHit {
  id: string;
  type: 'file' | 'toolcall';
  /** A file's canonical path. */
  path: string | null;
  /** A toolcall's tool. */
  tool: string | null;
  /** The session a toolcall belongs to (files belong to no one session). */
  session: string | null;
  /** Transaction time of the latest version. */
  txTime: string;
  /** Matching text, terms in [ ]. */
  snippet: string;
  /** Higher is better; comparable within one result only. */
  score: number;
}

/**
 * A note (any `.md`/`.markdown` file) is stored with its structure: `frontmatter` (YAML subset), `tags`, `links`
 * and `link_ids` (the distinct target ids). See docs/design.md §9 "Notes".
 */
export interface NoteLink {
  /** Target object id (a file's id is computed from its path, so it exists before the file does). */
  target: string;
  /** Canonical path of a file target; null for an `[[<object id>]]` link. */
  path: string | null;
  /** The target as written. */
  text: string;
  kind: 'wikilink' | 'embed' | 'markdown';
  alias?: string;
  heading?: string;
  /**
   * The version the link is pinned to, as written after `@` (`[[b@v3]]`, `[[b@<7+ hex digits of a hash>]]`,
   * `[[b@tx:812]]`, `[[b@2026-11-25T10:00:00Z]]`); absent: the latest. `expand` shows that version.
   */
  pin?: string;
  /** `content` or `frontmatter.<key>`. */
  field: string;
  /** 1-based line in the file. */
  line: number;
}

export interface ExpandSelect {
  /** Target types; `note` = a Markdown file. */
  types?: Array<'file' | 'toolcall' | 'note'>;
  /** `*`/`?` pattern matched against the end of the target's path (`*.md`, `notes/*`). */
  path?: string;
  /** 1-based positions in the object's link list (the order of its link lines; a chat's tool calls in chat order). */
  positions?: number[];
  /** List the selected targets (outcome `listed`, message `position N: <metadata>`) and activate nothing. */
  metadata?: boolean;
}

export interface ExpandItem {
  id: string;
  path: string | null;
  /** A pinned link: `version shown` (never activated) or `no such version`. */
  outcome: 'activated' | 'already active' | 'not found' | 'failed' | 'version shown' | 'no such version' | 'listed';
  message: string;
  /** The pin of a pinned link. */
  pin?: string;
  /** A pinned link's version, as `showVersion(...).text` renders it (also at the end of `text`). */
  version?: string;
}

export interface ExpandResult {
  id: string;
  items: ExpandItem[];
  text: string;
}

export interface Backlink {
  id: string;
  type: string;
  path: string | null;
  /** Where the links to the target sit in it. */
  at: Array<{ field: string; line: number }>;
}

export interface BacklinksResult {
  id: string;
  backlinks: Backlink[];
  text: string;
}

export interface SearchResult {
  hits: SearchHit[];
  /** One line per hit, as the agent sees it. */
  text: string;
}
