'use strict';
// Where things live when the caller does not say.

const path = require('node:path');

/**
 * The embedded store every manager of a workspace shares (in one process and
 * across processes): `<workspaceRoot>/.scm/store.sqlite`, or `SCM_STORE_PATH`
 * (resolved against the current directory) when set.
 */
function defaultStorePath(workspaceRoot) {
  const override = process.env.SCM_STORE_PATH;
  if (override) return path.resolve(override);
  return path.join(workspaceRoot, '.scm', 'store.sqlite');
}

/** Store options for a manager: given ones, with the embedded default location filled in. */
function storeOptionsFor(store, workspaceRoot) {
  if (store == null) return { kind: 'embedded', path: defaultStorePath(workspaceRoot) };
  if (store.kind === 'embedded' && store.path == null) return { ...store, path: defaultStorePath(workspaceRoot) };
  return store;
}

module.exports = { defaultStorePath, storeOptionsFor };
