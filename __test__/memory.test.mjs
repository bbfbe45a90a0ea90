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
});
