'use strict';
// Public surface of self-context-manager (CommonJS: works with require,
// import (Node's CJS interop sees every named export) and pi's jiti loader).

const hashing = require('./hashing.js');
const { Resolver } = require('./resolver.js');
const { Store, openStore } = require('./store.js');
const { Indexer } = require('./indexer.js');
const { ContextManager } = require('./context-manager.js');
const { Commits, commitsOf } = require('./commits.js');
const { SelfContextManager } = require('./self-context-manager.js');
const { defaultStorePath } = require('./defaults.js');
const { native } = require('./native.js');
const { wrap } = require('./errors.js');

const stableStringify = hashing.stableStringify;
const identityHash = hashing.identityHash;
const fileHash = hashing.fileHash;
const contentHash = hashing.contentHash;
const metadataHash = hashing.metadataHash;
const objectHash = hashing.objectHash;
const defaultFilesystemId = hashing.defaultFilesystemId;
const nativeVersion = () => native.nativeVersion();
/** What a host tells the model about context management in a layout (the core's words): see index.d.ts. */
const layoutWords = (layout) => JSON.parse(wrap(() => native.layoutWords(String(layout))));

module.exports = {
  stableStringify,
  identityHash,
  fileHash,
  contentHash,
  metadataHash,
  objectHash,
  defaultFilesystemId,
  nativeVersion,
  layoutWords,
  Resolver,
  Store,
  openStore,
  Indexer,
  ContextManager,
  Commits,
  commitsOf,
  SelfContextManager,
  defaultStorePath,
};
