'use strict';
// Context commits (agent-context-commits.md) on a store: show, history, resolve, updateMetadata, materialize.
// Every rule is in the core (crates/scm-core/src/commits); this only converts.

const { native, NATIVE } = require('./native.js');
const { wrapAsync, codedError } = require('./errors.js');

const parse = (json) => (json == null ? null : JSON.parse(json));

class Commits {
  /** @internal Use `cm.commits` or `commitsOf(store)`. */
  constructor(store) {
    if (!store || !store[NATIVE]) throw codedError('INVALID_ARGUMENT', 'Commits: a Store is required');
    this[NATIVE] = store[NATIVE];
  }

  /** The commit and its current metadata (summary). */
  async show(id) {
    return parse(await wrapAsync(() => native.commitShow(this[NATIVE], id)));
  }

  /** `id` and its ancestors, newest first, back to the root (at most `depth`). */
  async history(id, options = {}) {
    const depth = options?.depth;
    if (depth != null && !(Number.isInteger(depth) && depth >= 0)) {
      throw codedError('INVALID_ARGUMENT', 'commits.history: depth must be a non-negative integer');
    }
    return parse(await wrapAsync(() => native.commitHistory(this[NATIVE], id, depth ?? undefined)));
  }

  /** `{ sessionId | principal, at }` (at: Date or RFC 3339) → the newest commit id at or before `at`, or null. */
  async resolve(request) {
    if (request == null || typeof request !== 'object') {
      throw codedError('INVALID_ARGUMENT', 'commits.resolve: { sessionId | principal, at } required');
    }
    const at = request.at instanceof Date ? request.at.toISOString() : request.at;
    const body = { sessionId: request.sessionId, principal: request.principal, at };
    return (await wrapAsync(() => native.commitResolve(this[NATIVE], JSON.stringify(body)))) ?? null;
  }

  /** The tip of session `sessionId`'s chain (what its next commit names as parent), or null. */
  async tip(sessionId) {
    if (typeof sessionId !== 'string' || sessionId === '') throw codedError('INVALID_ARGUMENT', 'commits.tip: a session id is required');
    return (await wrapAsync(() => native.commitSessionTip(this[NATIVE], sessionId))) ?? null;
  }

  /** Sets (or clears with null) the summary. The commit itself never changes. */
  async updateMetadata(id, { summary } = {}) {
    await wrapAsync(() => native.commitUpdateMetadata(this[NATIVE], id, summary ?? null));
  }

  /**
   * The conversation at commit `id`: `{ messages | jsonl, messageCount, tokenCount, commits, snapshot, cached }`.
   * `stop`: 'compaction' (default: from the nearest compaction's summary), 'root' (everything, past compactions)
   * or a ctx id (what came after that ancestor). `format`: 'pi-messages' (default) or 'pi-jsonl' (a pi session file).
   * The same request later returns the stored snapshot (`cached: true`).
   */
  async materialize(id, options = {}) {
    const body = JSON.stringify({ stop: options?.stop ?? undefined, format: options?.format ?? undefined });
    return JSON.parse(await wrapAsync(() => native.commitMaterialize(this[NATIVE], id, body)));
  }
}

/** The commit operations on `store`. */
function commitsOf(store) {
  return new Commits(store);
}

module.exports = { Commits, commitsOf };
