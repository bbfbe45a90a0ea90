'use strict';
// The napi-generated loader (../native.js) finds the right .node for this
// platform: a local build, or a prebuilt `self-context-manager-<platform>`
// package from npm/. Everything else in lib/ goes through this module.

const native = require('../native.js');

/** Key under which a facade object keeps its native handle. */
const NATIVE = Symbol('scm.native');

module.exports = { native, NATIVE };
