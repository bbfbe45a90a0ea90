// SelfContextManager: drop-in for the original TypeScript class. Same
// constructor, readonly ids, method names and sync/async shape; works before
// load(); default embedded store location shared by every manager of a
// workspace; a process using it exits on its own after close().
import { describe, test, expect, afterEach } from 'vitest';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { scm, tempDir, uid, describeStores, expectCode, runNode, PKG, msg, textOf } from './helpers.mjs';

const { SelfContextManager } = scm;

describeStores('SelfContextManager', ({ kind, options }) => {
  /** A manager on this store kind: embedded → the default location in `ws`; xtdb → xtdbBaseUrl. */
  function make(ws, extra = {}) {
    const sessionId = uid('s');
    return new SelfContextManager({ sessionId, workspaceRoot: ws, ...(kind === 'xtdb' ? { xtdbBaseUrl: options().url } : {}), ...extra });
  }
  const write = (ws, rel, text) => {
    mkdirSync(path.dirname(path.join(ws, rel)), { recursive: true });
    writeFileSync(path.join(ws, rel), text);
  };

  test('constructor: readonly session, chat and system prompt object ids', () => {
    const m = new SelfContextManager({ sessionId: 'abc', workspaceRoot: tempDir() });
    expect([m.sessionObjectId, m.chatObjectId, m.systemPromptObjectId]).toEqual(['session:abc', 'chat:abc', 'system_prompt:abc']);
    expect(() => {
      'use strict';
      m.sessionObjectId = 'x';
    }).toThrow(TypeError);
    expect(m.sessionObjectId).toBe('session:abc');
  });

  test('method shapes: set operations and getSnapshot are synchronous, the rest return promises', async () => {
    const ws = tempDir('scm-ws-');
    const m = make(ws);
    const r = m.activate('nothing');
    expect(r).not.toBeInstanceOf(Promise);
    expect(r).toMatchObject({ ok: false });
    expect(typeof r.message).toBe('string');
    for (const op of ['deactivate', 'pin', 'unpin']) expect(m[op]('nothing')).toMatchObject({ ok: false });
    expect(m.getSnapshot()).not.toBeInstanceOf(Promise);
    for (const p of [m.load(), m.read('x'), m.wrappedLs(''), m.wrappedFind(''), m.wrappedGrep(''), m.getXtEntity('x'), m.transformContext([]), m.observeToolExecutionEnd('bash', 'true')]) {
      expect(p).toBeInstanceOf(Promise);
      await p;
    }
    await m.close();
  });

  test('every method works before load(): async ones load, sync ones open on the spot', async () => {
    const ws = tempDir('scm-ws-');
    write(ws, 'a.ts', 'A');
    const m1 = make(ws);
    expect(m1.getSnapshot().activeSet).toEqual(new Set());
    await m1.close();
    const m2 = make(ws);
    const r = await m2.read('a.ts');
    expect(r).toMatchObject({ ok: true });
    expect(m2.getSnapshot().activeSet).toEqual(new Set([r.id]));
    await m2.load(); // harmless after implicit load
    await m2.close();
    const m3 = make(ws);
    const loading = m3.load(); // not awaited: a sync call meanwhile must still work
    expect(m3.pin('a.ts')).toMatchObject({ ok: false });
    await loading;
    await m3.close();
  });

  test('transformContext: system, METADATA_POOL, chat with toolcall_refs, ACTIVE_CONTENT', async () => {
    const ws = tempDir('scm-ws-');
    write(ws, 'f.ts', 'F');
    const m = make(ws, { systemPrompt: 'SYS' });
    const { id } = await m.read('f.ts');
    const out = await m.transformContext([
      msg.user('go'),
      msg.assistant([{ id: 't1', name: 'bash', arguments: { command: 'echo 1' } }]),
      msg.result('t1', 'bash', '1'),
    ]);
    expect(out[0]).toEqual({ role: 'system', content: 'SYS' });
    expect(out[1].role).toBe('user');
    expect(out[1].content).toMatch(/^METADATA_POOL\n/);
    expect(out[2].content).toBe('go');
    expect(textOf(out[4])).toBe(`toolcall_ref id=toolcall:${m.sessionId}:t1 tool=bash status=ok`);
    expect(out.slice(5).map(textOf)).toEqual([`ACTIVE_CONTENT id=${id}\nF`, `ACTIVE_CONTENT id=toolcall:${m.sessionId}:t1\n1`]);
    await m.close();
  });

  test('activate / deactivate / pin / unpin by id, persisted without awaiting', async () => {
    const ws = tempDir('scm-ws-');
    write(ws, 'p.ts', 'P');
    const m = make(ws);
    const { id } = await m.read('p.ts');
    expect(m.deactivate(id)).toMatchObject({ ok: true });
    expect(m.getSnapshot().activeSet.has(id)).toBe(false);
    expect(m.pin(id)).toMatchObject({ ok: true });
    expect(m.getSnapshot().pinnedSet).toEqual(new Set([id]));
    // A pin only exempts from auto-collapse (SSOT §3.1): it does not activate.
    expect(m.getSnapshot().activeSet).toEqual(new Set());
    expect(m.activate(id)).toMatchObject({ ok: true });
    expect(m.getSnapshot().activeSet).toEqual(new Set([id]));
    expect(m.unpin(id)).toMatchObject({ ok: true });
    expect(m.activate(m.chatObjectId)).toMatchObject({ ok: false, code: 'NOT_CONTENT_OBJECT' });
    await m.close(); // waits for the queued writes
    const session = await new SelfContextManager({ sessionId: uid('x'), workspaceRoot: ws, ...(kind === 'xtdb' ? { xtdbBaseUrl: options().url } : {}) }).getXtEntity(m.sessionObjectId);
    expect(session).toMatchObject({ pinned_set: [], active_set: [id] });
  });

  test('wrappedWrite writes the file (parents created) and indexes it active; wrappedEdit indexes the edit', async () => {
    const ws = tempDir('scm-ws-');
    const m = make(ws);
    await m.wrappedWrite('deep/new/file.txt', 'hello');
    expect(readFileSync(path.join(ws, 'deep/new/file.txt'), 'utf8')).toBe('hello');
    const snap = m.getSnapshot();
    expect(snap.metadataPool).toHaveLength(1);
    const entry = snap.metadataPool[0];
    expect(entry).toMatchObject({ type: 'file', path: path.join(ws, 'deep/new/file.txt'), file_type: 'txt', char_count: 5 });
    expect(snap.activeSet).toEqual(new Set([entry.id]));
    writeFileSync(path.join(ws, 'deep/new/file.txt'), 'hello, edited');
    await m.wrappedEdit('deep/new/file.txt');
    expect(await m.getXtEntity(entry.id)).toMatchObject({ content: 'hello, edited', char_count: 13 });
    await m.close();
  });

  test('wrappedLs / wrappedFind / wrappedGrep / observeToolExecutionEnd(bash) add discovery stubs; a printed file is read', async () => {
    const ws = tempDir('scm-ws-');
    for (const f of ['l.ts', 'f.ts', 'g.ts', 'b.ts']) write(ws, f, f);
    const m = make(ws);
    await m.wrappedLs('l.ts\n');
    await m.wrappedFind('f.ts\n');
    await m.wrappedGrep('g.ts:1:g');
    await m.observeToolExecutionEnd('bash', 'wc -l b.ts');
    await m.observeToolExecutionEnd('read', 'ignored.ts');
    const pool = m.getSnapshot().metadataPool;
    expect(pool.map((e) => path.basename(e.path))).toEqual(['l.ts', 'f.ts', 'g.ts', 'b.ts']);
    expect(pool.every((e) => e.type === 'file' && e.char_count === 0)).toBe(true);
    expect(m.getSnapshot().activeSet).toEqual(new Set());
    // A command that only prints a file reads it (indexed, tracked), into the pool only (session 30).
    write(ws, 'c.ts', 'CAT');
    await m.observeToolExecutionEnd('bash', 'cat c.ts');
    const c = m.getSnapshot().metadataPool.find((e) => e.path?.endsWith('c.ts'));
    expect(c).toMatchObject({ type: 'file', char_count: 3 });
    expect(m.getSnapshot().activeSet).toEqual(new Set());
    await m.close();
  });

  test('getSnapshot: Sets and metadata pool entries {id, type, path?, file_type?, char_count?, tool?, status?}', async () => {
    const ws = tempDir('scm-ws-');
    write(ws, 's.ts', 'S');
    const m = make(ws);
    await m.read('s.ts');
    await m.transformContext([msg.user('u'), msg.assistant([{ id: 'b1', name: 'bash', arguments: { command: 'x' } }]), msg.result('b1', 'bash', 'oops', true)]);
    const s = m.getSnapshot();
    expect(s.sessionIndex).toBeInstanceOf(Set);
    expect(s.activeSet).toBeInstanceOf(Set);
    expect(s.pinnedSet).toBeInstanceOf(Set);
    expect(s.metadataPool[1]).toEqual({ id: `toolcall:${m.sessionId}:b1`, type: 'toolcall', char_count: 4, tool: 'bash', status: 'fail' });
    await m.close();
  });

  test('getXtEntity returns the latest version or null', async () => {
    const m = make(tempDir('scm-ws-'));
    expect(await m.getXtEntity(m.sessionObjectId)).toMatchObject({ 'xt/id': m.sessionObjectId, type: 'session' });
    expect(await m.getXtEntity(uid('none'))).toBeNull();
    await m.close();
  });

  test('two managers of one workspace in one process share the store: same ids, isolated sessions', async () => {
    const ws = tempDir('scm-ws-');
    write(ws, 'same.ts', 'same');
    const a = make(ws);
    const b = make(ws);
    const [ra, rb] = [await a.read('same.ts'), await b.read('same.ts')];
    expect(rb.id).toBe(ra.id);
    expect(rb.message).toMatch(/unchanged/);
    await b.wrappedWrite('b-only.ts', 'b');
    expect(a.getSnapshot().sessionIndex).toEqual(new Set([ra.id]));
    expect(b.getSnapshot().sessionIndex.size).toBe(2);
    await Promise.all([a.close(), b.close()]);
  });

  test('two processes on one workspace find the same store: same object ids, isolated sessions', async () => {
    const ws = tempDir('scm-ws-');
    write(ws, 'x.ts', 'x');
    const m = make(ws);
    const mine = await m.read('x.ts');
    const extra = kind === 'xtdb' ? `, xtdbBaseUrl: ${JSON.stringify(options().url)}` : '';
    const out = await runNode(`
      const { SelfContextManager } = require(${PKG});
      const m = new SelfContextManager({ sessionId: 'other-' + process.pid, workspaceRoot: ${JSON.stringify(ws)}${extra} });
      m.read('x.ts').then(async (r) => {
        console.log(JSON.stringify({ id: r.id, message: r.message, index: [...m.getSnapshot().sessionIndex] }));
        await m.close();
      }).catch((e) => { console.error(e.code, e.message); process.exit(1); });`);
    expect(out.code, out.stderr).toBe(0);
    const theirs = JSON.parse(out.stdout);
    expect(theirs).toMatchObject({ id: mine.id, index: [mine.id] });
    expect(theirs.message).toMatch(/unchanged/);
    expect(m.getSnapshot().sessionIndex).toEqual(new Set([mine.id]));
    await m.close();
  });

  test('a process using the addon with watchers on exits on its own after close()', async () => {
    const ws = tempDir('scm-ws-');
    write(ws, 'w.ts', 'w');
    const extra = kind === 'xtdb' ? `, xtdbBaseUrl: ${JSON.stringify(options().url)}` : '';
    const out = await runNode(`
      const { SelfContextManager } = require(${PKG});
      const m = new SelfContextManager({ sessionId: 'exit-' + process.pid, workspaceRoot: ${JSON.stringify(ws)}, watch: true${extra} });
      (async () => {
        await m.read('w.ts');
        await m.transformContext([{ role: 'user', content: 'hi', timestamp: 1 }]);
        m.pin('w.ts');
        await m.close();
        console.log('closed');
      })().catch((e) => { console.error(e.code, e.message); process.exit(1); });`, { timeoutMs: 15_000 });
    expect(out.timedOut, 'process did not exit within 15 s').toBe(false);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout.trim()).toBe('closed');
  });

  test('a process that never calls close() exits on its own too (nothing keeps Node alive)', async () => {
    const ws = tempDir('scm-ws-');
    write(ws, 'w.ts', 'w');
    const extra = kind === 'xtdb' ? `, xtdbBaseUrl: ${JSON.stringify(options().url)}` : '';
    const out = await runNode(`
      const { SelfContextManager } = require(${PKG});
      const m = new SelfContextManager({ sessionId: 'noclose-' + process.pid, workspaceRoot: ${JSON.stringify(ws)}, watch: true${extra} });
      m.read('w.ts').then((r) => console.log(r.ok));`, { timeoutMs: 15_000 });
    expect(out.timedOut, 'process did not exit within 15 s').toBe(false);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout.trim()).toBe('true');
  });

  test('after close() calls fail with SESSION_CLOSED', async () => {
    const m = make(tempDir('scm-ws-'));
    await m.load();
    await m.close();
    await m.close();
    await expectCode(m.read('x'), 'SESSION_CLOSED');
    await expectCode(() => m.activate('x'), 'SESSION_CLOSED');
    await expectCode(() => m.getSnapshot(), 'SESSION_CLOSED');
    const never = make(tempDir('scm-ws-'));
    await never.close(); // close before load is fine
    await expectCode(never.load(), 'SESSION_CLOSED');
  });
});

describe('SelfContextManager store location', () => {
  const saved = process.env.SCM_STORE_PATH;
  afterEach(() => {
    if (saved === undefined) delete process.env.SCM_STORE_PATH;
    else process.env.SCM_STORE_PATH = saved;
  });

  test('default: <workspaceRoot>/.scm/store.sqlite', async () => {
    delete process.env.SCM_STORE_PATH;
    const ws = tempDir('scm-ws-');
    const m = new SelfContextManager({ sessionId: uid('d'), workspaceRoot: ws });
    await m.load();
    await m.close();
    expect(existsSync(path.join(ws, '.scm', 'store.sqlite'))).toBe(true);
  });

  test('SCM_STORE_PATH overrides it', async () => {
    const dir = tempDir();
    process.env.SCM_STORE_PATH = path.join(dir, 'custom', 'scm.sqlite');
    const ws = tempDir('scm-ws-');
    const m = new SelfContextManager({ sessionId: uid('d'), workspaceRoot: ws });
    await m.load();
    await m.close();
    expect(existsSync(path.join(dir, 'custom', 'scm.sqlite'))).toBe(true);
    expect(existsSync(path.join(ws, '.scm'))).toBe(false);
  });

  test('a missing sessionId is INVALID_ARGUMENT; an unreachable xtdbBaseUrl STORE_UNAVAILABLE', async () => {
    await expectCode(() => new SelfContextManager({}), 'INVALID_ARGUMENT');
    await expectCode(() => new SelfContextManager(), 'INVALID_ARGUMENT');
    const m = new SelfContextManager({ sessionId: 'x', workspaceRoot: tempDir(), xtdbBaseUrl: 'http://127.0.0.1:9' });
    await expectCode(m.load(), 'STORE_UNAVAILABLE');
    await expectCode(() => m.activate('x'), 'STORE_UNAVAILABLE');
  });
});
