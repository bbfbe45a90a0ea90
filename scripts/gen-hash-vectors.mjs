#!/usr/bin/env node
// Cross-language test vectors for the stable serialisation and the five hashes
// (spec README "Resolved points", implementation-plan §2).
//
// This is an independent plain-JavaScript implementation written from the
// spec, not from the Rust code: if Rust and JS disagree, two clients in
// different languages would derive different ids for the same object.
//
// Usage:
//   node scripts/gen-hash-vectors.mjs           # (re)write the fixture
//   node scripts/gen-hash-vectors.mjs --check   # exit 1 if the committed fixture is stale
//
// Output: crates/scm-core/tests/fixtures/hash-vectors.json (deterministic:
// seeded PRNG, no timestamps), read by crates/scm-core/tests/hash_vectors.rs.

import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const OUT = path.join(ROOT, 'crates/scm-core/tests/fixtures/hash-vectors.json');
const SEED = 0x5c3c0de;
const RANDOM_DOCS = 1200;

// ---------------------------------------------------------------------------
// The reference implementation (what a JS client computes).

/**
 * Stable serialisation: keys sorted with the default `Array.prototype.sort`
 * (UTF-16 code units), emitted in that order, no whitespace; every scalar
 * exactly as `JSON.stringify` prints it. Building the string ourselves (rather
 * than `JSON.stringify` of a sorted copy) matters: a JS object would put
 * integer-like keys ("9", "10") first in numeric order, the sort puts them in
 * string order ("10" < "9"). Keys whose value is `undefined` are skipped, as
 * `JSON.stringify` skips them.
 */
export function stableStringify(v) {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) {
    return '[' + v.map((x) => (x === undefined ? 'null' : stableStringify(x))).join(',') + ']';
  }
  const keys = Object.keys(v).sort();
  const parts = [];
  for (const k of keys) {
    if (v[k] === undefined) continue;
    parts.push(JSON.stringify(k) + ':' + stableStringify(v[k]));
  }
  return '{' + parts.join(',') + '}';
}

const sha256 = (data) => createHash('sha256').update(data).digest('hex'); // strings hash as UTF-8

const METADATA_FIELDS = {
  file: ['file_type', 'char_count'],
  toolcall: ['tool', 'args', 'args_display', 'status', 'chat_ref', 'file_refs'],
  chat: ['turns', 'session_ref', 'turn_count', 'toolcall_refs'],
  system_prompt: [],
  session: ['session_id', 'chat_ref', 'system_prompt_ref', 'session_index', 'metadata_pool', 'active_set', 'pinned_set'],
};

function identityHash(type, source, assignedId) {
  if (source) return sha256(stableStringify({ type, source }));
  return sha256(stableStringify({ type, 'xt/id': assignedId }));
}
const fileHash = (bytes) => sha256(bytes);
const contentHash = (content) => (content === null ? null : sha256(content));
function metadataOf(type, doc) {
  const m = {};
  for (const f of METADATA_FIELDS[type]) if (doc[f] !== undefined) m[f] = doc[f];
  return m;
}
const metadataHash = (fields) => sha256(stableStringify(fields));
const objectHash = (fh, ch, mh) =>
  sha256(stableStringify({ file_hash: fh, content_hash: ch, metadata_hash: mh }));

/** The five hashes of a document as a JS client would store it. */
function hashesOf(type, doc) {
  const identity_hash = identityHash(type, doc.source, doc['xt/id']);
  const file_hash = doc.file_hash ?? null;
  const content_hash = contentHash(doc.content ?? null);
  const metadata = metadataOf(type, doc);
  const metadata_hash = metadataHash(metadata);
  return {
    identity_hash,
    file_hash,
    content_hash,
    metadata_hash,
    object_hash: objectHash(file_hash, content_hash, metadata_hash),
    metadata_stable: stableStringify(metadata),
  };
}

// ---------------------------------------------------------------------------
// Seeded randomness (mulberry32): the fixture must be reproducible.

let state = SEED >>> 0;
function rand() {
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const int = (n) => Math.floor(rand() * n);
const pick = (xs) => xs[int(xs.length)];
const chance = (p) => rand() < p;

// Characters chosen for what tends to break serialisers and sorters.
const CHAR_POOLS = [
  // ASCII letters, digits, punctuation (incl. JSON's own metacharacters)
  [...'abcxyzABCXYZ0129 _-./:,{}[]"\\\'<>&=+?#@!%'].map((c) => c.codePointAt(0)),
  // C0 controls (escaped by JSON.stringify), DEL and C1 (not escaped)
  [...Array(32).keys(), 0x7f, 0x80, 0x85, 0x9f],
  // Non-ASCII BMP: Latin, Greek, Cyrillic, CJK, combining mark, line/paragraph
  // separators, BOM, replacement char, private use and the top of the BMP
  // (U+E000..U+FFFF sort *after* surrogate pairs in UTF-16 order).
  [0xe9, 0xdf, 0x3b1, 0x416, 0x4e2d, 0x6587, 0x301, 0x2028, 0x2029, 0xfeff, 0xfffd, 0xffff, 0xe000, 0xff21, 0xd7ff],
  // Astral plane (surrogate pairs in UTF-16; 4 bytes in UTF-8)
  [0x10000, 0x1f600, 0x1f4a9, 0x1d11e, 0x20000, 0x10ffff],
];
function randString(maxLen = 12) {
  const n = int(maxLen + 1);
  let s = '';
  for (let i = 0; i < n; i++) s += String.fromCodePoint(pick(pick(CHAR_POOLS)));
  return s;
}
const KEY_POOL = [
  '', 'a', 'aa', 'A', 'b', 'a\u0000', 'a b', '0', '1', '9', '10', '01', '-1', '1.5',
  '4294967294', '4294967295', '__proto__', 'constructor', 'toString', 'é', 'e\u0301',
  '\uff21', '\ue000', '\uffff', '😀', '💩', '\u{10ffff}', 'xt/id', 'type', 'source',
];
const randKey = () => (chance(0.6) ? pick(KEY_POOL) : randString(6));

function bitsToDouble() {
  const dv = new DataView(new ArrayBuffer(8));
  dv.setUint32(0, int(2 ** 32));
  dv.setUint32(4, int(2 ** 32));
  return dv.getFloat64(0);
}
const SPECIAL_NUMBERS = [
  0, -0, 1, -1, 0.1, 0.2, 0.1 + 0.2, 1 / 3, Math.PI, 2.5, 4.35, 100, 1e20, 1e21, 1e-6, 1e-7, 1.5e-7,
  123e-20, 999999999999999900000, 123456789012345680000, 2 ** 31, 2 ** 32, 2 ** 53 - 1, 2 ** 53,
  2 ** 53 + 2, -(2 ** 53), 2 ** 63, 2 ** 64, 1e100, Number.MAX_VALUE, Number.MIN_VALUE,
  -Number.MIN_VALUE, Number.EPSILON, 2.2250738585072014e-308, -1e21, -1e-7, 0.000001, 5e-324,
];
function randNumber() {
  switch (int(5)) {
    case 0: return pick(SPECIAL_NUMBERS);
    case 1: return int(2000001) - 1000000;
    case 2: return (rand() - 0.5) * 10 ** (int(61) - 30);
    case 3: {
      let x;
      do x = bitsToDouble(); while (!Number.isFinite(x));
      return x;
    }
    default: return Math.round((rand() - 0.5) * 1e6) / 1000;
  }
}

function defineKey(obj, k, v) {
  // Plain assignment of "__proto__" would set the prototype, not a key.
  Object.defineProperty(obj, k, { value: v, enumerable: true, writable: true, configurable: true });
}
function randValue(depth) {
  const scalarOnly = depth >= 4;
  const r = int(scalarOnly ? 4 : 7);
  switch (r) {
    case 0: return chance(0.5) ? null : chance(0.5);
    case 1: return randNumber();
    case 2: case 3: return randString();
    case 4: case 5: {
      const n = chance(0.15) ? 0 : int(5);
      return Array.from({ length: n }, () => randValue(depth + 1));
    }
    default: return randObject(depth + 1, chance(0.15) ? 0 : int(6));
  }
}
function randObject(depth, n) {
  const o = {};
  for (let i = 0; i < n; i++) {
    const k = randKey();
    if (!Object.prototype.hasOwnProperty.call(o, k)) defineKey(o, k, randValue(depth));
  }
  return o;
}

// ---------------------------------------------------------------------------
// Input text for the Rust side. `JSON.stringify` would turn -0 into 0 and
// always print the shortest number form, so write the text ourselves: numbers
// in varied but equivalent spellings (the Rust parser must land on the same
// double), keys in random (unsorted) order, and -0 kept as "-0".

function numberSpellings(x) {
  const out = [];
  if (Object.is(x, -0)) return ['-0', '-0.0', '-0e0', '-0E+00'];
  const s = String(x);
  out.push(s, x.toExponential(), x.toPrecision(17), x.toExponential().replace('e', 'E'), s.replace('e+', 'e'));
  if (Number.isInteger(x) && Math.abs(x) < 1e30) {
    const big = BigInt(x).toString(); // the double's exact decimal value
    out.push(big);
    if (Math.abs(x) < 1e17) out.push(big + '.0');
  }
  return out.filter((t) => {
    try {
      return Object.is(JSON.parse(t), x);
    } catch {
      return false;
    }
  });
}
function writeInput(v) {
  if (v === null || typeof v === 'boolean' || typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number') return pick(numberSpellings(v));
  if (Array.isArray(v)) return '[' + v.map(writeInput).join(',') + ']';
  const keys = Object.keys(v);
  for (let i = keys.length - 1; i > 0; i--) {
    const j = int(i + 1);
    [keys[i], keys[j]] = [keys[j], keys[i]];
  }
  return '{' + keys.map((k) => JSON.stringify(k) + ':' + writeInput(v[k])).join(',') + '}';
}

/** Deep equality with Object.is on scalars (so -0 !== 0). */
function sameValue(a, b) {
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return Object.is(a, b);
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a), kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && sameValue(a[k], b[k]));
}

// Hand-picked inputs given as raw JSON text (what JS's JSON.parse makes of them
// is what the Rust parser must make of them).
const HANDPICKED_TEXTS = [
  '{}', '[]', '{"a":{}}', '[[],{}]', 'null', 'true', '""', '0', '-0', '-0.0',
  '{"b":1,"a":2}', '{"10":1,"9":2,"a":3,"1":4}', '{"__proto__":1,"constructor":2}',
  '{"\\uff21":1,"\\ud83d\\ude00":2,"\\ue000":3}', '{"a\\u0000":1,"a":2,"aa":3}',
  '9007199254740993', '-9007199254740993', '18446744073709551615', '18446744073709551616',
  '-9223372036854775808', '-9223372036854775809', '123456789012345678901234567890',
  '0.1000000000000000055511151231257827', '1e21', '1E21', '1e+21', '100000000000000000000',
  '1000000000000000000000', '1e-7', '0.0000001', '0.000001', '1.5e-7', '5e-324', '1e-400',
  '1.7976931348623157e308', '2.2250738585072011e-308', '4.35', '0.30000000000000004',
  '"\\u0000\\u001f\\u007f\\u0080\\u2028\\u2029\\/"', '"\\ud834\\udd1e"', '"tab\\there\\r\\n"',
  '{"z":[1,-0,0.5,{"y":null,"x":[true,false]}],"a":"é"}',
];

// ---------------------------------------------------------------------------
// Realistic documents.

const FS_IDS = [sha256('0123456789abcdef0123456789abcdef'), sha256('host-b'), 'fs-sandbox-42'];
const PATHS = [
  '/work/proj/src/main.ts', '/work/proj/README.md', '/work/proj/Makefile', '/home/u/.bashrc',
  '/work/proj/archive.tar.gz', '/work/proj/a.', '/work/proj/..a', '/work/proj/...b', '/work/proj/x.test.ts',
  '/home/ü/日本語/ノート.md', '/srv/data/😀 emoji.json', '/tmp/with space/file.TXT', '/work/proj/.env.local',
  '/work/proj/src/lib.rs', '/work/proj/weird"quote\\back.py', '/', '/work/proj/no_ext',
];
const SNIPPETS = [
  'export function add(a: number, b: number) {\n  return a + b;\n}\n',
  '# Title\n\nSome *markdown* with émojis 😀 and CJK 中文.\n',
  'line one\r\nline two\r\n',
  '\ufeffBOM first\n',
  '',
  'tab\tand\u0000nul? no: that one is a control char \u0001\n',
  'fn main() {\n    println!("{}", "\\u{1F600}");\n}\n',
  '{"json": [1, 2.5, -0, 1e21]}\n',
];
const randContent = () => (chance(0.5) ? pick(SNIPPETS) : pick(SNIPPETS) + randString(40));
const randHex = (n) => Array.from({ length: n }, () => int(16).toString(16)).join('');

function fileVector() {
  const source = { type: 'filesystem', filesystemId: pick(FS_IDS), path: chance(0.7) ? pick(PATHS) : pick(PATHS) + randString(3) };
  const id = identityHash('file', source);
  const kind = pick(['text', 'text', 'text', 'binary', 'non_utf8', 'too_large', 'stub', 'deleted']);
  let content = null, bytes = null, payload;
  if (kind === 'text') {
    content = randContent();
    bytes = Buffer.from(content, 'utf8');
    payload = { kind, content, size_bytes: bytes.length };
  } else if (kind === 'binary' || kind === 'non_utf8' || kind === 'too_large') {
    const len = 1 + int(64);
    bytes = Buffer.from(Array.from({ length: len }, () => int(256)));
    if (kind === 'binary') bytes[int(len)] = 0;
    if (kind === 'non_utf8') bytes[0] = 0xff; // never valid UTF-8
    const withHash = kind !== 'too_large' || chance(0.5);
    payload = { kind: 'omitted', reason: kind, bytes_hex: bytes.toString('hex'), size_bytes: len, hashed: withHash };
  } else {
    payload = { kind };
  }
  const file_hash = payload.kind === 'text' || (payload.kind === 'omitted' && payload.hashed) ? fileHash(bytes) : null;
  const doc = {
    'xt/id': id,
    type: 'file',
    source,
    content,
    file_hash,
    file_type: path.extname(source.path).slice(1),
    char_count: content === null ? 0 : content.length, // UTF-16 code units
  };
  return { kind: 'file', source, payload, expected: { 'xt/id': id, file_type: doc.file_type, char_count: doc.char_count, ...hashesOf('file', doc) } };
}

const TOOLS = ['read', 'bash', 'grep', 'ls', 'edit', 'write', 'find'];
function toolcallVector(i) {
  const session = pick(['s1', 'sess-😀', 'a/b']);
  const id = `toolcall:${session}:${pick(['call_', 'toolu_', ''])}${randHex(8)}:${i}`;
  const args = chance(0.5) ? { path: pick(PATHS), offset: int(100), limit: chance(0.5) ? null : randNumber() } : randObject(1, int(5));
  const fields = {
    content: randContent(),
    tool: pick(TOOLS),
    args,
    status: pick(['ok', 'fail']),
    chat_ref: `chat:${session}`,
  };
  if (chance(0.5)) fields.args_display = randString(20);
  if (chance(0.5)) fields.file_refs = Array.from({ length: int(4) }, () => sha256(randString(5)));
  const doc = { 'xt/id': id, type: 'toolcall', source: null, file_hash: null, ...fields };
  return { kind: 'toolcall', id, fields, expected: { 'xt/id': id, ...hashesOf('toolcall', doc) } };
}

function assignedVector(type, i) {
  const sid = pick(['s1', 'sess-é', `x${i}`, '😀']);
  const id = `${type}:${sid}`;
  let content, fields;
  if (type === 'chat') {
    const turns = Array.from({ length: int(4) }, () => ({
      user: randString(20),
      assistant: randContent(),
      toolcall_ids: Array.from({ length: int(3) }, () => `toolcall:${sid}:${randHex(6)}`),
      meta: randObject(2, int(3)),
    }));
    content = chance(0.3) ? '' : randContent();
    fields = {
      turns,
      session_ref: `session:${sid}`,
      turn_count: turns.length,
      toolcall_refs: turns.flatMap((t) => t.toolcall_ids),
    };
  } else if (type === 'system_prompt') {
    content = 'You are a coding agent.\n' + randString(30);
    fields = {};
  } else {
    const ids = () => Array.from({ length: int(5) }, () => (chance(0.5) ? sha256(randString(4)) : `toolcall:${sid}:${randHex(6)}`));
    content = null;
    fields = {
      session_id: sid,
      chat_ref: `chat:${sid}`,
      system_prompt_ref: `system_prompt:${sid}`,
      session_index: ids(),
      metadata_pool: ids(),
      active_set: ids(),
      pinned_set: ids(),
    };
  }
  const doc = { 'xt/id': id, type, source: null, file_hash: null, content, ...fields };
  return { kind: type, id, content, fields, expected: { 'xt/id': id, ...hashesOf(type, doc) } };
}

// ---------------------------------------------------------------------------

function generate() {
  state = SEED >>> 0;
  const stable = [];
  const add = (input) => {
    const value = JSON.parse(input);
    const s = stableStringify(value);
    stable.push({ input, stable: s, sha256: sha256(s) });
  };
  for (const t of HANDPICKED_TEXTS) add(t);
  for (const x of SPECIAL_NUMBERS) for (const t of numberSpellings(x)) add(t);
  for (let i = 0; i < RANDOM_DOCS; i++) {
    const v = chance(0.9) ? randObject(0, int(7)) : randValue(0);
    const input = writeInput(v);
    // The text must mean exactly v to JS, -0 included.
    if (!sameValue(JSON.parse(input), v)) throw new Error(`bad input text ${input}`);
    add(input);
  }

  const file_type = [...PATHS, 'a.b/', '/a/b.c//', '..', '.', 'x', '.x.y'].map((p) => ({ path: p, file_type: path.extname(p).slice(1) }));
  const char_count = ['', 'abc', 'é', 'e\u0301', '😀', '𝄞x', '中文', '\u{10ffff}\u0000'].map((c) => ({ content: c, char_count: c.length }));

  const documents = [];
  for (let i = 0; i < 200; i++) documents.push(fileVector());
  for (let i = 0; i < 120; i++) documents.push(toolcallVector(i));
  for (let i = 0; i < 30; i++) documents.push(assignedVector('chat', i));
  for (let i = 0; i < 20; i++) documents.push(assignedVector('system_prompt', i));
  for (let i = 0; i < 30; i++) documents.push(assignedVector('session', i));

  // One vector per line: reviewable diffs, small file.
  const lines = (xs) => xs.map((x) => '    ' + JSON.stringify(x)).join(',\n');
  return (
    '{\n' +
    `  "about": "Generated by scripts/gen-hash-vectors.mjs (seed ${SEED}); do not edit by hand.",\n` +
    `  "stable": [\n${lines(stable)}\n  ],\n` +
    `  "file_type": [\n${lines(file_type)}\n  ],\n` +
    `  "char_count": [\n${lines(char_count)}\n  ],\n` +
    `  "documents": [\n${lines(documents)}\n  ]\n` +
    '}\n'
  );
}

const text = generate();
if (process.argv.includes('--check')) {
  let old = '';
  try {
    old = readFileSync(OUT, 'utf8');
  } catch {}
  if (old !== text) {
    console.error(`${path.relative(ROOT, OUT)} is stale: run node scripts/gen-hash-vectors.mjs`);
    process.exit(1);
  }
  console.log(`${path.relative(ROOT, OUT)} is up to date`);
} else {
  mkdirSync(path.dirname(OUT), { recursive: true });
  writeFileSync(OUT, text);
  const count = (text.match(/\n    /g) || []).length;
  console.log(`wrote ${path.relative(ROOT, OUT)}: ${count} vectors, ${(text.length / 1024).toFixed(0)} KiB`);
}
