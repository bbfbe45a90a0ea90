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
  content_omitted: 'binary' | 'non_utf8' | 'too_large' | null;
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
  /** Every version, oldest first. */
  history<D = ObjectDocument>(id: string): Promise<Version<D>[]>;
  /** Newest visible transaction id (null for an empty store). */
  latestTxId(): Promise<number | null>;
  /** Transactions this handle submitted (committed or not). */
  submittedTxCount(): number;
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
