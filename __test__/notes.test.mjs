// Notes, links, backlinks and expand (issue 12 items 1–2) through the facade, on both stores.
import { test, expect } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { scm, tempDir, uid, describeStores, expectCode, msg } from './helpers.mjs';

const { ContextManager } = scm;

const NOTE = '---\ntitle: Plan\ntags: [plan]\n---\n# Plan\n\nSee [[b]] and [lib](src/lib.rs), #todo.\n';

describeStores('notes', ({ options }) => {
  async function setup() {
    const ws = tempDir('scm-ws-');
    const store = options();
    const open = (p) => ContextManager.open({ sessionId: uid(p), workspaceRoot: ws, store, layout: 'spec' });
    const write = (rel, text) => {
      mkdirSync(path.dirname(path.join(ws, rel)), { recursive: true });
      writeFileSync(path.join(ws, rel), text);
    };
    return { ws, open, write };
  }

  test('a note is stored with frontmatter, tags and links; its targets show as metadata lines', async () => {
    const { open, write } = await setup();
    const cm = await open('note');
    write('notes/b.md', 'B-BODY\n');
    write('notes/src/lib.rs', 'LIB-BODY\n');
    write('notes/a.md', NOTE);
    expect((await cm.read('notes/a.md')).ok).toBe(true);
    const a = cm.resolve('notes/a.md').objectId;
    const b = cm.resolve('notes/b.md').objectId;
    const doc = await cm.getObject(a);
    expect(doc.frontmatter).toEqual({ title: 'Plan', tags: ['plan'] });
    expect(doc.tags).toEqual(['plan', 'todo']);
    expect(doc.link_ids).toEqual([b, cm.resolve('notes/src/lib.rs').objectId]);
    expect(doc.links[0]).toMatchObject({ target: b, kind: 'wikilink', field: 'content', line: 7 });

    const ctx = JSON.stringify(await cm.transformContext([msg.user('go')]));
    expect(ctx).toContain(`- link id=${b} file path=`);
    expect(ctx).toContain('[unread]');
    expect(ctx).not.toContain('B-BODY');

    expect((await cm.backlinks(b)).backlinks.map((x) => x.id)).toEqual([a]);
    const r = await cm.expand('notes/a.md', { types: ['note'] });
    expect(r.items.map((i) => [i.id, i.outcome])).toEqual([[b, 'activated']]);
    expect(r.text).toContain('expanded 1 links');
    const after = JSON.stringify(await cm.transformContext([msg.user('go')]));
    expect(after).toContain('B-BODY');
    expect(after).not.toContain('LIB-BODY');
    await expectCode(() => cm.expand(a, { positions: [0] }), 'INVALID_ARGUMENT');
    await expectCode(() => cm.expand(a, { nope: 1 }), 'INVALID_ARGUMENT');
    await cm.close();
  });

  test('cache layout: expand lists and loads the files a command found, and an ended session\'s tool calls', async () => {
    const { ws, write } = await setup();
    const store = options();
    const openCache = (p) => ContextManager.open({ sessionId: uid(p), workspaceRoot: ws, store });
    write('src/a.ts', 'A-CONTENT\n');
    write('src/b.ts', 'B-CONTENT\n');
    const s1 = await openCache('cmd');
    const out = 'src/a.ts\nsrc/b.ts';
    await s1.observeBash('grep -rl CONTENT src', out);
    const calls = [msg.user('go'), msg.assistant([{ id: 'c1', name: 'bash', arguments: { command: 'grep -rl CONTENT src' } }]), msg.result('c1', 'bash', out)];
    await s1.transformContext(calls);
    const listed = await s1.expand('t1', { metadata: true });
    expect(listed.items.map((i) => [i.id, i.outcome])).toEqual([
      [s1.resolve('src/a.ts').objectId, 'listed'],
      [s1.resolve('src/b.ts').objectId, 'listed'],
    ]);
    expect(listed.items[1].message).toMatch(/^position 2: file type=ts chars=0 \[unread\]$/);
    expect(listed.text).toContain('metadata only');
    const loaded = await s1.expand('t1', { path: '*b.ts' });
    expect(loaded.items.map((i) => i.outcome)).toEqual(['activated']);
    const chat = `chat:${s1.sessionId}`;
    await s1.close();

    const s2 = await openCache('later');
    const list = await s2.expand(chat, { metadata: true });
    expect(list.items.map((i) => i.message)).toEqual(['position 1: toolcall tool=bash status=ok chars=17 args=grep -rl CONTENT src']);
    expect((await s2.expand(chat, { positions: [1] })).items.map((i) => i.outcome)).toEqual(['activated']);
    await expectCode(() => s2.expand(chat, { metadata: 'yes' }), 'INVALID_ARGUMENT');
    await s2.close();
  });

  test('a note of an ended session is found by search and expanded in a new one', async () => {
    const { open, write } = await setup();
    const tok = `quokka${Date.now()}${Math.floor(Math.random() * 1e6)}`;
    const s1 = await open('writer');
    write('notes/b.md', 'B-BODY\n');
    write('notes/mem.md', `# ${tok}\n\n[[b]]\n`);
    expect((await s1.observeWrite('notes/mem.md')).ok).toBe(true);
    await s1.close();
    const s2 = await open('reader');
    const { hits } = await s2.search(tok);
    expect(hits).toHaveLength(1);
    expect((await s2.activate(hits[0].id)).ok).toBe(true);
    const ctx = JSON.stringify(await s2.transformContext([msg.user('go')]));
    expect(ctx).toContain(tok);
    expect(ctx).toContain(`- link id=${s2.resolve('notes/b.md').objectId}`);
    const r = await s2.expand(hits[0].id);
    expect(r.items[0].outcome).toBe('activated');
    await s2.close();
  });

  test('a link pinned to a version shows the pin in its line; expand shows that version and activates nothing', async () => {
    const { open, write } = await setup();
    const cm = await open('pins');
    write('notes/b.md', 'B-V1\n');
    expect((await cm.read('notes/b.md')).ok).toBe(true);
    write('notes/b.md', 'B-V2\n');
    expect((await cm.observeEdit('notes/b.md')).ok).toBe(true);
    expect((await cm.deactivate('notes/b.md')).ok).toBe(true);
    const b = cm.resolve('notes/b.md').objectId;
    const [v1] = (await cm.versions(b)).versions;
    const prefix = v1.contentHash.slice(0, 8);
    expect((await cm.showVersion(b, prefix)).text).toContain('B-V1');
    write('notes/a.md', `old [[b@v1]], same [[b@${prefix}]], now [[b]], bad [[b@v7]]\n`);
    expect((await cm.read('notes/a.md')).ok).toBe(true);
    const a = cm.resolve('notes/a.md').objectId;
    const doc = await cm.getObject(a);
    expect(doc.links.map((l) => l.pin ?? null)).toEqual(['v1', prefix, null, 'v7']);
    const ctx = JSON.stringify(await cm.transformContext([msg.user('go')]));
    expect(ctx).toContain(' pinned=v1 [newer versions exist]');
    expect(ctx).toContain(' pinned=v7 [no such version]');

    const r = await cm.expand(a, { positions: [1, 4] });
    expect(r.items.map((i) => [i.outcome, i.pin])).toEqual([
      ['version shown', 'v1'],
      ['no such version', 'v7'],
    ]);
    expect(r.items[0].version).toContain('B-V1');
    expect(r.text).toContain('B-V1');
    expect(r.text).not.toContain('B-V2');
    const after = JSON.stringify(await cm.transformContext([msg.user('go')]));
    expect(after).not.toContain('B-V1');
    expect(after).not.toContain('B-V2');
    const plain = await cm.expand(a, { positions: [3] });
    expect(plain.items[0].outcome).toBe('activated');
    expect(JSON.stringify(await cm.transformContext([msg.user('go')]))).toContain('B-V2');
    await cm.close();
  });

  test('a note under a note folder, never read, is found by search in a new session; its changes are seen', async () => {
    const { ws, write } = await setup();
    const store = options();
    const tok = `wombat${Date.now()}${Math.floor(Math.random() * 1e6)}`;
    write('vault/deep/n.md', `# ${tok}\n\n[[other]]\n`);
    const openWith = (p, watch) =>
      ContextManager.open({ sessionId: uid(p), workspaceRoot: ws, store, layout: 'spec', noteFolders: ['vault'], watch });
    const s1 = await openWith('folder-1', true);
    const id = s1.resolve('vault/deep/n.md').objectId;
    expect((await s1.search(tok)).hits.map((h) => h.id)).toEqual([id]);
    expect((await s1.backlinks(s1.resolve('vault/deep/other.md').objectId)).backlinks.map((x) => x.id)).toEqual([id]);
    // Changed on disk while the session runs: the watcher writes a new version. Polled with a deadline: the
    // watcher's writes for objects outside the session have no completion signal.
    write('vault/deep/n.md', `# ${tok}x\n`);
    const deadline = Date.now() + 10_000;
    while ((await s1.search(`${tok}x`)).hits.length === 0) {
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((r) => setTimeout(r, 50));
    }
    await s1.close();
    // Changed while no session runs: a new session indexes it at start.
    write('vault/deep/n.md', `# ${tok}y\n`);
    const s2 = await openWith('folder-2', false);
    expect((await s2.search(`${tok}y`)).hits.map((h) => h.id)).toEqual([id]);
    expect((await s2.versions(id)).versions).toHaveLength(3);
    expect((await s2.activate(id)).ok).toBe(true);
    await s2.close();
    await expectCode(
      () => ContextManager.open({ sessionId: uid('bad'), workspaceRoot: ws, store, noteFolders: [''] }),
      'INVALID_ARGUMENT',
    );
  });
});
