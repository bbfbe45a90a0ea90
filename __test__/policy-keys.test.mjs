// The cache layout's policy keys are written in three places a user meets:
// the addon's generated types (native.d.ts, from the core's options struct,
// whose conversion to the core's CachePolicy is exhaustive at compile time),
// the hand-written facade types (index.d.ts) and the config loader
// (lib/config.js, which the pi package and the replay benchmark use). This
// checks that they name the same keys with the same kinds.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, require } from './helpers.mjs';

const { CACHE_POLICY_KEYS } = require('../lib/config.js');

/** `{ key: 'number' | 'boolean' }` of one TypeScript interface. */
function interfaceKeys(file, name) {
  const text = readFileSync(path.join(ROOT, file), 'utf8');
  const start = text.indexOf(`export interface ${name} {`);
  expect(start, `${name} in ${file}`).toBeGreaterThanOrEqual(0);
  const body = text.slice(start, text.indexOf('\n}', start));
  const out = {};
  for (const m of body.matchAll(/^\s*(\w+)\?:\s*(number|boolean)\b/gm)) out[m[1]] = m[2];
  return out;
}

const kinds = (o) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, v === 'int' ? 'number' : 'boolean']));

describe('cache policy keys', () => {
  it('index.d.ts, native.d.ts and lib/config.js name the same keys with the same kinds', () => {
    const generated = interfaceKeys('native.d.ts', 'NapiCachePolicy');
    expect(Object.keys(generated).length).toBeGreaterThan(10);
    expect(interfaceKeys('index.d.ts', 'CachePolicy')).toEqual(generated);
    expect(kinds(CACHE_POLICY_KEYS)).toEqual(generated);
  });
});
