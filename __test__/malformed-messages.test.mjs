// Malformed harness messages (issue 10, finding 8): whatever a caller passes to transformContext / observeMessages —
// cycles, BigInts, nesting too deep for JSON.stringify or for the addon's parser, throwing getters and toJSON,
// values of the wrong type, spoofed markers — every throw or rejection is an Error with a stable `code`, nothing
// crashes, and the manager keeps working afterwards. Seeded, so a failure replays exactly.
import { describe, test, expect } from 'vitest';
import path from 'node:path';
import { scm, tempDir, uid, msg } from './helpers.mjs';

const { ContextManager, SelfContextManager } = scm;

// Every code a caller can see (index.d.ts ErrorCode); a malformed message must give one of these, never nothing.
const CODES = new Set([
  'STORE_UNAVAILABLE',
  'STORE_TIMEOUT',
  'STORE_PROTOCOL',
  'CAS_CONFLICT',
  'FILE_NOT_FOUND',
  'FILE_UNREADABLE',
  'IO_ERROR',
  'INVALID_ARGUMENT',
  'INVALID_MESSAGE',
  'UNKNOWN_OBJECT',
  'NOT_CONTENT_OBJECT',
  'SESSION_CLOSED',
  'INTERNAL',
]);

/** mulberry32: a small seeded PRNG. */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Built once: a nesting JSON.stringify cannot walk (RangeError), and one it can but the addon's parser refuses.
// (How deep that is varies — V8 walks deeper once its stringifier is optimised: deepen until it gives up, now.)
let tooDeep = [];
let tooDeepDepth = 0;
function tooDeepNow() {
  for (let goal = Math.max(100_000, tooDeepDepth); goal <= 12_800_000; goal *= 2) {
    for (; tooDeepDepth < goal; tooDeepDepth++) tooDeep = [tooDeep];
    try {
      JSON.stringify(tooDeep);
    } catch {
      break;
    }
  }
  return tooDeep;
}
tooDeepNow();
let deepish = {};
for (let i = 0; i < 300; i++) deepish = { d: deepish };

/** A fresh, valid message of a random kind (tool calls pair with their results). */
function validMessage(r, n) {
  const k = Math.floor(r() * 3);
  if (k === 0) return msg.user(`u${n}`);
  if (k === 1) return msg.assistant([], `a${n}`);
  return msg.user([{ type: 'text', text: `part ${n}` }]);
}

/** Values a field may be replaced with: each kind the serialisers or the engine must refuse or tolerate. */
function oddValue(r, m) {
  const odd = [
    () => 10n ** 20n,
    () => tooDeep,
    () => deepish,
    () => m, // a cycle through the message itself
    () => undefined,
    () => null,
    () => NaN,
    () => Infinity,
    () => -0,
    () => Symbol('s'),
    () => () => 1,
    () => 'x'.repeat(2048 + Math.floor(r() * 100)), // lifted beside the JSON
    () => '\ud800 lone surrogate',
    () => '\ud800'.repeat(3000), // lifted and lone
    () => ({ 'scm:lifted': Math.floor(r() * 5) }),
    () => ({ 'scm:fp': 'f'.repeat(64) }),
    () => ({
      get boom() {
        throw new Error('getter');
      },
    }),
    () => ({
      toJSON() {
        throw 'a thrown string';
      },
    }),
    () => ({ toJSON: () => 1n }),
    () => new Proxy({}, { ownKeys: () => { throw new RangeError('trap'); } }),
    () => Object.assign([], { length: 3 }), // holes
    () => Object.create(null),
    () => new Date(0),
    () => new Map([[1, 2]]),
    () => new Uint8Array([0, 1, 2]),
    () => 12345,
    () => true,
    () => '',
    () => [],
    () => ({}),
  ];
  return odd[Math.floor(r() * odd.length)]();
}

/** A copy of `m` with 1–3 random mutations (a field replaced, removed or added; or the whole message replaced). */
function mutate(r, m) {
  if (r() < 0.1) return oddValue(r, m);
  // A copy one level deep (the message and its content parts): an earlier accepted mutation may hold values
  // structuredClone refuses (functions, symbols).
  if (m === null || typeof m !== 'object') return oddValue(r, m);
  // (A mutated middle message can be in `base` unserialised: while the first and last consumed objects are the same,
  // only the messages after them are read — the documented immutability contract. So it may even be a proxy.)
  let out;
  try {
    out = { ...m };
    if (Array.isArray(m.content)) out.content = Array.prototype.map.call(m.content, (p) => (p !== null && typeof p === 'object' && !Array.isArray(p) ? { ...p } : p));
  } catch {
    return oddValue(r, m);
  }
  const times = 1 + Math.floor(r() * 3);
  for (let i = 0; i < times; i++) {
    // Pick a container: the message or (when it has parts) one of its content parts.
    let target = out;
    if (Array.isArray(out.content) && out.content.length && r() < 0.5) {
      const j = Math.floor(r() * out.content.length);
      if (out.content[j] !== null && typeof out.content[j] === 'object') target = out.content[j];
    }
    let keys;
    try {
      keys = Object.keys(target);
    } catch {
      continue; // a proxy whose ownKeys trap throws (an earlier accepted mutation)
    }
    const key = r() < 0.8 && keys.length ? keys[Math.floor(r() * keys.length)] : `extra${i}`;
    if (r() < 0.15) delete target[key];
    else target[key] = oddValue(r, out);
  }
  return out;
}

/** Calls `fn`; a throw or rejection must be an Error with a known code. Returns whether it succeeded. */
async function coded(fn, where) {
  try {
    await fn();
    return true;
  } catch (err) {
    if (!(err instanceof Error) || typeof err.code !== 'string' || !CODES.has(err.code)) {
      const what = err instanceof Error ? `${err.constructor.name} code=${err.code}: ${err.message}` : String(err);
      throw new Error(`${where}: uncoded error ${what}`, { cause: err });
    }
    return false;
  }
}

/**
 * Runs `iterations` calls against one manager: each a transcript of the messages accepted so far plus a mutated one
 * (now and then the mutation lands in the consumed prefix instead: a replaced array, read whole with stand-ins).
 */
async function fuzz(manager, seed, iterations) {
  const r = rng(seed);
  let base = [msg.user('start')];
  expect(await coded(() => manager.transformContext(base), 'start')).toBe(true);
  const seen = { ok: 0, failed: 0 };
  for (let i = 0; i < iterations; i++) {
    // Bounded work per call: a long transcript starts over (itself a replaced array, as after a compaction).
    if (base.length > 120) base = [msg.user(`restart ${i}`)];
    let arr;
    if (r() < 0.1 && base.length > 1) {
      // A replaced array: one earlier message mutated in place of the original.
      const j = Math.floor(r() * base.length);
      arr = base.slice();
      arr[j] = mutate(r, base[j]);
    } else {
      arr = [...base, validMessage(r, i), mutate(r, validMessage(r, i))];
    }
    const observe = r() < 0.2;
    const ok = await coded(() => (observe ? manager.observeMessages(arr) : manager.transformContext(arr)), `seed ${seed} call ${i}`);
    seen[ok ? 'ok' : 'failed']++;
    if (ok) base = arr;
    // It keeps working: a valid next message is taken.
    if (i % 50 === 49) {
      const next = [...base, msg.user(`check ${i}`)];
      expect(await coded(() => manager.transformContext(next), `check ${i}`)).toBe(true);
      base = next;
    }
  }
  const after = [...base, msg.user('after')];
  const out = await manager.transformContext(after);
  expect(Array.isArray(out)).toBe(true);
  return seen;
}

describe('malformed messages give coded errors (seeded fuzz)', () => {
  const storeFor = () => ({ kind: 'embedded', path: path.join(tempDir('scm-store-'), 'store.sqlite') });

  test.each([
    ['cache', 1],
    ['spec', 2],
  ])('ContextManager, %s layout: every throw carries a code, and the session keeps working', async (layout, seed) => {
    const cm = await ContextManager.open({ sessionId: uid('fz'), workspaceRoot: tempDir('scm-ws-'), store: storeFor(), layout });
    const seen = await fuzz(cm, seed, 1000);
    // Both kinds occur: the generator is not all-valid nor all-broken.
    expect(seen.ok).toBeGreaterThan(50);
    expect(seen.failed).toBeGreaterThan(50);
    await cm.close();
  });

  test('SelfContextManager: every throw carries a code, and the session keeps working', async () => {
    const ws = tempDir('scm-ws-');
    const m = new SelfContextManager({ sessionId: uid('fz'), workspaceRoot: ws, watch: false });
    await fuzz(m, 3, 600);
    await m.close();
  });

  test.each([
    ['a cycle', () => { const m = msg.user('c'); m.self = m; return m; }],
    ['a BigInt', () => ({ ...msg.user('b'), n: 1n })],
    ['nesting too deep for JSON.stringify', () => ({ ...msg.user('d'), deep: tooDeepNow() })],
    ['a throwing getter', () => ({ ...msg.user('g'), get x() { throw new Error('no'); } })],
  ])('%s: INVALID_MESSAGE on the first call, the tail and a replaced array; nothing is consumed', async (_what, bad) => {
    const cm = await ContextManager.open({ sessionId: uid('fz'), workspaceRoot: tempDir('scm-ws-'), store: storeFor() });
    const first = await cm.transformContext([bad()]).catch((e) => e);
    expect(first).toBeInstanceOf(Error);
    expect(first.code).toBe('INVALID_MESSAGE');
    expect(first.cause).toBeDefined();
    const arr = [msg.user('first')];
    await cm.transformContext(arr);
    const tail = [...arr, bad()];
    expect((await cm.transformContext(tail).catch((e) => e)).code).toBe('INVALID_MESSAGE');
    expect((await cm.observeMessages(tail).catch((e) => e)).code).toBe('INVALID_MESSAGE');
    expect(cm.stats().cursor).toBe(1);
    // A replaced array (read whole, the consumed message as a stand-in) with the bad message in it.
    expect((await cm.transformContext([bad(), ...arr]).catch((e) => e)).code).toBe('INVALID_MESSAGE');
    expect(cm.stats().cursor).toBe(1);
    expect(await cm.transformContext([...arr, msg.user('fine')])).toBeInstanceOf(Array);
    expect(cm.stats().cursor).toBe(2);
    await cm.close();
  });
});
