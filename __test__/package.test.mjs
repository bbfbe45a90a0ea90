// The package loads the way its users load it: CommonJS require, ESM import
// (named exports through Node's CJS interop), and its types describe it.
import { describe, test, expect } from 'vitest';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { scm, runNode, ROOT, PKG } from './helpers.mjs';

const require = createRequire(import.meta.url);
const PUBLIC = ['stableStringify', 'identityHash', 'fileHash', 'contentHash', 'metadataHash', 'objectHash', 'defaultFilesystemId', 'nativeVersion', 'Resolver', 'Store', 'openStore', 'Indexer', 'ContextManager', 'SelfContextManager', 'defaultStorePath', 'Commits', 'commitsOf'];

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

  // pi loads extensions with jiti 2.7 (moduleCache off); the e2e setup installs it under .tools/.
  const jiti = ['.tools/pi-1.5/node_modules/jiti', '.tools/pi-0.73/node_modules/jiti'].map((p) => path.join(ROOT, p)).find((p) => existsSync(p));
  test.skipIf(!jiti)(`pi's jiti loader imports it from TypeScript${jiti ? '' : ' (skipped: jiti not installed, run the e2e setup)'}`, async () => {
    const out = await runNode(`
      const { createJiti } = require(${JSON.stringify(jiti)});
      const j = createJiti(${JSON.stringify(path.join(ROOT, '__test__/fixtures/x.js'))}, { moduleCache: false });
      j.import(${JSON.stringify(path.join(ROOT, '__test__/fixtures/jiti-probe.ts'))}, { default: true }).then((f) => f()).then(console.log, (e) => { console.error(e); process.exit(1); });`);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout.trim()).toBe('{"a":2,"b":1} 2 function');
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
