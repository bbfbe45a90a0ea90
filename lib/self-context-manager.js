'use strict';
// SelfContextManager: drop-in replacement for the original TypeScript class
// (same constructor, properties, method names and sync/async shape), built
// on ContextManager.
//
// No footguns: every method works before `load()`. Async methods load on
// first use; the synchronous ones (activate, deactivate, pin, unpin,
// getSnapshot) open the session synchronously if nothing has yet, and queue
// their store write, which is flushed in the background right away (and in
// any case by the next async call or `close()`).

const fs = require('node:fs/promises');
const path = require('node:path');
const { ContextManager } = require('./context-manager.js');
const { codedError } = require('./errors.js');

const DISCOVERY_TOOLS = new Set(['ls', 'find', 'grep']);

class SelfContextManager {
  #options;
  #cm = null;
  #loading = null;
  #closed = false;
  #lastFlushError = null;

  /**
   * @param {{ sessionId: string, workspaceRoot?: string, systemPrompt?: string, xtdbBaseUrl?: string, watch?: boolean }} options
   *   Without `xtdbBaseUrl` the embedded store at `<workspaceRoot>/.scm/store.sqlite`
   *   (or `SCM_STORE_PATH`) is used. `watch` (default true) tracks indexed files.
   */
  constructor({ sessionId, workspaceRoot, systemPrompt, xtdbBaseUrl, watch } = {}) {
    // The core refuses a blank id too; the constructor is synchronous and opens nothing, so it checks here.
    if (typeof sessionId !== 'string' || sessionId.trim() === '') {
      throw codedError('INVALID_ARGUMENT', 'SelfContextManager: sessionId must be a non-blank string');
    }
    const root = path.resolve(workspaceRoot ?? process.cwd());
    this.#options = {
      sessionId,
      workspaceRoot: root,
      systemPrompt,
      store: xtdbBaseUrl ? { kind: 'xtdb', url: xtdbBaseUrl } : undefined,
      watch: watch ?? true,
      // The drop-in's output shape is a contract: METADATA_POOL, toolcall_ref, ACTIVE_CONTENT.
      layout: 'spec',
      // Callers read the store right after transformContext (read-your-writes).
      durableTransform: true,
    };
    const ro = (value) => ({ value, enumerable: true, writable: false, configurable: false });
    Object.defineProperties(this, {
      sessionId: ro(sessionId),
      workspaceRoot: ro(root),
      sessionObjectId: ro(`session:${sessionId}`),
      chatObjectId: ro(`chat:${sessionId}`),
      systemPromptObjectId: ro(`system_prompt:${sessionId}`),
    });
  }

  /** Create or resume the session (idempotent; other methods call it when needed). */
  load() {
    if (this.#cm) return Promise.resolve();
    if (this.#closed) return Promise.reject(codedError('SESSION_CLOSED', 'session closed'));
    this.#loading ??= ContextManager.open(this.#options).then(
      async (cm) => {
        this.#loading = null;
        // A synchronous call opened the session meanwhile, or close() came first.
        if (this.#cm || this.#closed) return cm.close();
        this.#cm = cm;
      },
      (err) => {
        this.#loading = null;
        throw err;
      },
    );
    return this.#loading;
  }

  async #ready() {
    if (!this.#cm) await this.load();
    if (!this.#cm) throw codedError('SESSION_CLOSED', 'session closed');
    return this.#cm;
  }

  #sync() {
    if (this.#cm) return this.#cm;
    if (this.#closed) throw codedError('SESSION_CLOSED', 'session closed');
    this.#cm = ContextManager.openSync(this.#options);
    return this.#cm;
  }

  #setOp(op, id) {
    const cm = this.#sync();
    const r = cm.setOpSync(op, id);
    // Persist now without making the caller wait; a failed write stays
    // queued in the session and goes out with the next flush.
    cm.flush().then(
      () => (this.#lastFlushError = null),
      (err) => (this.#lastFlushError = err),
    );
    return r;
  }

  /** The error of the last background write, if it failed (null otherwise). */
  get lastFlushError() {
    return this.#lastFlushError;
  }

  /** The underlying ContextManager (null until loaded). */
  get contextManager() {
    return this.#cm;
  }

  /** Messages in, the assembled context out. */
  async transformContext(messages) {
    return (await this.#ready()).transformContext(messages);
  }

  /** Store new messages without a model call (e.g. the run's final answer before the session ends); resolves with how many were new. */
  async observeMessages(messages) {
    return (await this.#ready()).observeMessages(messages);
  }

  /** Read a file into context: `{ ok, message, id? }`. */
  async read(filePath) {
    return (await this.#ready()).read(filePath);
  }

  activate(id) {
    return this.#setOp('activate', id);
  }
  deactivate(id) {
    return this.#setOp('deactivate', id);
  }
  pin(id) {
    return this.#setOp('pin', id);
  }
  unpin(id) {
    return this.#setOp('unpin', id);
  }

  /** Before a tool call runs: the ref this session showed that it would write into a file, or null (ContextManager#checkToolCall). */
  checkToolCall(toolName, args) {
    return this.#sync().checkToolCall(toolName, args);
  }

  /** Write `content` to `filePath` (parent directories created), then index it as the agent's write. */
  async wrappedWrite(filePath, content) {
    const cm = await this.#ready();
    const { hostPath } = cm.resolve(filePath);
    if (hostPath == null) {
      throw codedError('FILE_UNREADABLE', `wrappedWrite: ${filePath} is not reachable from this process`);
    }
    try {
      await fs.mkdir(path.dirname(hostPath), { recursive: true });
      await fs.writeFile(hostPath, content);
    } catch (cause) {
      const err = codedError('IO_ERROR', `wrappedWrite: cannot write ${filePath}: ${cause.message}`);
      err.cause = cause;
      throw err;
    }
    await cm.observeWrite(filePath);
  }

  /** The harness edited `filePath`: index the new version. */
  async wrappedEdit(filePath) {
    await (await this.#ready()).observeEdit(filePath);
  }

  /** ls output (paths relative to the workspace root) → discovery stubs. */
  async wrappedLs(output) {
    await (await this.#ready()).observeLs(output);
  }
  async wrappedFind(output) {
    await (await this.#ready()).observeFind(output);
  }
  async wrappedGrep(output) {
    await (await this.#ready()).observeGrep(output);
  }

  /**
   * pi's `tool_execution_end`: `bash` gets the command; `ls`, `find`, `grep`
   * their output. Other tools are ignored (their effects arrive through the
   * wrapped tools).
   */
  async observeToolExecutionEnd(toolName, commandOrOutput) {
    if (typeof commandOrOutput !== 'string' || commandOrOutput === '') return;
    if (toolName === 'bash') {
      await (await this.#ready()).observeBash(commandOrOutput);
    } else if (DISCOVERY_TOOLS.has(toolName)) {
      const cm = await this.#ready();
      await (toolName === 'ls' ? cm.observeLs(commandOrOutput) : toolName === 'find' ? cm.observeFind(commandOrOutput) : cm.observeGrep(commandOrOutput));
    }
  }

  /** Latest stored version of any object, or null. */
  async getXtEntity(id) {
    return (await this.#ready()).getObject(id);
  }

  /** `{ sessionIndex: Set, metadataPool: [{id, type, path?, file_type?, char_count?, tool?, status?, state?}], activeSet: Set, pinnedSet: Set }` */
  getSnapshot() {
    const s = this.#sync().snapshot();
    return {
      sessionIndex: new Set(s.sessionIndex),
      metadataPool: s.metadataPool,
      activeSet: new Set(s.activeSet),
      pinnedSet: new Set(s.pinnedSet),
    };
  }

  /** Flush and release the session (idempotent). Later calls fail with SESSION_CLOSED. */
  async close() {
    this.#closed = true;
    if (this.#loading) await this.#loading.catch(() => {});
    if (this.#cm) await this.#cm.close();
  }
}

module.exports = { SelfContextManager };
