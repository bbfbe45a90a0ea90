// SelfContextManager against the spec (issue 10, finding 7): SSOT §3.1 "Pinned set" (a pin only exempts an object
// from auto-collapse; an explicit deactivate hides it and keeps the pin; pin, deactivate and unpin survive a
// resume), no binary bytes in the context (SSOT §5.5 / plan §4: metadata only, marked binary), a blank session id
// is refused, `ls <dir>` output in a bash call resolves against that directory, and the snapshot and the active
// content follow a file changed on disk or written by another manager on the same store.
import { test, expect } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { scm, tempDir, uid, describeStores, msg, textOf } from './helpers.mjs';

const { SelfContextManager } = scm;

/** Poll `probe` until it returns true, at most `ms`: a watcher event has no API to await (it comes from the OS). */
async function eventually(probe, ms = 20_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await probe()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
}

const activeBlocks = (out) => out.map(textOf).filter((t) => t.startsWith('ACTIVE_CONTENT'));

describeStores('SelfContextManager (spec)', ({ kind, options }) => {
  const storeOpts = () => (kind === 'xtdb' ? { xtdbBaseUrl: options().url } : {});
  function make(ws, extra = {}, sessionId = uid('s')) {
    return new SelfContextManager({ sessionId, workspaceRoot: ws, ...storeOpts(), ...extra });
  }
  const write = (ws, rel, data) => {
    mkdirSync(path.dirname(path.join(ws, rel)), { recursive: true });
    writeFileSync(path.join(ws, rel), data);
  };

  test('pin only exempts from auto-collapse: it does not activate; deactivate hides a pinned object and keeps the pin; all of it survives a resume, as does a later unpin', async () => {
    const ws = tempDir('scm-ws-');
    write(ws, 'p.md', 'PINNED-BODY');
    const sessionId = uid('pin');
    const m = make(ws, { watch: false }, sessionId);
    const { id } = await m.read('p.md');
    expect(m.deactivate(id)).toMatchObject({ ok: true });
    expect(m.pin(id)).toMatchObject({ ok: true, id });
    let s = m.getSnapshot();
    expect(s.pinnedSet).toEqual(new Set([id]));
    expect(s.activeSet.has(id)).toBe(false);
    let out = await m.transformContext([msg.user('one')]);
    expect(activeBlocks(out).join('\n')).not.toContain('PINNED-BODY');

    // Active and pinned; an explicit deactivate hides it, the pin stays.
    expect(m.activate(id)).toMatchObject({ ok: true });
    out = await m.transformContext([msg.user('one'), msg.user('two')]);
    expect(activeBlocks(out).join('\n')).toContain('PINNED-BODY');
    expect(m.deactivate(id)).toMatchObject({ ok: true });
    s = m.getSnapshot();
    expect(s.activeSet.has(id)).toBe(false);
    expect(s.pinnedSet).toEqual(new Set([id]));
    out = await m.transformContext([msg.user('one'), msg.user('two'), msg.user('three')]);
    expect(activeBlocks(out).join('\n')).not.toContain('PINNED-BODY');
    await m.close();

    // Resume: pinned, not active.
    const m2 = make(ws, { watch: false }, sessionId);
    s = m2.getSnapshot();
    expect(s.pinnedSet).toEqual(new Set([id]));
    expect(s.activeSet.has(id)).toBe(false);
    out = await m2.transformContext([msg.user('one'), msg.user('two'), msg.user('three'), msg.user('four')]);
    expect(activeBlocks(out).join('\n')).not.toContain('PINNED-BODY');
    expect(m2.unpin(id)).toMatchObject({ ok: true });
    await m2.close();

    const m3 = make(ws, { watch: false }, sessionId);
    s = m3.getSnapshot();
    expect(s.pinnedSet).toEqual(new Set());
    expect(s.activeSet.has(id)).toBe(false);
    await m3.close();
  });

  test('a pinned active object outlives auto-collapse, across a resume', async () => {
    const ws = tempDir('scm-ws-');
    write(ws, 'keep.md', 'KEEP-BODY');
    const sessionId = uid('pin');
    const m = make(ws, { watch: false }, sessionId);
    const { id } = await m.read('keep.md');
    expect(m.pin(id)).toMatchObject({ ok: true });
    const t = [msg.user('go')];
    await m.transformContext(t);
    await m.close();
    const m2 = make(ws, { watch: false }, sessionId);
    // Four more turns with six tool outputs each: far past the 3-turn, 5-per-turn window.
    for (let turn = 0; turn < 4; turn++) {
      t.push(msg.user(`turn ${turn}`));
      const calls = Array.from({ length: 6 }, (_, k) => ({ id: `c${turn}-${k}`, name: 'bash', arguments: { command: `echo ${k}` } }));
      t.push(msg.assistant(calls), ...calls.map((c) => msg.result(c.id, 'bash', `out ${c.id}`)));
    }
    const out = await m2.transformContext(t);
    expect(m2.getSnapshot().activeSet.has(id)).toBe(true);
    expect(activeBlocks(out).join('\n')).toContain('KEEP-BODY');
    await m2.close();
  });

  test("a binary file's bytes never reach the context: metadata only, marked binary", async () => {
    const ws = tempDir('scm-ws-');
    const bytes = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x42, 0x49, 0x4e, 0x41, 0x52, 0x59]);
    write(ws, 'img.png', bytes);
    const m = make(ws, { watch: false });
    const r = await m.read('img.png');
    expect(r).toMatchObject({ ok: true });
    const entry = m.getSnapshot().metadataPool.find((e) => e.id === r.id);
    expect(entry).toMatchObject({ type: 'file', char_count: 0, content_omitted: 'binary' });
    // pi's read tool returns the bytes decoded as text; they must not be shown either.
    const asText = bytes.toString('utf8');
    const out = await m.transformContext([
      msg.user('look'),
      msg.assistant([{ id: 'r1', name: 'read', arguments: { path: 'img.png' } }]),
      msg.result('r1', 'read', asText),
    ]);
    const all = JSON.stringify(out);
    expect(all).not.toContain('IHDR');
    expect(all).not.toContain('BINARY');
    expect(out.map(textOf).join('\n')).toMatch(/binary/);
    await m.close();
  });

  test('a blank sessionId is refused with INVALID_ARGUMENT', () => {
    for (const sessionId of ['   ', '\t', '']) {
      let err;
      try {
        new SelfContextManager({ sessionId, workspaceRoot: tempDir() });
      } catch (e) {
        err = e;
      }
      expect(err?.code).toBe('INVALID_ARGUMENT');
    }
  });

  test('bash `ls docs` output: the listed names resolve against docs/, not the workspace root', async () => {
    const ws = tempDir('scm-ws-');
    write(ws, 'docs/guide.md', 'in docs');
    write(ws, 'guide.md', 'at the root');
    const m = make(ws, { watch: false });
    await m.observeToolExecutionEnd('bash', 'ls docs\nguide.md');
    const paths = m.getSnapshot().metadataPool.map((e) => e.path);
    expect(paths).toEqual([path.join(ws, 'docs/guide.md')]);
    // The core API with command and output apart, and a listing of two directories.
    await m.contextManager.observeBash('ls -la docs sub', 'docs:\nguide.md\n\nsub:\nx.ts');
    expect(m.getSnapshot().metadataPool.map((e) => e.path)).toEqual([path.join(ws, 'docs/guide.md')]);
    write(ws, 'sub/x.ts', 'x');
    await m.contextManager.observeBash('ls docs sub', 'docs:\nguide.md\n\nsub:\nx.ts');
    expect(m.getSnapshot().metadataPool.map((e) => e.path)).toEqual([path.join(ws, 'docs/guide.md'), path.join(ws, 'sub/x.ts')]);
    await m.close();
  });

  test("a file changed on disk: the snapshot's char_count and the active content follow (watchers on)", async () => {
    const ws = tempDir('scm-ws-');
    write(ws, 'w.txt', 'short');
    const m = make(ws);
    const { id } = await m.read('w.txt');
    await m.transformContext([msg.user('a')]);
    write(ws, 'w.txt', 'a much longer text now');
    const charCount = () => m.getSnapshot().metadataPool.find((e) => e.id === id).char_count;
    expect(await eventually(() => charCount() === 22)).toBe(true);
    const out = await m.transformContext([msg.user('a'), msg.user('b')]);
    expect(activeBlocks(out).join('\n')).toContain('a much longer text now');
    await m.close();
  });

  test("a file written by another manager on the same store: this manager's snapshot and active content follow", async () => {
    const ws = tempDir('scm-ws-');
    write(ws, 'shared.txt', 'v1');
    const storeArgs = storeOpts();
    const a = new SelfContextManager({ sessionId: uid('a'), workspaceRoot: ws, ...storeArgs });
    const b = new SelfContextManager({ sessionId: uid('b'), workspaceRoot: ws, ...storeArgs });
    const { id } = await b.read('shared.txt');
    await b.transformContext([msg.user('b1')]);
    await a.wrappedWrite('shared.txt', 'version two from a');
    let out;
    const t = [msg.user('b1')];
    const follows = await eventually(async () => {
      t.push(msg.user(`b${t.length + 1}`));
      out = await b.transformContext(t);
      return activeBlocks(out).join('\n').includes('version two from a');
    });
    expect(follows).toBe(true);
    expect(b.getSnapshot().metadataPool.find((e) => e.id === id).char_count).toBe('version two from a'.length);
    await a.close();
    await b.close();
  });
});
