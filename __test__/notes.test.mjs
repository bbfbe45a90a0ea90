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
});
