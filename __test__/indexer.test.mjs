// SSOT §5.5 indexing protocol and implementation-plan §4 through the addon:
// created / unchanged (zero writes) / updated, discovery stubs that never
// overwrite, deletions as new versions, coded errors for unreadable paths.
import { test, expect } from 'vitest';
import { mkdirSync, writeFileSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { scm, tempDir, describeStores, expectCode, runNode, PKG } from './helpers.mjs';

describeStores('indexer', ({ kind, options }) => {
  async function setup() {
    const ws = tempDir('scm-ws-');
    const storeOptions = options();
    const store = await scm.openStore(storeOptions);
    const resolver = new scm.Resolver({ workspaceRoot: ws });
    const indexer = new scm.Indexer(store, resolver);
    return { ws, store, resolver, indexer, storeOptions };
  }

  test('first index creates the object: id = identity hash, five hashes, content', async () => {
    const { ws, store, resolver, indexer } = await setup();
    writeFileSync(path.join(ws, 'a.ts'), 'export const a = 1;\n');
    const r = await indexer.indexFile('a.ts');
    expect(r.action).toBe('created');
    expect(r.objectId).toBe(resolver.resolve('a.ts').objectId);
    expect(r.receipt).toMatchObject({ committed: true });
    expect(r.doc).toMatchObject({
      'xt/id': r.objectId,
      type: 'file',
      identity_hash: r.objectId,
      content: 'export const a = 1;\n',
      file_type: 'ts',
      char_count: 20,
      file_hash: scm.fileHash('export const a = 1;\n'),
      content_hash: scm.contentHash('export const a = 1;\n'),
    });
    expect(r.doc.object_hash).toBe(scm.objectHash(r.doc.file_hash, r.doc.content_hash, scm.metadataHash({ file_type: 'ts', char_count: 20 })));
    expect(await store.get(r.objectId)).toEqual(r.doc);
  });

  test('an unchanged file is one lookup and zero writes', async () => {
    const { ws, store, indexer } = await setup();
    writeFileSync(path.join(ws, 'b.md'), '# b\n');
    const first = await indexer.indexFile('b.md');
    const writes = store.submittedTxCount();
    const again = await indexer.indexFile(path.join(ws, 'b.md'));
    expect(again.action).toBe('unchanged');
    expect(again.receipt).toBeNull();
    expect(again.doc).toEqual(first.doc);
    expect(store.submittedTxCount()).toBe(writes);
    expect(await store.history(first.objectId)).toHaveLength(1);
  });

  test('a changed file gets a new version; history keeps the old one', async () => {
    const { ws, store, indexer } = await setup();
    const f = path.join(ws, 'c.txt');
    writeFileSync(f, 'one');
    const r1 = await indexer.indexFile('c.txt');
    writeFileSync(f, 'two');
    const r2 = await indexer.indexFile('c.txt');
    expect(r2.action).toBe('updated');
    expect(r2.objectId).toBe(r1.objectId);
    const h = await store.history(r1.objectId);
    expect(h.map((v) => v.doc.content)).toEqual(['one', 'two']);
    expect(await store.getAsOf(r1.objectId, { txId: r1.receipt.txId })).toEqual(r1.doc);
  });

  test('binary and oversized files are metadata-only but still hashed', async () => {
    const { ws, store, resolver } = await setup();
    const indexer = new scm.Indexer(store, resolver, { maxContentBytes: 8 });
    writeFileSync(path.join(ws, 'bin.dat'), Buffer.from([0, 1, 2, 3]));
    writeFileSync(path.join(ws, 'big.txt'), 'x'.repeat(100));
    const bin = await indexer.indexFile('bin.dat');
    expect(bin.doc).toMatchObject({ content: null, content_hash: null, char_count: 0, content_omitted: 'binary' });
    expect(bin.doc.file_hash).toBe(scm.fileHash(Buffer.from([0, 1, 2, 3])));
    const big = await indexer.indexFile('big.txt');
    expect(big.doc).toMatchObject({ content: null, content_omitted: 'too_large' });
  });

  test('discovery writes stubs (null content and hashes) and never overwrites an existing object', async () => {
    const { ws, store, indexer } = await setup();
    writeFileSync(path.join(ws, 'known.ts'), 'known');
    const known = await indexer.indexFile('known.ts');
    const writes = store.submittedTxCount();
    const res = await indexer.discoverFiles(['known.ts', 'new1.ts', 'sub/new2.ts']);
    expect(res.map((r) => r.action)).toEqual(['unchanged', 'created', 'created']);
    expect(res[0].doc).toEqual(known.doc);
    expect(res[1].doc).toMatchObject({ content: null, file_hash: null, content_hash: null, state: 'stub', char_count: 0 });
    expect(store.submittedTxCount()).toBe(writes + 1); // one batched write
    const again = await indexer.discoverFiles(['new1.ts']);
    expect(again[0].action).toBe('unchanged');
    expect(store.submittedTxCount()).toBe(writes + 1);
  });

  test('a stub is upgraded by indexing the file', async () => {
    const { ws, indexer } = await setup();
    const [stub] = await indexer.discoverFiles(['later.ts']);
    writeFileSync(path.join(ws, 'later.ts'), 'now here');
    const r = await indexer.indexFile('later.ts');
    expect(r.objectId).toBe(stub.objectId);
    expect(r.action).toBe('updated');
    expect(r.doc.content).toBe('now here');
  });

  test('a confirmed deletion is a new version with null content and hashes; history is kept', async () => {
    const { ws, store, indexer } = await setup();
    const f = path.join(ws, 'gone.ts');
    writeFileSync(f, 'bye');
    const r1 = await indexer.indexFile('gone.ts');
    unlinkSync(f);
    const del = await indexer.indexFileDeletion('gone.ts');
    expect(del.objectId).toBe(r1.objectId);
    expect(del.doc).toMatchObject({ content: null, file_hash: null, content_hash: null, state: 'deleted' });
    expect((await store.history(r1.objectId)).map((v) => v.doc.state)).toEqual(['present', 'deleted']);
  });

  test('a missing file is FILE_NOT_FOUND, a directory NOT_A_FILE; nothing is written', async () => {
    const { ws, store, indexer } = await setup();
    mkdirSync(path.join(ws, 'dir'));
    await expectCode(indexer.indexFile('nope.ts'), 'FILE_NOT_FOUND');
    await expectCode(indexer.indexFile('dir'), 'NOT_A_FILE');
    await expectCode(indexer.indexFile(''), 'INVALID_ARGUMENT');
    expect(store.submittedTxCount()).toBe(0);
  });

  test('another process indexing the same file derives the same object (and writes nothing new)', async () => {
    const { ws, indexer, storeOptions } = await setup();
    writeFileSync(path.join(ws, 'shared.ts'), 'same bytes');
    const mine = await indexer.indexFile('shared.ts');
    const script = `
      const scm = require(${PKG});
      (async () => {
        const store = await scm.openStore(JSON.parse(process.env.STORE_OPTS));
        const ix = new scm.Indexer(store, new scm.Resolver({ workspaceRoot: ${JSON.stringify(ws)} }));
        const r = await ix.indexFile('shared.ts');
        console.log(JSON.stringify({ objectId: r.objectId, action: r.action, writes: store.submittedTxCount() }));
      })().catch((e) => { console.error(e.code, e.message); process.exit(1); });`;
    const out = await runNode(script, { env: { STORE_OPTS: JSON.stringify(storeOptions) } });
    expect(out.code, out.stderr).toBe(0);
    expect(JSON.parse(out.stdout)).toEqual({ objectId: mine.objectId, action: 'unchanged', writes: 0 });
  });

  test('indexer arguments are checked', async () => {
    await expectCode(() => new scm.Indexer({}, {}), 'INVALID_ARGUMENT');
    expect(kind).toMatch(/embedded|xtdb/);
  });
});
