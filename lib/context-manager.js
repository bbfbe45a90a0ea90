'use strict';
// ContextManager: the async API over one agent session (the core Session).

const path = require('node:path');
const { native, NATIVE } = require('./native.js');
const { wrap, wrapAsync, codedError, messagesJson, serialised } = require('./errors.js');
const { Store } = require('./store.js');
const { storeOptionsFor } = require('./defaults.js');
const { Commits } = require('./commits.js');
const os = require('node:os');

const STORE = Symbol('scm.store');
// Provenance of this session's context commits: { template, principal }.
const PROVENANCE = Symbol('scm.provenance');
// The last context returned: { seq, messages } (see transformContext).
const OUTPUT = Symbol('scm.output');
// What the engine consumed last: { consumed, first, last } objects of that array (see #window).
const CONSUMED = Symbol('scm.consumed');
// Ingest calls started (an async one only records CONSUMED if no other started meanwhile).
const STARTED = Symbol('scm.started');
// Message object → the engine's fingerprint of it, for the messages it consumed (see #whole).
const FPS = Symbol('scm.fps');
const STAND_IN = 'scm:fp';
// Strings at least this long cross beside the JSON (see windowJson).
const LIFT_CHARS = 2048;
const LIFTED = 'scm:lifted';

/** What the engine checks of the array's first message beside a window: its role, timestamp and toolCallId. */
function headOf(m) {
  return m !== null && typeof m === 'object' ? { role: m.role, timestamp: m.timestamp, toolCallId: m.toolCallId } : m;
}

/**
 * `messages` as JSON with every string of LIFT_CHARS+ chars lifted out beside it: in the JSON it stands as
 * `{"scm:lifted": k}` and `texts[k]` holds it. A tool output, a written file's content, an edit's text then cross as a
 * string (a napi conversion is a copy) instead of being escaped by JSON.stringify and unescaped by the addon
 * (≈ 0.3 ms per 100 KiB). Plain JSON (`texts` undefined) when nothing is that long, or when an object of the window
 * already has a 'scm:lifted' key (the addon could not tell it from a lifted string).
 */
function windowJson(messages) {
  const texts = [];
  let clash = false;
  const json = messagesJson(() => JSON.stringify(messages, (_key, value) => {
    if (typeof value === 'string') {
      if (value.length < LIFT_CHARS) return value;
      texts.push(value);
      return { [LIFTED]: texts.length - 1 };
    }
    if (value !== null && typeof value === 'object' && Object.hasOwn(value, LIFTED)) clash = true;
    return value;
  }));
  if (clash) return { json: messagesJson(() => JSON.stringify(messages)), texts: undefined };
  return { json, texts: texts.length ? texts : undefined };
}

function sessionOptions(options) {
  if (options == null || typeof options !== 'object') {
    throw codedError('INVALID_ARGUMENT', 'ContextManager.open: options { sessionId, … } required');
  }
  const { sessionId, workspaceRoot, systemPrompt, mounts, policy, watch } = options;
  if (typeof sessionId !== 'string' || sessionId.trim() === '') {
    throw codedError('INVALID_ARGUMENT', 'ContextManager.open: sessionId must be a non-blank string');
  }
  const root = path.resolve(workspaceRoot ?? process.cwd());
  // Which values are allowed, and the defaults of every unset option, are the core's (HandleOptions::new).
  const layout = options.layout ?? undefined;
  if (layout !== undefined && typeof layout !== 'string') {
    throw codedError('INVALID_ARGUMENT', `ContextManager.open: layout must be 'cache' or 'spec', got ${typeof layout}`);
  }
  return {
    root,
    provenance: provenance(options),
    store: storeOptionsFor(options.store, root),
    session: {
      sessionId,
      workspaceRoot: root,
      systemPrompt: systemPrompt ?? undefined,
      mounts: mounts ?? undefined,
      defaultFilesystemId: options.defaultFilesystemId ?? undefined,
      defaultIsLocal: options.defaultIsLocal ?? undefined,
      policy: policy ?? undefined,
      layout,
      cachePolicy: options.cachePolicy ?? undefined,
      watch: watch ?? undefined,
      watchPoll: options.watchPoll ?? undefined,
      watchPollMs: options.watchPollMs ?? undefined,
      emitSystemMessage: options.emitSystemMessage ?? undefined,
      maxContentBytes: options.maxContentBytes ?? undefined,
      secretPatterns: options.secretPatterns ?? undefined,
      readSecrets: options.readSecrets ?? envFlag('SCM_READ_SECRETS'),
      readOutsideWorkspace: options.readOutsideWorkspace ?? envFlag('SCM_READ_OUTSIDE_WORKSPACE'),
      resumeUpgradesStubs: options.resumeUpgradesStubs ?? undefined,
      noteFolders: noteFolders(options.noteFolders),
      forkOf: forkOf(options.forkOf),
      fromCommit: options.fromCommit ?? undefined,
      // Unset (false): transformContext returns once the context is assembled; its store write follows behind the
      // session's write gate (flush/close/reads of the store wait for it).
      durableTransform: options.durableTransform ?? undefined,
      readOnly: options.readOnly ?? undefined,
    },
  };
}

/** `noteFolders`: an array of non-blank path strings (relative to the workspace root, or absolute). */
function noteFolders(v) {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || v.some((p) => typeof p !== 'string' || p.trim() === '')) {
    throw codedError('INVALID_ARGUMENT', `ContextManager.open: noteFolders must be an array of non-blank paths, got ${JSON.stringify(v)}`);
  }
  return v;
}

/** Who and what makes this session's commits: `template` (harness/version), `principal` (default user@host). */
function provenance(options) {
  let principal = options.principal;
  if (principal === undefined) {
    try {
      principal = `${os.userInfo().username}@${os.hostname()}`;
    } catch {
      principal = os.hostname();
    }
  }
  return { template: options.template ?? undefined, principal: principal ?? undefined };
}

/** An opt-in flag from the environment: unset/empty → undefined (the engine's default, off). */
function envFlag(name) {
  const v = process.env[name];
  if (v == null || v === '') return undefined;
  return !/^(0|false|no|off)$/i.test(v);
}

/** `forkOf: { sessionId, messages }` → the native form (messages as JSON). */
function forkOf(f) {
  if (f == null) return undefined;
  if (typeof f !== 'object' || typeof f.sessionId !== 'string' || f.sessionId === '' || !Array.isArray(f.messages ?? [])) {
    throw codedError('INVALID_ARGUMENT', 'ContextManager.open: forkOf must be { sessionId: string, messages: array }');
  }
  return { sessionId: f.sessionId, messagesJson: messagesJson(() => JSON.stringify(f.messages ?? [])) };
}

/** `{ ok, message, text, id?, code?, outcome? }` without undefined keys. */
function opResult(r) {
  const out = { ok: r.ok, message: r.message, text: r.text };
  if (r.id != null) out.id = r.id;
  if (r.code != null) out.code = r.code;
  if (r.outcome != null) out.outcome = r.outcome;
  return out;
}

const parse = (json) => (json == null ? null : JSON.parse(json));

class ContextManager {
  /**
   * Create or resume session `sessionId`. Default store: the embedded store
   * at `<workspaceRoot>/.scm/store.sqlite` (`SCM_STORE_PATH` overrides).
   */
  static async open(options) {
    const o = sessionOptions(options);
    const store = new Store(await wrapAsync(() => native.openStore(o.store)));
    const handle = await wrapAsync(() => native.openSession(store[NATIVE], o.session));
    return new ContextManager(handle, store, o.root, o.provenance);
  }

  /** @internal Synchronous open, for SelfContextManager's sync methods. */
  static openSync(options) {
    const o = sessionOptions(options);
    const store = new Store(wrap(() => native.openStoreSync(o.store)));
    const handle = wrap(() => native.openSessionSync(store[NATIVE], o.session));
    return new ContextManager(handle, store, o.root, o.provenance);
  }

  /** @internal Use `ContextManager.open`. */
  constructor(handle, store, workspaceRoot, provenance = {}) {
    if (!handle || !(store instanceof Store)) {
      throw codedError('INVALID_ARGUMENT', 'use ContextManager.open({ sessionId, … })');
    }
    this[NATIVE] = handle;
    this[STORE] = store;
    this[OUTPUT] = null;
    this[CONSUMED] = null;
    this[STARTED] = 0;
    this[FPS] = new WeakMap();
    this[PROVENANCE] = provenance;
    Object.defineProperty(this, 'workspaceRoot', { value: workspaceRoot, enumerable: true });
  }

  get sessionId() {
    return this[NATIVE].sessionId;
  }
  /** `session:<sessionId>` */
  get sessionObjectId() {
    return this[NATIVE].sessionObjectId;
  }
  /** `chat:<sessionId>` */
  get chatObjectId() {
    return this[NATIVE].chatObjectId;
  }
  /** `system_prompt:<sessionId>` */
  get systemPromptObjectId() {
    return this[NATIVE].systemPromptObjectId;
  }
  /** The store this session reads and writes. */
  get store() {
    return this[STORE];
  }
  get closed() {
    return this[NATIVE].closed;
  }
  /**
   * The last store write that failed (a coded Error), or null once a write landed. Meanwhile the session works from
   * memory: transformContext, read, observeWrite and observeEdit still answer, and their writes stay queued for the
   * next call or `flush()` (`stats().hasPending`).
   */
  get lastError() {
    const e = this[NATIVE].writeError;
    return e ? codedError(e.code, e.message) : null;
  }

  /**
   * Harness messages in, the messages the model sees out. Layout 'cache' (default): system, a header, the fold
   * summary if any, then the chat with tool output inline, older output collapsed to refs like `[t12 · 340 lines]`.
   * Layout 'spec': system, METADATA_POOL, chat with toolcall_refs, ACTIVE_CONTENT.
   * The store write goes behind (`flush()`, `close()` and the store reads wait for it) unless the session was
   * opened with `durableTransform: true`; while `lastError` is set it is awaited, so `lastError` is current.
   * Returns a fresh array each call; the message objects it shares with the previous call's result (its unchanged
   * prefix, and messages an epoch left as they were) are that result's (only new messages cross from the addon):
   * treat them as read-only.
   * Likewise, messages once passed in are taken as immutable: while `messages` still holds the consumed ones (same
   * first and last object), only the messages after them are serialised. Replace an edited message with a new object.
   * A new array (as pi's compaction and /tree give) is read whole; the message objects the engine consumed before go
   * in it by their fingerprint.
   */
  async transformContext(messages) {
    if (!Array.isArray(messages)) throw codedError('INVALID_ARGUMENT', 'transformContext: messages must be an array');
    const base = this[OUTPUT];
    const have = base?.seq;
    const started = ++this[STARTED];
    // The harness resends the whole transcript; serialise only what the engine has not consumed (it answers null if
    // the window does not continue what it consumed: then the whole array goes).
    const w = this.#window(messages);
    const native = this[NATIVE];
    let d = null;
    if (w) {
      // The core's rule (write-behind, no write error outstanding): assemble on this thread (≈ 0.1 ms; the async
      // form's thread hops cost more at the tail) and let the write follow. Otherwise await the write, so lastError
      // is current.
      d = native.canTransformNow
          ? wrap(() => native.transformContextTailNow(messages.length, w.offset, w.json, have, w.texts, w.first))
          : await wrapAsync(() => native.transformContextTail(messages.length, w.offset, w.json, have, w.texts, w.first));
    }
    d ??= await this.#whole(messages, have);
    this.#learn(messages, d);
    this.#consumedAll(messages, started);
    return this.#output(base, d);
  }

  /**
   * The whole array (the first call, or a replaced array after a compaction or a branch switch). Messages the engine
   * consumed before (known by object) go as stand-ins `{ "scm:fp": fingerprint }`: neither serialised nor hashed
   * again. The addon answers null if a stand-in would count as new; then every message goes.
   */
  async #whole(messages, have) {
    const native = this[NATIVE];
    if (typeof native.transformContextWithStandIns === 'function') {
      const fps = this[FPS];
      let standIns = 0;
      let clash = false;
      const sent = messagesJson(() =>
        messages.map((m) => {
          if (m === null || typeof m !== 'object') return m;
          if (Object.hasOwn(m, STAND_IN)) clash = true;
          const fp = fps.get(m);
          if (fp === undefined) return m;
          standIns++;
          return { [STAND_IN]: fp };
        }),
      );
      if (standIns > 0 && !clash) {
        // Plain JSON: the few real messages rarely carry long strings here, and a replacer over the whole array
        // costs more than it saves.
        const json = messagesJson(() => JSON.stringify(sent));
        const d = await wrapAsync(() => native.transformContextWithStandIns(json, have));
        if (d != null) return d;
      }
    }
    const json = messagesJson(() => JSON.stringify(messages));
    return wrapAsync(() => native.transformContext(json, have));
  }

  /** Remembers the fingerprints of the messages a call consumed (indexes into the array it was given). */
  #learn(messages, d) {
    const fps = this[FPS];
    const at = d.consumedAt ?? [];
    for (let k = 0; k < at.length; k++) {
      const m = messages[at[k]];
      if (m !== null && typeof m === 'object') fps.set(m, d.consumedFps[k]);
    }
  }

  /**
   * The part of `messages` the engine has not consumed, as `{ offset, json }`: only the new messages while the array
   * still holds the objects the engine consumed (same first and last object where they were), else from the last
   * consumed message on, which the engine checks by fingerprint, with the first message's head (`first`: role,
   * timestamp, toolCallId — pi hands over copies, and a compaction of the first message alone keeps the length and
   * the last message); long strings beside it (`texts`, see windowJson). null: the whole array must go.
   */
  #window(messages) {
    const c = this[NATIVE].consumed;
    if (c === 0 || messages.length < c) return null;
    const k = this[CONSUMED];
    const offset = k && k.consumed === c && messages[0] === k.first && messages[c - 1] === k.last ? c : c - 1;
    const window = messages.slice(offset);
    const first = offset === c ? undefined : messagesJson(() => JSON.stringify(headOf(messages[0])));
    if (this[NATIVE].takesLiftedStrings !== true) return { offset, json: messagesJson(() => JSON.stringify(window)), texts: undefined, first };
    return { offset, ...windowJson(window), first };
  }

  /** After an ingest of all of `messages`: remember their objects, unless another ingest started meanwhile. */
  #consumedAll(messages, started) {
    const ours = started === this[STARTED] && this[NATIVE].consumed === messages.length && messages.length > 0;
    this[CONSUMED] = ours ? { consumed: messages.length, first: messages[0], last: messages[messages.length - 1] } : null;
  }

  /**
   * The context from the addon's delta: the first `keep` messages of the output we hold, then per `reuse` either one
   * of that output's messages (an identical one, further along after an epoch) or the next of `append`.
   */
  #output(base, d) {
    const append = JSON.parse(d.append);
    let out = append;
    // keep > 0 and reuse only refer to `base` when the addon's previous output is it (the `have` we sent).
    if (d.reuse != null) {
      out = base.messages.slice(0, d.keep);
      let next = 0;
      for (const from of d.reuse) out.push(from >= 0 ? base.messages[from] : append[next++]);
    } else if (d.keep > 0) {
      out = base.messages.slice(0, d.keep);
      for (const m of append) out.push(m);
    }
    // Our own copy of the array: the caller may edit the one it gets. The latest resolved output wins; if
    // concurrent calls resolve out of order, the next call's `have` mismatches and it gets everything.
    this[OUTPUT] = { seq: d.seq, messages: out.slice() };
    return out;
  }

  /**
   * Harness messages in, nothing out: the new ones are ingested and stored without a model call (no context is
   * assembled or recorded). For messages that would otherwise reach the engine only with the next model call, e.g.
   * the final answer of a run before the user navigates, forks or quits. The same cursor as transformContext, so the
   * next transformContext ingests none of them again. Resolves with how many were new, once stored (an unreachable
   * store leaves the write queued: `lastError`).
   */
  async observeMessages(messages) {
    if (!Array.isArray(messages)) throw codedError('INVALID_ARGUMENT', 'observeMessages: messages must be an array');
    const started = ++this[STARTED];
    const w = this.#window(messages);
    let n = null;
    if (w) n = await wrapAsync(() => this[NATIVE].observeMessagesTail(messages.length, w.offset, w.json, w.texts, w.first));
    if (n == null) {
      const json = messagesJson(() => JSON.stringify(messages));
      n = await wrapAsync(() => this[NATIVE].observeMessages(json));
    }
    this.#consumedAll(messages, started);
    return n;
  }

  /** The agent reads a file: indexed, added to the session and active. */
  async read(path) {
    return opResult(await wrapAsync(() => this[NATIVE].read(path)));
  }

  /** The agent read part of a file (a line range, an image): indexed and listed, not active. */
  async observePartialRead(path) {
    return opResult(await wrapAsync(() => this[NATIVE].observePartialRead(path)));
  }

  /**
   * The system prompt the model gets, when the harness sends it itself (emitSystemMessage: false): a new version of
   * `system_prompt:<sessionId>` when it changed, recorded with the next model call.
   */
  setSystemPrompt(prompt) {
    if (typeof prompt !== 'string') throw codedError('INVALID_ARGUMENT', 'setSystemPrompt: prompt must be a string');
    wrap(() => this[NATIVE].setSystemPrompt(prompt));
  }

  /** Load an object's content into context (id, unique id prefix, harness tool-call id or path; any id in the store). */
  activate(target) {
    return this.#setOp('activate', target);
  }
  /** Collapse an object to its metadata line. */
  deactivate(target) {
    return this.#setOp('deactivate', target);
  }
  /** Exempt from auto-collapse until unpinned (layout 'spec': only that; 'cache': also activates). See index.d.ts. */
  pin(target) {
    return this.#setOp('pin', target);
  }
  unpin(target) {
    return this.#setOp('unpin', target);
  }

  // Any object of the store: one this session has not seen joins its index and pool first (issue 12).
  async #setOp(op, target) {
    const r = await wrapAsync(() => this[NATIVE].setOpAny(op, target));
    await this.flush();
    return opResult(r);
  }

  /** Synchronous activate/deactivate/pin/unpin: the change is immediate, its write queued until `flush()`. */
  setOpSync(op, target) {
    return opResult(wrap(() => this[NATIVE].setOp(String(op), target)));
  }

  /**
   * Before a tool call runs: the ref this session showed that it would write into a file, or null when it may run
   * (`{ code: 'REF_AS_TEXT', field, token, target, message }`; a host refuses the call with `message`).
   */
  checkToolCall(toolName, args) {
    const json = serialised(() => JSON.stringify(args ?? {}), 'INVALID_ARGUMENT', 'checkToolCall: arguments');
    return wrap(() => this[NATIVE].checkToolCall(String(toolName), json ?? '{}')) ?? null;
  }

  /** A file the agent wrote (the harness did the write): new version, active. */
  async observeWrite(path) {
    return opResult(await wrapAsync(() => this[NATIVE].observeWrite(path)));
  }
  /** A file the agent edited: new version, active. */
  async observeEdit(path) {
    return opResult(await wrapAsync(() => this[NATIVE].observeEdit(path)));
  }
  /** ls output (paths relative to `cwd`, default the workspace root) → discovery stubs. */
  observeLs(output, cwd) {
    return this.#discover('ls', output, cwd);
  }
  observeFind(output, cwd) {
    return this.#discover('find', output, cwd);
  }
  observeGrep(output, cwd) {
    return this.#discover('grep', output, cwd);
  }
  async #discover(tool, output, cwd) {
    return opResult(await wrapAsync(() => this[NATIVE].observeDiscovery(tool, output, cwd ?? undefined)));
  }
  /** Files under the workspace named in a bash command or its output → discovery stubs; a file the command only prints (`cat F`, `sed -n 'A,Bp' F`) is indexed and tracked, into the pool. */
  async observeBash(command, output) {
    return opResult(await wrapAsync(() => this[NATIVE].observeBash(command, output ?? undefined)));
  }

  /** The session's sets; pool entries carry their metadata. */
  snapshot() {
    const s = JSON.parse(wrap(() => this[NATIVE].snapshotJson()));
    return {
      sessionIndex: s.session_index,
      metadataPool: s.metadata_pool,
      activeSet: s.active_set,
      pinnedSet: s.pinned_set,
    };
  }

  /** Cache layout counters: `{ epochs, notices, folds, hostFolds, collapsedResults, collapsedArgs, dedupes, copies, liveUnits, items, sizeScale }`. */
  cacheStats() {
    const s = JSON.parse(wrap(() => this[NATIVE].cacheStatsJson()));
    return {
      epochs: s.epochs,
      notices: s.notices,
      folds: s.folds,
      hostFolds: s.host_folds,
      collapsedResults: s.collapsed_results,
      collapsedArgs: s.collapsed_args,
      dedupes: s.dedupes,
      copies: s.copies,
      liveUnits: s.live_units,
      items: s.items,
      sizeScale: s.size_scale_permille / 1000,
    };
  }

  /** Counters: turns, consumed harness messages, recorded model calls, queued writes, watched and polled directories. */
  stats() {
    const s = wrap(() => this[NATIVE].stats());
    return { ...s, watchedDirs: s.watchedDirs ?? null };
  }

  /** Agent path → source, object id and host path, through this session's resolver. */
  resolve(agentPath) {
    const r = wrap(() => this[NATIVE].resolve(agentPath));
    r.hostPath ??= null;
    return r;
  }

  /** Latest version of any object, or null. */
  async getObject(id) {
    return parse(await wrapAsync(() => this[NATIVE].getObject(id)));
  }
  /** Every version, oldest first: `[{ txId, txTime, doc }]`. */
  async history(id) {
    return parse(await wrapAsync(() => this[NATIVE].history(id)));
  }
  /** The version visible at transaction `txId`, or null. */
  async getObjectAsOf(id, txId) {
    return parse(await wrapAsync(() => this[NATIVE].getObjectAsOf(id, txId)));
  }
  /**
   * Full-text search over every session's objects (latest versions of files and toolcalls), best first:
   * `{ hits: [{ id, type, path, tool, session, txTime, snippet, score }], text }`. Options: `{ types?, sessions?,
   * since?, limit? }` (limit 1..200, default 10). Hits are metadata; `activate(id)` loads one.
   */
  async search(query, options) {
    return JSON.parse(
      await wrapAsync(() => this[NATIVE].search(String(query), options == null ? undefined : JSON.stringify(options))),
    );
  }
  /**
   * Activate what an object (a note) links to: all its links, or those `select` keeps (`{ types?: ('file' |
   * 'toolcall' | 'note')[], path?: '*.md', positions?: number[] }`, positions 1-based in its link lines' order).
   * `{ id, items: [{ id, path, outcome, message }], text }`; outcome is `activated`, `already active`, `not found`
   * or `failed`.
   */
  async expand(target, select) {
    const json = await wrapAsync(() =>
      this[NATIVE].expand(String(target), select == null ? undefined : JSON.stringify(select)),
    );
    await this.flush();
    return JSON.parse(json);
  }
  /** Who links to an object (latest versions): `{ id, backlinks: [{ id, type, path, at: [{ field, line }] }], text }`. */
  async backlinks(target) {
    return JSON.parse(await wrapAsync(() => this[NATIVE].backlinks(String(target))));
  }
  /**
   * Every version of an object (id, unique id prefix, harness call id or path; any object in the store), oldest first:
   * `{ id, versions: [{ version, txId, txTime, contentHash, metadataHash, objectHash, size, state }], text }`.
   * Reading versions never changes the session's sets.
   */
  async versions(target) {
    return JSON.parse(await wrapAsync(() => this[NATIVE].versions(String(target))));
  }
  /**
   * One version: `version` is its number (1 = oldest), `'tx:<txId>'`, `'latest'` or an RFC 3339 time.
   * `{ id, version, txId, txTime, contentHash, metadataHash, objectHash, size, state, of, doc, text }`; shown to the
   * caller only, never added to the context.
   */
  async showVersion(target, version) {
    return JSON.parse(await wrapAsync(() => this[NATIVE].showVersion(String(target), versionArg(version))));
  }
  /** Unified diff between two versions (as in `showVersion`): `{ id, from, to, diff, text }`. */
  async diff(target, from, to) {
    return JSON.parse(
      await wrapAsync(() => this[NATIVE].diff(String(target), versionArg(from), versionArg(to ?? 'latest'))),
    );
  }
  /**
   * Rebuild exactly what model call `n` (0-based, one per transformContext) received, from stored versions: its
   * context headed by the session's system prompt of that call, also when the harness sent it (setSystemPrompt).
   */
  async reconstructCall(n) {
    return JSON.parse(await wrapAsync(() => this[NATIVE].reconstructCall(n)));
  }

  /**
   * Commit the conversation since the last commit (a context commit, agent-context-commits.md): resolves to the
   * commit `{ id, parent, commitType, artifact, trigger, messageCount, tokenCount, createdAt, summary, … }`.
   * `trigger`: 'explicit' (default), 'turn_boundary', 'tool_call', 'session_end' or 'compaction'; with nothing new a
   * non-explicit checkpoint makes no commit and resolves to the tip (null when there is none). `compaction`: the
   * messages the host holds in place of the prefix (pi's compactionSummary): the new messages are committed first,
   * then a compaction commit carrying them.
   */
  async checkpoint(options = {}) {
    const p = this[PROVENANCE];
    const body = {
      trigger: options?.trigger ?? undefined,
      summary: options?.summary ?? undefined,
      template: options?.template ?? p.template,
      principal: options?.principal ?? p.principal,
      createdAt: options?.createdAt ?? undefined,
      compaction: options?.compaction ?? undefined,
    };
    return parse(await wrapAsync(() => this[NATIVE].checkpoint(JSON.stringify(body))));
  }

  /**
   * The host moved to another branch of this session (pi's /tree): `messages` is the branch as the context hook
   * would get it. Unless the branch continues the session (then nothing happens, not even a commit), commits what is
   * new (a `turn_boundary` checkpoint), then moves the session to the commit the branch maps to, so the next transformContext shows exactly that branch (docs/design.md §7 "Branches"). Resolves to
   * `{ moved, commit }`: moved false when the branch continues the session (or nothing maps); commit null when the
   * session moved to its root (a branch before its first commit).
   */
  async rewind(messages, options = {}) {
    if (!Array.isArray(messages)) throw codedError('INVALID_ARGUMENT', 'rewind: messages must be an array');
    const p = this[PROVENANCE];
    const body = {
      trigger: options?.trigger ?? undefined,
      template: options?.template ?? p.template,
      principal: options?.principal ?? p.principal,
    };
    const r = parse(await wrapAsync(() => this[NATIVE].rewind(JSON.stringify(messages), JSON.stringify(body))));
    if (r.moved) {
      // The engine's cursor moved back: what this object remembers of consumed arrays no longer holds.
      this[CONSUMED] = null;
      this[FPS] = new WeakMap();
      this[STARTED] += 1;
    }
    return r;
  }

  /** The tip of this session's commit chain (a ctx id), or null. */
  get commitTip() {
    return this[NATIVE].commitTip ?? null;
  }

  /** Commit operations (show, history, resolve, updateMetadata, materialize) on this session's store. */
  get commits() {
    return new Commits(this[STORE]);
  }

  /** 'cache' or 'spec' (a session opened `readOnly`: the layout it was recorded with). */
  get layout() {
    return wrap(() => this[NATIVE].layout);
  }

  /**
   * Every object of the session, in the order it became known, with the id the model sees:
   * `[{ alias, id, type, path, charCount, tool, status, state, active, pinned }]` (alias `t12`/`f3` or null).
   */
  objects() {
    return JSON.parse(wrap(() => this[NATIVE].objectLinesJson())).map((o) => ({
      alias: o.alias ?? null,
      id: o.id,
      type: o.type,
      path: o.path ?? null,
      charCount: o.char_count ?? null,
      tool: o.tool ?? null,
      status: o.status ?? null,
      state: o.state ?? null,
      active: o.active,
      pinned: o.pinned,
    }));
  }

  /** A full object id from an alias (`t12`, `f3`), a full id or a unique prefix; UNKNOWN_OBJECT otherwise. */
  resolveId(target) {
    return wrap(() => this[NATIVE].resolveId(String(target)));
  }

  /**
   * Model calls `from..to` (default all), each rebuilt from the store: `[{ call, messages, tokens, cachedTokens,
   * transcriptMessages, transcriptTokens, epochs, folds, shown, commit }]` (commit: the one the call followed, see
   * callCommit); transcriptTokens: what the harness alone would send (the
   * whole transcript, outputs in full), estimated the same way. Tokens are ⌈UTF-16 length of each message's JSON / 4⌉; cachedTokens
   * those of the leading messages equal to the previous call's; epochs and folds: collapses run at that call.
   * `{ context: true }`: each also has `context`, what the model was sent (as reconstructCall gives it, from the
   * same rebuild).
   */
  async callSummaries(from = 0, to = 0xffffffff, options = {}) {
    const context = options?.context === true;
    const list = JSON.parse(await wrapAsync(() => this[NATIVE].callSummaries(from, to, context)));
    return list.map((c) => ({
      call: c.call,
      messages: c.messages,
      tokens: c.tokens,
      cachedTokens: c.cached_tokens,
      transcriptMessages: c.transcript_messages,
      transcriptTokens: c.transcript_tokens,
      epochs: c.epochs,
      folds: c.folds,
      shown: c.shown,
      commit: c.commit ?? null,
      ...(context ? { context: c.context } : {}),
    }));
  }

  /**
   * The context commit model call `n` followed: the session's tip as of the call's basis transaction (what the
   * session had committed when the call was made; after a /tree, the commit the branch moved to). Null before the
   * session's first commit. INVALID_ARGUMENT for an unknown call.
   */
  async callCommit(n) {
    return (await wrapAsync(() => this[NATIVE].callCommit(n))) ?? null;
  }

  /** Write everything queued (one transaction). Resolves to the receipt, or null if nothing was queued. */
  async flush() {
    return (await wrapAsync(() => this[NATIVE].flush())) ?? null;
  }

  /** Flush, stop watching, release the session. Idempotent; later calls fail with SESSION_CLOSED. */
  close() {
    return wrapAsync(() => this[NATIVE].close());
  }
}

/** A version reference as the core parses it: numbers are version numbers. */
function versionArg(v) {
  if (typeof v === 'number' && Number.isInteger(v)) return String(v);
  if (typeof v === 'string') return v;
  throw codedError('INVALID_ARGUMENT', `version must be a version number or a string (tx:<id>, latest, a time, a hash prefix), got ${typeof v}`);
}

module.exports = { ContextManager };
