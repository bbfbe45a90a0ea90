'use strict';
// The store handle: embedded (SQLite file) or XTDB v1 over HTTP.
// Documents cross the native boundary as JSON text.

const { native, NATIVE } = require('./native.js');
const { wrap, wrapAsync, codedError } = require('./errors.js');

const parse = (json) => (json == null ? null : JSON.parse(json));

class Store {
  /** @internal Use `openStore`. */
  constructor(handle) {
    this[NATIVE] = handle;
  }

  /** 'embedded' | 'xtdb' */
  get kind() {
    return this[NATIVE].kind;
  }

  /** Apply `[{op:'put', doc} | {op:'match', id, expected}]` atomically; resolves once readable. */
  submit(ops) {
    return wrapAsync(() => {
      if (!Array.isArray(ops)) throw codedError('INVALID_ARGUMENT', 'submit: ops must be an array');
      return this[NATIVE].submit(JSON.stringify(ops));
    });
  }

  /** Latest version, or null. */
  async get(id) {
    return parse(await wrapAsync(() => this[NATIVE].get(id)));
  }

  /** Latest versions of many objects (missing ids absent). */
  async getMany(ids) {
    return parse(await wrapAsync(() => this[NATIVE].getMany(ids)));
  }

  /** The version visible at `{ txId }` or `{ txTime }`. */
  async getAsOf(id, asOf) {
    return parse(await wrapAsync(() => this[NATIVE].getAsOf(id, asOf ?? {})));
  }

  /** Every version, oldest first: `[{ txId, txTime, doc }]`. */
  async history(id) {
    return parse(await wrapAsync(() => this[NATIVE].history(id)));
  }

  /** Every version as stored: chat and session heads not expanded into whole documents. */
  async storedHistory(id) {
    return parse(await wrapAsync(() => this[NATIVE].storedHistory(id)));
  }

  /** Newest visible transaction id (null for an empty store). */
  latestTxId() {
    return wrapAsync(() => this[NATIVE].latestTxId()).then((v) => v ?? null);
  }

  /** Ids whose latest version has `"type": type` ('session', 'file', 'toolcall', …), sorted. */
  idsOfType(type) {
    return wrapAsync(() => this[NATIVE].idsOfType(type));
  }

  /** `{ objects, versions, bytes }` of the whole store (bytes null where the backend does not say; slow on XTDB). */
  async counts() {
    const c = await wrapAsync(() => this[NATIVE].counts());
    return { objects: c.objects, versions: c.versions, bytes: c.bytes ?? null };
  }

  /**
   * Write the whole store (or the given sessions: their session, chat and system prompt objects with their pages,
   * their toolcalls and every object of their session index) to `path` as scm-export JSON Lines: every stored
   * version in transaction order, documents as stored. Resolves to `{ objects, versions, transactions, skipped,
   * bytes }`.
   */
  async exportTo(path, sessions) {
    return JSON.parse(await wrapAsync(() => this[NATIVE].exportTo(String(path), sessions ?? undefined)));
  }

  /**
   * Import an scm-export file: one transaction per source transaction, in order; versions this store already holds
   * are skipped (`skipped`), so importing twice writes nothing the second time.
   */
  async importFrom(path) {
    return JSON.parse(await wrapAsync(() => this[NATIVE].importFrom(String(path))));
  }

  /**
   * Every session in the store, oldest first: `[{ sessionId, started, lastActivity, calls, objects,
   * lastCallTokens }]` (`lastCallTokens`: the last call's estimated tokens as its record keeps them; null with no
   * call, or for a session recorded before records kept them).
   */
  async listSessions() {
    return JSON.parse(await wrapAsync(() => this[NATIVE].listSessions())).map((s) => ({
      sessionId: s.session_id,
      started: s.started,
      lastActivity: s.last_activity,
      calls: s.calls,
      objects: s.objects,
      lastCallTokens: s.last_call_tokens ?? null,
    }));
  }

  /**
   * Full-text search over every session's objects (latest versions of files and toolcalls), best first, as
   * `ContextManager.search` but without a session: `{ hits: [{ id, type, path, tool, session, txTime, snippet, score }],
   * text }`. Options: `{ types?, sessions?, since?, limit? }` (limit 1..200, default 10).
   */
  async search(query, options) {
    return JSON.parse(
      await wrapAsync(() => this[NATIVE].search(String(query), options == null ? undefined : JSON.stringify(options))),
    );
  }

  /** Transactions this handle has submitted (committed or not). */
  submittedTxCount() {
    return wrap(() => this[NATIVE].submittedTxCount());
  }
}

/**
 * `openStore({ kind: 'embedded', path? })` (no path: private in-memory store)
 * or `openStore({ kind: 'xtdb', url, timeoutMs? })` (reachability is checked).
 */
async function openStore(options) {
  if (options == null || typeof options !== 'object') {
    throw codedError('INVALID_ARGUMENT', "openStore: options { kind: 'embedded' | 'xtdb', … } required");
  }
  return new Store(await wrapAsync(() => native.openStore(options)));
}

module.exports = { Store, openStore };
