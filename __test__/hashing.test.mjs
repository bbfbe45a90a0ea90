// implementation-plan §2 (five hashes) and the spec README's stable
// serialisation: the addon must agree byte for byte with the independent JS
// implementation that generated the shared vectors.
import { describe, test, expect } from 'vitest';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { scm, ROOT, expectCode } from './helpers.mjs';

const VECTORS = JSON.parse(
  readFileSync(path.join(ROOT, 'crates/scm-core/tests/fixtures/hash-vectors.json'), 'utf8'),
);

const METADATA_FIELDS = {
  file: ['file_type', 'char_count'],
  toolcall: ['tool', 'args', 'args_display', 'status', 'chat_ref', 'file_refs'],
  chat: ['turns', 'session_ref', 'turn_count', 'toolcall_refs'],
  system_prompt: [],
  session: ['session_id', 'chat_ref', 'system_prompt_ref', 'session_index', 'metadata_pool', 'active_set', 'pinned_set'],
};

describe('stable serialisation', () => {
  test(`matches all ${VECTORS.stable.length} shared vectors (sorted keys, JSON.stringify scalars)`, () => {
    const failures = [];
    for (const v of VECTORS.stable) {
      const got = scm.stableStringify(JSON.parse(v.input));
      if (got !== v.stable) failures.push({ input: v.input, expected: v.stable, got });
    }
    expect(failures).toEqual([]);
  });

  test('skips undefined keys and turns undefined array items into null, as JSON.stringify does', () => {
    expect(scm.stableStringify({ b: undefined, a: [undefined, NaN, -0] })).toBe('{"a":[null,null,0]}');
  });

  test('a value JSON cannot represent is an INVALID_ARGUMENT', async () => {
    await expectCode(() => scm.stableStringify(undefined), 'INVALID_ARGUMENT');
  });
});

describe('the five hashes', () => {
  test('stable vectors: sha256 of the stable form equals fileHash of it', () => {
    for (const v of VECTORS.stable.slice(0, 200)) expect(scm.fileHash(v.stable)).toBe(v.sha256);
  });

  test(`every document vector (${VECTORS.documents.length}) gets identical identity, content, metadata and object hashes`, () => {
    const failures = [];
    for (const d of VECTORS.documents) {
      const e = d.expected;
      const type = d.kind;
      let identity, file, content, meta;
      if (type === 'file') {
        identity = scm.identityHash('file', d.source);
        const p = d.payload;
        if (p.kind === 'text') {
          file = scm.fileHash(p.content);
          content = scm.contentHash(p.content);
        } else if (p.kind === 'omitted' && p.hashed) {
          file = scm.fileHash(Buffer.from(p.bytes_hex, 'hex'));
          content = scm.contentHash(null);
        } else {
          file = null;
          content = scm.contentHash(null);
        }
        meta = { file_type: e.file_type, char_count: e.char_count };
      } else {
        identity = scm.identityHash(type, null, d.id);
        file = null;
        content = scm.contentHash(d.content ?? d.fields?.content ?? null);
        const src = { ...d.fields };
        meta = {};
        for (const f of METADATA_FIELDS[type]) if (src[f] !== undefined) meta[f] = src[f];
      }
      const metadata = scm.metadataHash(meta);
      const got = {
        identity_hash: identity,
        file_hash: file,
        content_hash: content,
        metadata_hash: metadata,
        object_hash: scm.objectHash(file, content, metadata),
        metadata_stable: scm.stableStringify(meta),
      };
      const want = {
        identity_hash: e.identity_hash,
        file_hash: e.file_hash,
        content_hash: e.content_hash,
        metadata_hash: e.metadata_hash,
        object_hash: e.object_hash,
        metadata_stable: e.metadata_stable,
      };
      if (JSON.stringify(got) !== JSON.stringify(want)) failures.push({ doc: d, got, want });
    }
    expect(failures.slice(0, 3)).toEqual([]);
  });

  test('a sourced object id is its identity hash; an unsourced one is the assigned id', () => {
    const file = VECTORS.documents.find((d) => d.kind === 'file');
    expect(scm.identityHash('file', file.source)).toBe(file.expected['xt/id']);
  });

  test('fileHash hashes raw bytes: Buffer, Uint8Array and UTF-8 string agree', () => {
    const s = 'héllo 😀';
    const buf = Buffer.from(s, 'utf8');
    expect(scm.fileHash(buf)).toBe(scm.fileHash(s));
    expect(scm.fileHash(new Uint8Array(buf))).toBe(scm.fileHash(s));
    expect(scm.contentHash(null)).toBeNull();
  });

  test('an unsourced identity without an assigned id is an INVALID_ARGUMENT', async () => {
    await expectCode(() => scm.identityHash('chat', null), 'INVALID_ARGUMENT');
    await expectCode(() => scm.fileHash(42), 'INVALID_ARGUMENT');
  });

  test('defaultFilesystemId is a stable sha256', () => {
    const id = scm.defaultFilesystemId();
    expect(id).toMatch(/^[0-9a-f]{64}$/);
    expect(scm.defaultFilesystemId()).toBe(id);
  });
});
