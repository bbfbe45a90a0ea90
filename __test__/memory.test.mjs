// Memory across sessions (issue 12) through the facade, on both stores:
// older versions on request (memory-system-v0 §7.3).
import { describe, test, expect } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { scm, tempDir, uid, describeStores, expectCode, msg } from './helpers.mjs';

const { ContextManager } = scm;

describeStores('memory', ({ options }) => {
  async function setup(extra = {}) {
    const ws = tempDir('scm-ws-');
    const cm = await ContextManager.open({ sessionId: uid('mem'), workspaceRoot: ws, store: options(), ...extra });
    const write = (rel, text) => {
      mkdirSync(path.dirname(path.join(ws, rel)), { recursive: true });
      writeFileSync(path.join(ws, rel), text);
    };
    return { ws, cm, write };
  }

  describe('older versions', () => {
    test('versions, showVersion and diff by path, id, number, tx id and latest', async () => {
      const { cm, write } = await setup();
      write('doc.md', 'alpha\nbeta\n');
      expect((await cm.read('doc.md')).ok).toBe(true);
      write('doc.md', 'alpha\nBETA\ngamma\n');
      expect((await cm.observeEdit('doc.md')).ok).toBe(true);
      await cm.flush();
      const id = cm.resolve('doc.md').objectId;

      const list = await cm.versions('doc.md');
      expect(list.id).toBe(id);
      expect(list.versions.map((v) => [v.version, v.size, v.state])).toEqual([
        [1, 11, 'present'],
        [2, 17, 'present'],
      ]);
      const history = await cm.history(id);
      expect(list.versions.map((v) => [v.txId, v.txTime, v.contentHash])).toEqual(
        history.map((h) => [h.txId, h.txTime, h.doc.content_hash]),
      );
      expect(list.text.split('\n')[0]).toBe(`${id}: 2 versions (oldest first)`);

      const v1 = await cm.showVersion(id, 1);
      expect(v1).toMatchObject({ id, version: 1, of: 2, txId: history[0].txId });
      expect(v1.doc.content).toBe('alpha\nbeta\n');
      expect(v1.text.endsWith('alpha\nbeta\n')).toBe(true);
      expect((await cm.showVersion(id, `tx:${history[0].txId}`)).version).toBe(1);
      expect((await cm.showVersion('doc.md', 'latest')).doc.content).toBe('alpha\nBETA\ngamma\n');

      const d = await cm.diff('doc.md', 1);
      expect(d.diff).toBe(
        `--- ${id}@v1 (tx ${history[0].txId})\n+++ ${id}@v2 (tx ${history[1].txId})\n` +
          '@@ -1,2 +1,3 @@\n alpha\n-beta\n+BETA\n+gamma\n',
      );
      expect(d.from.version).toBe(1);
      expect(d.to.version).toBe(2);
      await cm.close();
    });

    test('an older version never enters the context; the sets are untouched', async () => {
      const { cm, write } = await setup({ layout: 'spec' });
      write('a.txt', 'OLD-MARKER\n');
      await cm.read('a.txt');
      write('a.txt', 'NEW-MARKER\n');
      await cm.observeEdit('a.txt');
      await cm.flush();
      const before = cm.snapshot();
      await cm.showVersion('a.txt', 1);
      await cm.diff('a.txt', 1, 2);
      expect(cm.snapshot()).toEqual(before);
      const out = await cm.transformContext([msg.user('go')]);
      const text = JSON.stringify(out);
      expect(text).not.toContain('OLD-MARKER');
      expect(text).toContain('NEW-MARKER');
      await cm.close();
    });

    test('unknown objects and versions are coded errors', async () => {
      const { cm, write } = await setup();
      write('x.txt', 'x\n');
      await cm.read('x.txt');
      await cm.flush();
      await expectCode(cm.versions(uid('nothing')), 'UNKNOWN_OBJECT');
      await expectCode(cm.showVersion('x.txt', 5), 'UNKNOWN_OBJECT');
      await expectCode(cm.showVersion('x.txt', 'yesterday'), 'INVALID_ARGUMENT');
      await expectCode(cm.showVersion('x.txt', 0), 'INVALID_ARGUMENT');
      await expectCode(cm.diff('x.txt', {}), 'INVALID_ARGUMENT');
      await cm.close();
    });
  });

  describe('search over the whole store', () => {
    test('a second session finds the first one\'s note and toolcall, filters them, and activates the toolcall by id', async () => {
      const ws = tempDir('scm-ws-');
      const store = options();
      const tok = uid('zq').replace(/[^a-z0-9]/gi, '').toLowerCase();
      const s1 = await ContextManager.open({ sessionId: uid('one'), workspaceRoot: ws, store, layout: 'spec' });
      mkdirSync(path.join(ws, 'notes'), { recursive: true });
      writeFileSync(path.join(ws, 'notes/plan.md'), `# Plan\n${tok} ${tok} migration\n`);
      expect((await s1.read('notes/plan.md')).ok).toBe(true);
      await s1.transformContext([
        msg.user('run'),
        msg.assistant([{ id: 'c1', name: 'bash', arguments: { command: 'make' } }]),
        msg.result('c1', 'bash', `BUILD-OUTPUT ${tok}`),
      ]);
      await s1.close();

      const s2 = await ContextManager.open({ sessionId: uid('two'), workspaceRoot: ws, store, layout: 'spec' });
      const found = await s2.search(tok);
      expect(found.hits.map((h) => h.type).sort()).toEqual(['file', 'toolcall']);
      expect(found.hits[0]).toMatchObject({ type: 'file', path: path.join(ws, 'notes/plan.md') });
      expect(found.text.split('\n')[0]).toBe(`2 objects match "${tok}" (best first):`);
      const call = found.hits.find((h) => h.type === 'toolcall');
      expect(call).toMatchObject({ tool: 'bash', session: s1.sessionId });
      expect(call.snippet).toContain(`[${tok}]`);
      expect((await s2.search(tok, { types: ['toolcall'] })).hits.map((h) => h.id)).toEqual([call.id]);
      expect((await s2.search(tok, { sessions: [s2.sessionId] })).hits).toEqual([]);
      expect((await s2.search(tok, { limit: 1 })).hits).toHaveLength(1);
      await expectCode(s2.search('  '), 'INVALID_ARGUMENT');
      await expectCode(s2.search(tok, { bogus: 1 }), 'INVALID_ARGUMENT');

      const r = await s2.activate(call.id);
      expect(r).toMatchObject({ ok: true, id: call.id });
      expect(s2.snapshot().activeSet).toContain(call.id);
      const out = await s2.transformContext([msg.user('look')]);
      expect(JSON.stringify(out)).toContain('BUILD-OUTPUT');
      expect(await s2.activate(uid('nothing'))).toMatchObject({ ok: false, code: 'UNKNOWN_OBJECT' });
      await s2.close();
    });
  });
});
