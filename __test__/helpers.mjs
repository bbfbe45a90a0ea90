// Shared test helpers: the real package (loaded with Node's require, exactly
// as users load it), temp dirs, unique ids, and one describe per store kind.
import { createRequire } from 'node:module';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, inject, afterAll } from 'vitest';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const require = createRequire(import.meta.url);
export const scm = require('../index.js');

// The temp dirs this test file made. One hook, registered while the file is
// collected, removes them all: a hook registered inside a running test (where
// most tempDir calls are) is never run, and they stayed behind
// (__test__/helpers.test.mjs).
const made = [];
afterAll(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A fresh temp directory (symlinks resolved), removed after the file's tests. */
export function tempDir(prefix = 'scm-test-') {
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), prefix)));
  made.push(dir);
  return dir;
}

/** A unique id: tests share one XTDB node, so nothing may collide. */
export const uid = (prefix = 't') => `${prefix}-${randomUUID()}`;

/**
 * The store kinds every store-backed suite runs against. `options()` gives
 * fresh store options (a new embedded file / the shared XTDB node).
 */
export function storeKinds() {
  const url = inject('xtdbUrl');
  const reason = inject('xtdbSkipReason');
  return [
    {
      kind: 'embedded',
      skip: null,
      options: () => ({ kind: 'embedded', path: path.join(tempDir('scm-store-'), 'store.sqlite') }),
    },
    {
      kind: 'xtdb',
      skip: url ? null : reason || 'no XTDB node',
      options: () => ({ kind: 'xtdb', url, timeoutMs: 20_000 }),
    },
  ];
}

/** `describe` once per store kind; a skipped kind says why in its title. */
export function describeStores(title, fn) {
  for (const sk of storeKinds()) {
    const name = sk.skip ? `${title} [${sk.kind}] (skipped: ${sk.skip})` : `${title} [${sk.kind}]`;
    describe.skipIf(Boolean(sk.skip))(name, () => fn(sk));
  }
}

/** Expect `promiseOrFn` to throw an error with `code`. Returns the error. */
export async function expectCode(promiseOrFn, code) {
  let err;
  try {
    await (typeof promiseOrFn === 'function' ? promiseOrFn() : promiseOrFn);
  } catch (e) {
    err = e;
  }
  if (!err) throw new Error(`expected an error with code ${code}, nothing was thrown`);
  if (err.code !== code) {
    throw new Error(`expected code ${code}, got ${err.code}: ${err.message}`, { cause: err });
  }
  if (err.message.startsWith('[')) throw new Error(`message still carries the code prefix: ${err.message}`);
  return err;
}

/**
 * Run `node -e script` (CommonJS, package root as cwd) and resolve with
 * { code, stdout, stderr, ms }; killed after `timeoutMs`.
 */
export function runNode(script, { env = {}, timeoutMs = 30_000, cwd = ROOT } = {}) {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const child = spawn(process.execPath, ['-e', script], {
      cwd,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, ms: Date.now() - t0, timedOut: signal === 'SIGKILL' });
    });
  });
}

/** `require` path of the package for scripts run by `runNode`. */
export const PKG = JSON.stringify(ROOT);

/** pi-shaped transcript builders. */
export const msg = {
  user: (content, timestamp = Date.now()) => ({ role: 'user', content, timestamp }),
  /** An assistant message calling `calls` = [{ id, name, arguments }]. */
  assistant: (calls, text) => ({
    role: 'assistant',
    content: [...(text ? [{ type: 'text', text }] : []), ...calls.map((c) => ({ type: 'toolCall', ...c }))],
    api: 'faux',
    provider: 'faux',
    model: 'faux-1',
    usage: {},
    stopReason: calls.length ? 'toolUse' : 'stop',
    timestamp: Date.now(),
  }),
  result: (toolCallId, toolName, text, isError = false) => ({
    role: 'toolResult',
    toolCallId,
    toolName,
    content: [{ type: 'text', text }],
    isError,
    timestamp: Date.now(),
  }),
};

/** The text of a message's content (string or text parts). */
export const textOf = (m) =>
  typeof m.content === 'string' ? m.content : m.content.filter((p) => p.type === 'text').map((p) => p.text).join('\n');
