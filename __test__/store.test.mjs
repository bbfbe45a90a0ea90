// The store contract (store/mod.rs) through the addon, on the embedded store
// and on a real XTDB node: atomic submits visible on return, versions by tx
// id, compare-and-set, and coded errors.
import { describe, test, expect } from 'vitest';
import net from 'node:net';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { scm, tempDir, uid, describeStores, expectCode } from './helpers.mjs';

describeStores('store', ({ kind, options }) => {
  const open = () => scm.openStore(options());

  test('kind names the backend', async () => {
    expect((await open()).kind).toBe(kind);
  });

  test('a submitted document is readable as soon as submit resolves (read-your-writes)', async () => {
    const s = await open();
    const id = uid('doc');
    const doc = { 'xt/id': id, type: 'file', content: 'héllo 😀\n', n: 1.5, list: [1, 'a', null], nested: { k: true }, nothing: null };
    const receipt = await s.submit([{ op: 'put', doc }]);
    expect(receipt).toMatchObject({ committed: true });
    expect(Number.isInteger(receipt.txId)).toBe(true);
    expect(typeof receipt.txTime).toBe('string');
    expect(await s.get(id)).toEqual(doc);
  });

  test('get of an unknown id is null; getMany leaves unknown ids out', async () => {
    const s = await open();
    const a = uid('a');
    await s.submit([{ op: 'put', doc: { 'xt/id': a, v: 1 } }]);
    expect(await s.get(uid('missing'))).toBeNull();
    const many = await s.getMany([a, uid('missing')]);
    expect(many).toEqual([{ 'xt/id': a, v: 1 }]);
  });

  test('history lists every version oldest first; getAsOf({txId}) returns the version of that time', async () => {
    const s = await open();
    const id = uid('v');
    const r1 = await s.submit([{ op: 'put', doc: { 'xt/id': id, v: 1 } }]);
    const r2 = await s.submit([{ op: 'put', doc: { 'xt/id': id, v: 2 } }]);
    expect(r2.txId).toBeGreaterThan(r1.txId);
    const h = await s.history(id);
    expect(h.map((x) => x.doc.v)).toEqual([1, 2]);
    expect(h.map((x) => x.txId)).toEqual([r1.txId, r2.txId]);
    expect(await s.getAsOf(id, { txId: r1.txId })).toEqual({ 'xt/id': id, v: 1 });
    expect(await s.getAsOf(id, { txId: r2.txId })).toEqual({ 'xt/id': id, v: 2 });
    expect(await s.getAsOf(id, { txId: r1.txId - 1 })).toBeNull();
    expect(await s.getAsOf(id, { txTime: h[1].txTime })).toEqual({ 'xt/id': id, v: 2 });
    expect(await s.history(uid('none'))).toEqual([]);
  });

  test('a failed match aborts the whole transaction; match null creates only if absent', async () => {
    const s = await open();
    const id = uid('cas');
    const other = uid('other');
    const created = await s.submit([{ op: 'match', id, expected: null }, { op: 'put', doc: { 'xt/id': id, v: 1 } }]);
    expect(created.committed).toBe(true);
    const again = await s.submit([
      { op: 'match', id, expected: null },
      { op: 'put', doc: { 'xt/id': id, v: 99 } },
      { op: 'put', doc: { 'xt/id': other, v: 1 } },
    ]);
    expect(again.committed).toBe(false);
    expect(await s.get(id)).toEqual({ 'xt/id': id, v: 1 });
    expect(await s.get(other)).toBeNull();
    const cas = await s.submit([{ op: 'match', id, expected: { 'xt/id': id, v: 1 } }, { op: 'put', doc: { 'xt/id': id, v: 2 } }]);
    expect(cas.committed).toBe(true);
  });

  test('latestTxId advances with each submit; submittedTxCount counts this handle only', async () => {
    const s = await open();
    const before = s.submittedTxCount();
    const r = await s.submit([{ op: 'put', doc: { 'xt/id': uid('c'), v: 1 } }]);
    expect(await s.latestTxId()).toBeGreaterThanOrEqual(r.txId);
    expect(s.submittedTxCount()).toBe(before + 1);
    await s.get(uid('x'));
    expect(s.submittedTxCount()).toBe(before + 1);
  });

  test('two handles on one database see each other’s writes', async () => {
    const opts = options();
    const [a, b] = [await scm.openStore(opts), await scm.openStore(opts)];
    const id = uid('shared');
    await a.submit([{ op: 'put', doc: { 'xt/id': id, from: 'a' } }]);
    expect(await b.get(id)).toEqual({ 'xt/id': id, from: 'a' });
    expect(b.submittedTxCount()).toBe(0);
  });

  test('malformed operations are INVALID_ARGUMENT and write nothing', async () => {
    const s = await open();
    await expectCode(s.submit([{ op: 'put', doc: { v: 1 } }]), 'INVALID_ARGUMENT');
    await expectCode(s.submit([{ op: 'delete', id: 'x' }]), 'INVALID_ARGUMENT');
    await expectCode(s.submit({ op: 'put' }), 'INVALID_ARGUMENT');
    await expectCode(s.getAsOf('x', {}), 'INVALID_ARGUMENT');
    await expectCode(s.getAsOf('x', { txId: 1, txTime: '2020-01-01T00:00:00Z' }), 'INVALID_ARGUMENT');
    await expectCode(s.get(42), 'INVALID_ARGUMENT');
    expect(s.submittedTxCount()).toBe(0);
  });
});

describe('openStore errors', () => {
  test('an unknown kind or a missing url is INVALID_ARGUMENT', async () => {
    await expectCode(scm.openStore({ kind: 'postgres' }), 'INVALID_ARGUMENT');
    await expectCode(scm.openStore({ kind: 'xtdb' }), 'INVALID_ARGUMENT');
    await expectCode(scm.openStore(), 'INVALID_ARGUMENT');
  });

  test('an unreachable XTDB is STORE_UNAVAILABLE within the timeout', async () => {
    // A port that was just free: nothing listens there.
    const port = await new Promise((resolve) => {
      const srv = net.createServer().listen(0, '127.0.0.1', () => {
        const p = srv.address().port;
        srv.close(() => resolve(p));
      });
    });
    const t0 = Date.now();
    await expectCode(scm.openStore({ kind: 'xtdb', url: `http://127.0.0.1:${port}`, timeoutMs: 2000 }), 'STORE_UNAVAILABLE');
    expect(Date.now() - t0).toBeLessThan(2000 + 1500);
  });

  test('an XTDB that accepts but never answers fails within the timeout', async () => {
    const sockets = [];
    const srv = net.createServer((sock) => sockets.push(sock)); // never replies
    await new Promise((r) => srv.listen(0, '127.0.0.1', r));
    try {
      const t0 = Date.now();
      const err = await scm.openStore({ kind: 'xtdb', url: `http://127.0.0.1:${srv.address().port}`, timeoutMs: 1000 }).catch((e) => e);
      expect(['STORE_UNAVAILABLE', 'STORE_TIMEOUT']).toContain(err.code);
      expect(Date.now() - t0).toBeLessThan(1000 + 1500);
    } finally {
      for (const s of sockets) s.destroy();
      srv.close();
    }
  });

  test('an embedded path that is not a store is STORE_UNAVAILABLE', async () => {
    const dir = tempDir();
    const junk = path.join(dir, 'junk.sqlite');
    writeFileSync(junk, 'this is not sqlite'.repeat(100));
    await expectCode(scm.openStore({ kind: 'embedded', path: junk }), 'STORE_UNAVAILABLE');
    await expectCode(scm.openStore({ kind: 'embedded', path: dir }), 'STORE_UNAVAILABLE');
  });
});
