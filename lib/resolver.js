'use strict';
// Agent path ↔ source binding (SSOT §5.2–5.4).

const { native, NATIVE } = require('./native.js');
const { wrap } = require('./errors.js');

class Resolver {
  /**
   * @param {{ workspaceRoot?: string, defaultFilesystemId?: string, mounts?: Array<object>, defaultIsLocal?: boolean }} [options]
   */
  constructor(options = {}) {
    const opts = { ...options, workspaceRoot: options.workspaceRoot ?? process.cwd() };
    this[NATIVE] = wrap(() => new native.NativeResolver(opts));
  }

  get defaultFilesystemId() {
    return this[NATIVE].defaultFilesystemId;
  }

  get workspaceRoot() {
    return this[NATIVE].workspaceRoot;
  }

  /** Agent path → `{ source, objectId, hostPath, watchable }`. */
  resolve(agentPath) {
    const r = wrap(() => this[NATIVE].resolve(agentPath));
    r.hostPath ??= null;
    return r;
  }

  /** Source → the path the agent sees. */
  agentPath(source) {
    return wrap(() => this[NATIVE].agentPath(source));
  }

  /** Source → short path for rendering. */
  displayPath(source) {
    return wrap(() => this[NATIVE].displayPath(source));
  }
}

module.exports = { Resolver };
