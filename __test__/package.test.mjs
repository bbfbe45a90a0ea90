// The package loads the way its users load it: CommonJS require, ESM import
// (named exports through Node's CJS interop), and its types describe it.
import { describe, test, expect } from 'vitest';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { scm, runNode, ROOT, PKG } from './helpers.mjs';

const require = createRequire(import.meta.url);
const PUBLIC = ['stableStringify', 'identityHash', 'fileHash', 'contentHash', 'metadataHash', 'objectHash', 'defaultFilesystemId', 'nativeVersion', 'Resolver', 'Store', 'openStore', 'Indexer', 'ContextManager', 'SelfContextManager', 'defaultStorePath'];

describe('package entry', () => {
  test('require() exposes the public surface', () => {
    for (const name of PUBLIC) expect(typeof scm[name], name).toBe('function');
    expect(scm.nativeVersion()).toBe(require(path.join(ROOT, 'package.json')).version);
  });

  test('ESM import sees the same named exports', async () => {
    const script = `import(${PKG} + '/index.js').then((m) => console.log(JSON.stringify(Object.keys(m).filter((k) => k !== 'default' && k !== 'module.exports').sort())));`;
    const out = await runNode(script);
    expect(out.code, out.stderr).toBe(0);
    expect(JSON.parse(out.stdout)).toEqual(expect.arrayContaining(PUBLIC));
  });

  test('the hand-written types compile against a usage sample', async () => {
    const tsc = path.join(ROOT, 'node_modules/typescript/bin/tsc');
    if (!existsSync(tsc)) return; // typescript is only a transitive dev dependency
    const out = await runNode(
      `require('child_process').execFileSync(process.execPath, [${JSON.stringify(tsc)}, '-p', ${JSON.stringify(path.join(ROOT, '__test__/types/tsconfig.json'))}], { stdio: 'inherit' })`,
      { timeoutMs: 120_000 },
    );
    expect(out.code, out.stdout + out.stderr).toBe(0);
  }, 130_000);
});
