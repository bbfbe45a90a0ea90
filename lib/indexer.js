'use strict';
// Indexing protocol (SSOT §5.5): files → versioned file objects.

const { native, NATIVE } = require('./native.js');
const { wrap, wrapAsync, codedError } = require('./errors.js');

const toResult = ({ objectId, action, docJson, receipt }) => ({
  objectId,
  action,
  doc: JSON.parse(docJson),
  receipt: receipt ?? null,
});

class Indexer {
  /**
   * @param {import('./store.js').Store} store
   * @param {import('./resolver.js').Resolver} resolver
   * @param {{ maxContentBytes?: number }} [options]
   */
  constructor(store, resolver, options) {
    if (!store?.[NATIVE] || !resolver?.[NATIVE]) {
      throw codedError('INVALID_ARGUMENT', 'Indexer: pass a store from openStore() and a Resolver');
    }
    this[NATIVE] = wrap(() => new native.NativeIndexer(store[NATIVE], resolver[NATIVE], options));
  }

  /** Read and index a file: `{ objectId, action: 'created'|'updated'|'unchanged', doc, receipt }`. */
  async indexFile(agentPath) {
    return toResult(await wrapAsync(() => this[NATIVE].indexFile(agentPath)));
  }

  /** Discovery stubs for unseen paths; existing objects are never overwritten. */
  async discoverFiles(agentPaths) {
    return (await wrapAsync(() => this[NATIVE].discoverFiles(agentPaths))).map(toResult);
  }

  /** Confirmed deletion: a new version with null content and hashes. */
  async indexFileDeletion(agentPath) {
    return toResult(await wrapAsync(() => this[NATIVE].indexFileDeletion(agentPath)));
  }
}

module.exports = { Indexer };
