// ContextManager (the async API) on both stores: SSOT §3 (sessions, sets,
// activation), §4 (assembly, toolcall_refs, auto-collapse), §5.5 (indexing
// through agent reads), memory-system-v0 §7.2 (static references).
import { describe, test, expect } from 'vitest';
import { mkdirSync, writeFileSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { scm, tempDir, uid, describeStores, expectCode, runNode, PKG, msg, textOf } from './helpers.mjs';

const { ContextManager } = scm;

describeStores('ContextManager', ({ kind, options }) => {
  async function setup(extra = {}) {
    const ws = tempDir('scm-ws-');
    const storeOptions = options();
    const sessionId = uid('s');
    // These suites check the spec layout (SSOT §4); the default (cache) has its own below.
    const cm = await ContextManager.open({ sessionId, workspaceRoot: ws, store: storeOptions, layout: 'spec', ...extra });
    return { ws, cm, sessionId, storeOptions };
  }
  const write = (ws, rel, text) => {
    mkdirSync(path.dirname(path.join(ws, rel)), { recursive: true });
    writeFileSync(path.join(ws, rel), text);
  };

  describe('a ref is not file text (design §5)', () => {
    test('checkToolCall finds a ref the session showed in what a call would write, and only that; unserialisable arguments get a code', async () => {
      const { ws, cm } = await setup({ layout: 'cache' });
      const text = 'one line of a.txt\ntwo line of a.txt\nthree line of a.txt';
      write(ws, 'a.txt', text);
      await cm.read('a.txt');
      await cm.transformContext([msg.user('tidy a.txt'), msg.assistant([{ id: 'c1', name: 'read', arguments: { path: 'a.txt' } }]), msg.result('c1', 'read', text)]);
      const found = cm.checkToolCall('write', { path: 'a.txt', content: '[t1 · 3 lines]' });
      expect(found).toMatchObject({ code: 'REF_AS_TEXT', field: 'content', token: '[t1 · 3 lines]', target: 't1' });
      expect(found.message).toContain('A ref is not file text');
      expect(cm.checkToolCall('edit', { path: 'a.txt', oldText: 'two line', newText: '[t1 · 3 lines]' })).toMatchObject({ field: 'newText' });
      expect(cm.checkToolCall('write', { path: 'a.txt', content: text })).toBeNull();
      expect(cm.checkToolCall('write', { path: 'a.txt', content: '[t1 · 9 lines]' })).toBeNull();
      expect(cm.checkToolCall('read', { path: 'a.txt' })).toBeNull();
      expect(cm.checkToolCall('write')).toBeNull();
      const circular = { path: 'a.txt' };
      circular.self = circular;
      await expectCode(() => cm.checkToolCall('write', circular), 'INVALID_ARGUMENT');
      await cm.close();
    });
  });

  describe("the host's array", () => {
    // pi hands the hook a copy of its messages each call. A compaction of the first prompt alone puts the summary in
    // its place: same length, same last message; the summary must still be read (it was not: seeds 652 and 656).
    test('a compaction of the first message alone is read, from copies and from the same objects', async () => {
      for (const copies of [true, false]) {
        for (const observe of [false, true]) {
          const { ws, cm } = await setup({ layout: 'cache' });
          write(ws, 'a.txt', 'alpha');
          const messages = [msg.user('read a.txt', 1), msg.assistant([{ id: 'c1', name: 'read', arguments: { path: 'a.txt' } }]), msg.result('c1', 'read', 'alpha')];
          const give = () => (copies ? structuredClone(messages) : [...messages]);
          await cm.transformContext(give());
          messages[0] = { role: 'compactionSummary', summary: 'SUMMARY-OF-THE-PROMPT', tokensBefore: 1000, timestamp: 2 };
          if (observe) expect(await cm.observeMessages(give())).toBe(1);
          const out = await cm.transformContext(give());
          const all = out.map((m) => (typeof m.content === 'string' || Array.isArray(m.content) ? textOf(m) : '')).join('\n');
          expect(all, `copies ${copies}, observe ${observe}`).toContain('SUMMARY-OF-THE-PROMPT');
          await cm.close();
        }
      }
    });
  });

  describe('secrets (issue 14, defect 2)', () => {
    test('a file on the secret list is metadata-only unless opted in; the option reaches the engine', async () => {
      const { ws, cm } = await setup();
      write(ws, '.env', 'API_KEY=SECRET-VALUE');
      const r = await cm.read('.env');
      expect(r.ok).toBe(true);
      const id = r.id;
      const doc = await cm.getObject(id);
      expect(doc).toMatchObject({ withheld: 'secret', content_omitted: 'secret', content: null, file_hash: null });
      await cm.close();
      const { ws: ws2, cm: open } = await setup({ readSecrets: true });
      write(ws2, '.env', 'API_KEY=SECRET-VALUE');
      const r2 = await open.read('.env');
      expect((await open.getObject(r2.id)).content).toBe('API_KEY=SECRET-VALUE');
      await open.close();
    });

    test('a secret a tool prints is redacted where it is stored and shown, a file on the secret list printed through bash withheld as a read of it is; unless secrets are opted in', async () => {
      const printed = 'DATABASE_PASSWORD=hunter2-SECRET\nPORT=8080';
      // `env` prints secrets among other things: redacted. `cat .env` reads a file on the secret list (session 30).
      for (const [command, kept] of [
        ['env', 'DATABASE_PASSWORD=[redacted: secret]\nPORT=8080'],
        ['cat .env', /^\[withheld: secret\] file path=\.env: /],
      ]) {
        const messages = [msg.user('show the env'), msg.assistant([{ id: 'c1', name: 'bash', arguments: { command } }]), msg.result('c1', 'bash', printed)];
        for (const readSecrets of [false, true]) {
          const { cm, sessionId } = await setup({ readSecrets, layout: 'cache' });
          const shown = JSON.stringify(await cm.transformContext(messages));
          const stored = (await cm.getObject(`toolcall:${sessionId}:c1`)).content;
          if (readSecrets) {
            expect(stored).toBe(printed);
            expect(shown).toContain('hunter2-SECRET');
          } else {
            expect(stored).toMatch(kept);
            expect(shown).not.toContain('hunter2-SECRET');
          }
          await cm.close();
        }
      }
    });
  });

  describe('session objects', () => {
    test('open creates session:<id>, chat:<id> and system_prompt:<id> in the store', async () => {
      const { cm, sessionId } = await setup({ systemPrompt: 'You are terse.' });
      expect([cm.sessionObjectId, cm.chatObjectId, cm.systemPromptObjectId]).toEqual([`session:${sessionId}`, `chat:${sessionId}`, `system_prompt:${sessionId}`]);
      const session = await cm.getObject(cm.sessionObjectId);
      expect(session).toMatchObject({ type: 'session', session_id: sessionId, chat_ref: cm.chatObjectId, system_prompt_ref: cm.systemPromptObjectId, session_index: [], active_set: [] });
      expect(await cm.getObject(cm.systemPromptObjectId)).toMatchObject({ type: 'system_prompt', content: 'You are terse.' });
      expect((await cm.getObject(cm.chatObjectId)).type).toBe('chat');
      expect(await cm.getObject(uid('nothing'))).toBeNull();
      await cm.close();
    });

    test('chat, system_prompt and session objects can never be activated, deactivated, pinned or unpinned', async () => {
      const { cm } = await setup({ systemPrompt: 'p' });
      for (const op of ['activate', 'deactivate', 'pin', 'unpin']) {
        for (const id of [cm.chatObjectId, cm.sessionObjectId, cm.systemPromptObjectId]) {
          const r = await cm[op](id);
          expect(r, `${op} ${id}`).toMatchObject({ ok: false, code: 'NOT_CONTENT_OBJECT' });
        }
      }
      const snap = cm.snapshot();
      expect(snap.sessionIndex).toEqual([]);
      await cm.close();
    });
  });

  describe('context assembly', () => {
    test('order: system prompt, METADATA_POOL, chat, ACTIVE_CONTENT blocks', async () => {
      const { ws, cm } = await setup({ systemPrompt: 'SYS' });
      write(ws, 'src/a.ts', 'export const a = 1;\n');
      const r = await cm.read('src/a.ts');
      expect(r).toMatchObject({ ok: true, id: cm.resolve('src/a.ts').objectId });
      const out = await cm.transformContext([msg.user('hello')]);
      expect(out.map((m) => m.role)).toEqual(['system', 'user', 'user', 'user']);
      expect(out[0].content).toBe('SYS');
      expect(out[1].content).toMatch(/^METADATA_POOL\n- id=[0-9a-f]{64} file path=src\/a\.ts/);
      expect(out[2].content).toBe('hello');
      expect(out[3].content).toBe(`ACTIVE_CONTENT id=${r.id}\nexport const a = 1;\n`);
      await cm.close();
    });

    test('tool results become toolcall_ref id=… tool=… status=ok|fail; recent ones are active', async () => {
      const { cm, sessionId } = await setup();
      const out = await cm.transformContext([
        msg.user('run'),
        msg.assistant([{ id: 'c1', name: 'bash', arguments: { command: 'echo hi' } }, { id: 'c2', name: 'bash', arguments: { command: 'false' } }]),
        msg.result('c1', 'bash', 'hi'),
        msg.result('c2', 'bash', 'exit 1', true),
      ]);
      const refs = out.filter((m) => m.role === 'toolResult').map(textOf);
      expect(refs).toEqual([`toolcall_ref id=toolcall:${sessionId}:c1 tool=bash status=ok`, `toolcall_ref id=toolcall:${sessionId}:c2 tool=bash status=fail`]);
      const active = out.filter((m) => textOf(m).startsWith('ACTIVE_CONTENT')).map(textOf);
      expect(active).toEqual([`ACTIVE_CONTENT id=toolcall:${sessionId}:c1\nhi`, `ACTIVE_CONTENT id=toolcall:${sessionId}:c2\nexit 1`]);
      expect(await cm.getObject(`toolcall:${sessionId}:c2`)).toMatchObject({ type: 'toolcall', tool: 'bash', status: 'fail', content: 'exit 1', chat_ref: cm.chatObjectId });
      await cm.close();
    });

    test('auto-collapse keeps the 5 most recent tool outputs of a turn; pinned ones are exempt', async () => {
      const { cm, sessionId } = await setup();
      const calls = Array.from({ length: 7 }, (_, i) => ({ id: `k${i}`, name: 'bash', arguments: { command: `echo ${i}` } }));
      const transcript = [msg.user('go'), msg.assistant(calls.slice(0, 1)), msg.result('k0', 'bash', 'out 0')];
      await cm.transformContext(transcript);
      expect(await cm.pin(`toolcall:${sessionId}:k0`)).toMatchObject({ ok: true });
      transcript.push(msg.assistant(calls.slice(1)), ...calls.slice(1).map((c, i) => msg.result(c.id, 'bash', `out ${i + 1}`)));
      await cm.transformContext(transcript);
      const snap = cm.snapshot();
      const ids = (ks) => ks.map((k) => `toolcall:${sessionId}:${k}`);
      expect(snap.pinnedSet).toEqual(ids(['k0']));
      expect(new Set(snap.activeSet)).toEqual(new Set(ids(['k0', 'k2', 'k3', 'k4', 'k5', 'k6'])));
      expect(snap.metadataPool.map((e) => e.id)).toEqual(ids(['k0', 'k1', 'k2', 'k3', 'k4', 'k5', 'k6']));
      await cm.close();
    });

    test('the cursor consumes each harness message once: repeating the transcript adds nothing', async () => {
      const { cm } = await setup();
      const t = [msg.user('a'), msg.assistant([{ id: 'x1', name: 'bash', arguments: { command: 'ls' } }]), msg.result('x1', 'bash', 'ok')];
      const first = await cm.transformContext(t);
      const again = await cm.transformContext(t);
      expect(again).toEqual(first);
      expect(cm.snapshot().sessionIndex).toHaveLength(1);
      await cm.flush(); // the transform's write goes behind (durableTransform: false)
      expect(cm.stats()).toMatchObject({ turnCount: 1, cursor: 3, modelCallCount: 2, hasPending: false });
      await cm.close();
    });

    test('a malformed message is INVALID_MESSAGE and changes nothing; a non-array INVALID_ARGUMENT', async () => {
      const { cm } = await setup();
      await expectCode(cm.transformContext([{ content: 'no role' }]), 'INVALID_MESSAGE');
      await expectCode(cm.transformContext('nope'), 'INVALID_ARGUMENT');
      expect(cm.stats().cursor).toBe(0);
      await cm.close();
    });
  });

  describe('files: read, write, edit, discovery, activation', () => {
    test('observePartialRead (a line range, an image): the file is indexed and listed, not active; the read names it', async () => {
      const { ws, cm } = await setup();
      write(ws, 'big.txt', 'a\nb\nc\n');
      const id = cm.resolve('big.txt').objectId;
      expect(await cm.observePartialRead('big.txt')).toMatchObject({ ok: true, id });
      await cm.transformContext([
        msg.user('look'),
        msg.assistant([{ id: 'r1', name: 'read', arguments: { path: 'big.txt', offset: 2, limit: 1 } }]),
        msg.result('r1', 'read', 'b'),
      ]);
      const snap = cm.snapshot();
      expect(snap.metadataPool.map((e) => e.id)).toContain(id);
      expect(snap.activeSet).not.toContain(id);
      const call = await cm.getObject(`toolcall:${cm.sessionId}:r1`);
      expect(call.file_refs).toEqual([id]);
      expect(await cm.getObject(id)).toMatchObject({ type: 'file', content: 'a\nb\nc\n' });
      expect(await cm.observePartialRead('missing.txt')).toMatchObject({ ok: false });
      await cm.close();
    });

    test('read indexes and activates; a missing file or a directory fails with a code and changes nothing', async () => {
      const { ws, cm } = await setup();
      mkdirSync(path.join(ws, 'dir'));
      expect(await cm.read('missing.ts')).toMatchObject({ ok: false, code: 'FILE_NOT_FOUND' });
      expect(await cm.read('dir')).toMatchObject({ ok: false, code: 'NOT_A_FILE' });
      expect(cm.snapshot().sessionIndex).toEqual([]);
      write(ws, 'b.md', '# b');
      const r = await cm.read(path.join(ws, 'b.md'));
      expect(r.ok).toBe(true);
      expect(cm.snapshot()).toMatchObject({ sessionIndex: [r.id], activeSet: [r.id] });
      expect(cm.snapshot().metadataPool[0]).toMatchObject({ id: r.id, type: 'file', file_type: 'md', char_count: 3, state: 'present' });
      await cm.close();
    });

    test('deactivate keeps the metadata line; activate by path or by id brings content back', async () => {
      const { ws, cm } = await setup();
      write(ws, 'c.ts', 'const c = 3;');
      const { id } = await cm.read('c.ts');
      expect(await cm.deactivate('c.ts')).toMatchObject({ ok: true, id });
      let out = await cm.transformContext([msg.user('q')]);
      expect(out.some((m) => textOf(m).startsWith('ACTIVE_CONTENT'))).toBe(false);
      expect(out[0].content).toContain(`id=${id}`);
      expect(await cm.activate(id.slice(0, 12))).toMatchObject({ ok: true, id });
      out = await cm.transformContext([msg.user('q')]);
      expect(textOf(out.at(-1))).toBe(`ACTIVE_CONTENT id=${id}\nconst c = 3;`);
      expect(await cm.activate('never-seen.ts')).toMatchObject({ ok: false });
      expect(await cm.deactivate(uid('zz'))).toMatchObject({ ok: false, code: 'UNKNOWN_OBJECT' });
      await cm.close();
    });

    test('setOpSync changes the sets at once and queues the write until flush()', async () => {
      const { ws, cm } = await setup();
      write(ws, 's.ts', 's');
      const { id } = await cm.read('s.ts');
      expect(cm.setOpSync('deactivate', id)).toMatchObject({ ok: true, id });
      expect(cm.snapshot().activeSet).toEqual([]);
      expect(cm.stats().hasPending).toBe(true);
      expect((await cm.getObject(cm.sessionObjectId)).active_set).toEqual([id]);
      const receipt = await cm.flush();
      expect(receipt).toMatchObject({ committed: true });
      expect(cm.stats().hasPending).toBe(false);
      expect((await cm.getObject(cm.sessionObjectId)).active_set).toEqual([]);
      expect(await cm.flush()).toBeNull();
      await expectCode(() => cm.setOpSync('delete', id), 'INVALID_ARGUMENT');
      await cm.close();
    });

    test('ls/find/grep discovery adds stubs to the pool (never active); activating a stub reads it', async () => {
      const { ws, cm } = await setup();
      write(ws, 'src/one.ts', 'one');
      write(ws, 'src/two.ts', 'two');
      expect(await cm.observeLs('one.ts\ntwo.ts\nghost.ts\n', 'src')).toMatchObject({ ok: true });
      expect(await cm.observeGrep('src/two.ts:1:two')).toMatchObject({ ok: true });
      const snap = cm.snapshot();
      expect(snap.metadataPool.map((e) => [e.path.replace(`${ws}/`, ''), e.state])).toEqual([['src/one.ts', 'stub'], ['src/two.ts', 'stub']]);
      expect(snap.activeSet).toEqual([]);
      const out = await cm.transformContext([msg.user('q')]);
      expect(out[0].content).toContain('[unread]');
      const oneId = cm.resolve('src/one.ts').objectId;
      expect(await cm.activate(oneId)).toMatchObject({ ok: true });
      expect(await cm.getObject(oneId)).toMatchObject({ state: 'present', content: 'one' });
      unlinkSync(path.join(ws, 'src/two.ts'));
      const twoId = cm.resolve('src/two.ts').objectId;
      expect(await cm.activate(twoId)).toMatchObject({ ok: false });
      expect(cm.snapshot().activeSet).toEqual([oneId]);
      await cm.close();
    });

    test('find output and bash commands name files under the workspace → stubs', async () => {
      const { ws, cm } = await setup();
      write(ws, 'lib/x.js', 'x');
      write(ws, 'lib/y.js', 'y');
      await cm.observeFind('./lib/x.js\n');
      await cm.observeBash('cat lib/y.js', 'y');
      const paths = cm.snapshot().metadataPool.map((e) => e.path);
      expect(paths).toEqual([path.join(ws, 'lib/x.js'), path.join(ws, 'lib/y.js')]);
      await cm.close();
    });

    test('observeWrite/observeEdit index the new version and make it active; history keeps every version', async () => {
      const { ws, cm } = await setup();
      write(ws, 'w.txt', 'v1');
      const w = await cm.observeWrite('w.txt');
      expect(w.ok).toBe(true);
      write(ws, 'w.txt', 'v2');
      expect(await cm.observeEdit('w.txt')).toMatchObject({ ok: true, id: w.id });
      const h = await cm.history(w.id);
      expect(h.map((v) => v.doc.content)).toEqual(['v1', 'v2']);
      expect(await cm.getObjectAsOf(w.id, h[0].txId)).toMatchObject({ content: 'v1' });
      expect(cm.snapshot().activeSet).toEqual([w.id]);
      await cm.close();
    });
  });

  describe('static references', () => {
    test('reconstructCall(n) rebuilds exactly what call n showed, after the file changed', async () => {
      const { ws, cm } = await setup({ systemPrompt: 'S' });
      write(ws, 'r.ts', 'old');
      await cm.read('r.ts');
      const call0 = await cm.transformContext([msg.user('one')]);
      write(ws, 'r.ts', 'new');
      await cm.read('r.ts');
      const call1 = await cm.transformContext([msg.user('one'), msg.user('two')]);
      expect(textOf(call1.at(-1))).toMatch(/\nnew$/);
      expect(await cm.reconstructCall(0)).toEqual(call0);
      expect(await cm.reconstructCall(1)).toEqual(call1);
      await expectCode(cm.reconstructCall(5), 'INVALID_ARGUMENT');
      await cm.close();
    });

    test('a harness that sends its own system prompt: setSystemPrompt stores a version per change, reconstructCall is headed by it', async () => {
      const { cm } = await setup({ layout: 'cache', emitSystemMessage: false });
      const t = [msg.user('one')];
      const outs = [];
      for (const prompt of ['P1', 'P1', 'P2']) {
        cm.setSystemPrompt(prompt);
        outs.push(await cm.transformContext(t));
        expect(outs.at(-1).some((m) => m.role === 'system')).toBe(false);
        t.push(msg.assistant([], 'ok'), msg.user('again'));
      }
      expect((await cm.history(cm.systemPromptObjectId)).map((v) => v.doc.content)).toEqual(['P1', 'P2']);
      for (const [n, out] of outs.entries()) {
        expect(await cm.reconstructCall(n)).toEqual([{ role: 'system', content: ['P1', 'P1', 'P2'][n] }, ...out]);
      }
      expect(() => cm.setSystemPrompt(3)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
      await cm.close();
    });
  });

  describe('lifecycle', () => {
    test('resume restores the sets and continues the chat', async () => {
      const { ws, cm, sessionId, storeOptions } = await setup();
      write(ws, 'k.ts', 'keep');
      const { id } = await cm.read('k.ts');
      await cm.pin(id);
      const t = [msg.user('first')];
      await cm.transformContext(t);
      const before = cm.snapshot();
      await cm.close();
      const again = await ContextManager.open({ sessionId, workspaceRoot: ws, store: storeOptions, layout: 'spec' });
      expect(again.snapshot()).toEqual(before);
      const out = await again.transformContext([...t, msg.user('second')]);
      expect(out.filter((m) => m.role === 'user' && !textOf(m).startsWith('METADATA_POOL') && !textOf(m).startsWith('ACTIVE_CONTENT')).map(textOf)).toEqual(['first', 'second']);
      await again.close();
    });

    test('observeMessages stores new messages without a model call; neither the next transform nor a resume ingests them again', async () => {
      const { ws, cm, sessionId, storeOptions } = await setup();
      const t = [msg.user('first', 1), msg.assistant([{ id: 'x1', name: 'bash', arguments: { command: 'ls' } }], undefined), msg.result('x1', 'bash', 'ok')];
      await cm.transformContext(t);
      const done = [...t, msg.assistant([], 'FINAL-ANSWER')];
      expect(await cm.observeMessages(done)).toBe(1); // the tail path
      expect(await cm.observeMessages(done)).toBe(0);
      expect(cm.stats()).toMatchObject({ cursor: 4, modelCallCount: 1, hasPending: false });
      expect(JSON.stringify(await cm.getObject(cm.chatObjectId)).split('FINAL-ANSWER').length - 1).toBe(1);
      await expectCode(cm.observeMessages('nope'), 'INVALID_ARGUMENT');
      await expectCode(cm.observeMessages([...done, { content: 'no role' }]), 'INVALID_MESSAGE');
      // A replaced array (another branch): the whole array goes; only the new prompt is new.
      expect(await cm.observeMessages([t[0], msg.user('other', 2)])).toBe(1);
      await cm.close();
      const again = await ContextManager.open({ sessionId, workspaceRoot: ws, store: storeOptions, layout: 'spec' });
      const out = await again.transformContext([t[0], msg.user('other', 2), msg.user('third', 3)]);
      const chat = out.map(textOf).filter((x) => !x.startsWith('METADATA_POOL') && !x.startsWith('ACTIVE_CONTENT'));
      expect(chat.filter((x) => x.includes('FINAL-ANSWER'))).toHaveLength(1);
      expect(chat.slice(-3)).toEqual(['FINAL-ANSWER', 'other', 'third']);
      await again.close();
    });

    test('close is idempotent; afterwards every call is SESSION_CLOSED', async () => {
      const { cm } = await setup();
      await cm.close();
      await cm.close();
      expect(cm.closed).toBe(true);
      await expectCode(cm.read('x'), 'SESSION_CLOSED');
      await expectCode(cm.activate('x'), 'SESSION_CLOSED');
      await expectCode(cm.transformContext([]), 'SESSION_CLOSED');
      await expectCode(() => cm.snapshot(), 'SESSION_CLOSED');
    });

    test('two managers on one store: same object id for the same file, isolated sessions', async () => {
      const ws = tempDir('scm-ws-');
      const storeOptions = options();
      write(ws, 'shared.ts', 'shared');
      write(ws, 'only-a.ts', 'a');
      const a = await ContextManager.open({ sessionId: uid('a'), workspaceRoot: ws, store: storeOptions });
      const b = await ContextManager.open({ sessionId: uid('b'), workspaceRoot: ws, store: storeOptions });
      const ra = await a.read('shared.ts');
      const rb = await b.read('shared.ts');
      expect(rb.id).toBe(ra.id);
      expect(rb.message).toMatch(/unchanged/);
      await a.read('only-a.ts');
      expect(b.snapshot().sessionIndex).toEqual([rb.id]);
      expect(a.snapshot().sessionIndex).toHaveLength(2);
      await Promise.all([a.close(), b.close()]);
    });

    test('two live managers on one session id never interleave: the one that wrote second is superseded', async () => {
      const ws = tempDir('scm-ws-');
      const store = options();
      const sessionId = uid('twin');
      const a = await ContextManager.open({ sessionId, workspaceRoot: ws, store });
      const b = await ContextManager.open({ sessionId, workspaceRoot: ws, store });
      const ma = [msg.user('from a')];
      const mb = [msg.user('from b')];
      await a.transformContext(ma);
      await a.flush();
      // b read the session before a wrote: its write is refused, it writes nothing more.
      await b.transformContext(mb);
      await b.flush();
      await expectCode(b.transformContext([...mb, msg.user('b again')]), 'SESSION_SUPERSEDED');
      await expectCode(b.read('x.txt'), 'SESSION_SUPERSEDED');
      await b.close();
      ma.push(msg.assistant([], 'answer a'), msg.user('a again'));
      await a.transformContext(ma);
      await a.close();
      const c = await ContextManager.open({ sessionId, workspaceRoot: ws, store });
      const seen = (await c.transformContext(ma)).map(textOf).join('\n');
      expect(seen).toContain('a again');
      expect(seen).not.toContain('from b');
      await c.close();
    });

    test('a second process on the same store derives the same ids and keeps its session apart', async () => {
      const { ws, cm, storeOptions } = await setup();
      write(ws, 'p.ts', 'process');
      const mine = await cm.read('p.ts');
      const other = uid('other');
      const out = await runNode(`
        const { ContextManager } = require(${PKG});
        (async () => {
          const cm = await ContextManager.open({ sessionId: ${JSON.stringify(other)}, workspaceRoot: ${JSON.stringify(ws)}, store: JSON.parse(process.env.STORE) });
          const r = await cm.read('p.ts');
          console.log(JSON.stringify({ id: r.id, index: cm.snapshot().sessionIndex }));
          await cm.close();
        })().catch((e) => { console.error(e.code, e.message); process.exit(1); });`, { env: { STORE: JSON.stringify(storeOptions) } });
      expect(out.code, out.stderr).toBe(0);
      expect(JSON.parse(out.stdout)).toEqual({ id: mine.id, index: [mine.id] });
      expect(cm.snapshot().sessionIndex).toEqual([mine.id]);
      expect((await cm.getObject(`session:${other}`)).session_index).toEqual([mine.id]);
      await cm.close();
    });

    test('watchers update objects, never the sets', async () => {
      const { ws, cm } = await setup({ watch: true });
      write(ws, 'watched.ts', 'before');
      const { id } = await cm.read('watched.ts');
      await cm.deactivate(id);
      write(ws, 'watched.ts', 'after');
      // No API reports "the watcher has indexed it": poll the store with a deadline.
      const deadline = Date.now() + 10_000;
      let doc;
      while (Date.now() < deadline && (doc = await cm.getObject(id)).content !== 'after') await new Promise((r) => setTimeout(r, 50));
      expect(doc.content).toBe('after');
      await cm.transformContext([msg.user('q')]);
      expect(cm.snapshot().activeSet).toEqual([]);
      await cm.close();
    });
  });

  describe('polling watcher (network filesystems)', () => {
    test('watchPoll "always": with no platform watcher at all, a change on disk still reaches the model', async () => {
      const { ws, cm } = await setup({ watch: true, watchPoll: 'always', watchPollMs: 50 });
      write(ws, 'nfs.ts', 'export const v = "before";');
      await cm.read('nfs.ts');
      expect(cm.stats()).toMatchObject({ watchedDirs: 1, polledDirs: 1 });
      const t = [msg.user('go')];
      expect(JSON.stringify(await cm.transformContext(t))).toContain('before');
      // Same size, within the same second as the first write: seen all the same.
      write(ws, 'nfs.ts', 'export const v = "after!";');
      // No API reports "the poller has seen it": call again with a deadline.
      const deadline = Date.now() + 10_000;
      let seen = '';
      for (let i = 0; Date.now() < deadline && !seen.includes('after'); i++) {
        t.push(msg.user(`again ${i}`));
        seen = JSON.stringify(await cm.transformContext(t));
        if (!seen.includes('after')) await new Promise((r) => setTimeout(r, 50));
      }
      expect(seen).toContain('after');
      await cm.close();
    });

    test('stats(): a local directory is watched, not polled; no watcher, null', async () => {
      const { ws, cm } = await setup({ watch: true });
      write(ws, 'local.ts', 'x');
      await cm.read('local.ts');
      expect(cm.stats()).toMatchObject({ watchedDirs: 1, polledDirs: 0 });
      await cm.close();
      const { cm: off } = await setup({ watch: false });
      expect(off.stats()).toMatchObject({ watchedDirs: null, polledDirs: 0 });
      await off.close();
    });

    test('watchPoll must be auto, always or never; watchPollMs 10 ms to an hour', async () => {
      for (const bad of [{ watchPoll: 'sometimes' }, { watchPollMs: 5 }, { watchPollMs: 3_600_001 }]) {
        await expectCode(ContextManager.open({ sessionId: uid('p'), workspaceRoot: tempDir('scm-ws-'), store: options(), watch: true, ...bad }), 'INVALID_ARGUMENT');
      }
    });
  });

  describe('cache layout (the default)', () => {
    test('tool output inline with short ids; older output collapses in an epoch; refs resolve by alias', async () => {
      const { cm } = await setup({ layout: undefined, cachePolicy: { high: 300, low: 100 } });
      const big = (tag) => Array.from({ length: 20 }, (_, i) => `${tag} line ${i} of a long enough output`).join('\n');
      const t = [msg.user('go')];
      for (const [i, tag] of ['ONE', 'TWO', 'THREE'].entries()) {
        t.push(msg.assistant([{ id: `toolu_${i}`, name: 'bash', arguments: { command: `c${i}` } }]), msg.result(`toolu_${i}`, 'bash', big(tag)));
      }
      // The model sees the outputs whole once (issue 10); the next call collapses the older ones.
      const first = await cm.transformContext(t);
      expect(first.filter((m) => m.role === 'toolResult').map(textOf).join('\n')).toContain('ONE line 19');
      t.push(msg.user('next'));
      const out = await cm.transformContext(t);
      expect(textOf(out[0])).toMatch(/^Context manager: files and tool outputs are objects with ids/);
      const results = out.filter((m) => m.role === 'toolResult');
      expect(results.map((m) => m.toolCallId)).toEqual(['t1', 't2', 't3']);
      expect(textOf(results[0])).toBe('[t1 · 20 lines]');
      expect(textOf(results[2])).toContain('THREE line 19');
      expect(cm.cacheStats()).toMatchObject({ epochs: 1, collapsedResults: 2, sizeScale: 1 });
      expect(await cm.activate('t1')).toMatchObject({ ok: true, id: `toolcall:${cm.sessionId}:toolu_0` });
      await cm.close();
    });

    test('layout must be cache or spec', async () => {
      await expectCode(ContextManager.open({ sessionId: 'x', store: options(), layout: 'tail' }), 'INVALID_ARGUMENT');
    });
  });

  describe('forks and outages', () => {
    test('forkOf: the child starts from the parent\'s state at the fork point; opening it again resumes it', async () => {
      const { ws, cm: parent, storeOptions } = await setup();
      write(ws, 'a.ts', 'ALPHA');
      write(ws, 'b.ts', 'BRAVO');
      const t = [msg.user('go')];
      await parent.read('a.ts');
      await parent.read('b.ts');
      t.push(msg.assistant([{ id: 'r1', name: 'read', arguments: { path: 'a.ts' } }, { id: 'r2', name: 'read', arguments: { path: 'b.ts' } }]), msg.result('r1', 'read', 'ALPHA'), msg.result('r2', 'read', 'BRAVO'));
      await parent.transformContext(t);
      await parent.deactivate('b.ts');
      t.push(msg.assistant([{ id: 'd1', name: 'deactivate', arguments: { id: 'b.ts' } }]), msg.result('d1', 'deactivate', 'ok'));
      await parent.transformContext(t);
      const atFork = parent.snapshot();
      t.push(msg.assistant([], 'done'));
      await parent.close();

      const forkOf = { sessionId: parent.sessionId, messages: t };
      const open = () => ContextManager.open({ sessionId: `${parent.sessionId}-fork`, workspaceRoot: ws, store: storeOptions, layout: 'spec', forkOf });
      const child = await open();
      expect(child.snapshot()).toEqual(atFork);
      const out = await child.transformContext([...t, msg.user('in the fork')]);
      expect(out.filter((m) => typeof m.content === 'string' && m.content.startsWith('ACTIVE_CONTENT')).map((m) => m.content)).toEqual([`ACTIVE_CONTENT id=${child.resolve('a.ts').objectId}\nALPHA`]);
      expect(child.snapshot().sessionIndex.filter((id) => id.startsWith(`toolcall:${child.sessionId}:`))).toEqual([]);
      const snap = child.snapshot();
      await child.close();
      const again = await open();
      expect(again.snapshot()).toEqual(snap);
      expect(again.stats().modelCallCount).toBe(1);
      await again.close();
      await expectCode(ContextManager.open({ sessionId: 'x', store: storeOptions, forkOf: { messages: [] } }), 'INVALID_ARGUMENT');
      await expectCode(ContextManager.open({ sessionId: 'x', store: storeOptions, forkOf: { sessionId: 'x', messages: [] } }), 'INVALID_ARGUMENT');
    });

    test('lastError is null while writes land', async () => {
      const { cm } = await setup();
      await cm.transformContext([msg.user('q')]);
      await cm.flush();
      expect(cm.lastError).toBeNull();
      expect(cm.stats().hasPending).toBe(false);
      await cm.close();
    });

    test('write-behind: the store reads see the transform just returned; durableTransform: true has landed on return', async () => {
      const { cm } = await setup();
      await cm.transformContext([msg.user('q1')]);
      // No flush: getObject waits for the background write.
      const chat = await cm.getObject(cm.chatObjectId);
      expect(JSON.stringify(chat)).toContain('q1');
      expect((await cm.reconstructCall(0)).length).toBeGreaterThan(0);
      await cm.transformContext([msg.user('q1'), msg.user('q2')]);
      expect(JSON.stringify(await cm.history(cm.chatObjectId))).toContain('q2');
      await cm.close();

      const { cm: d } = await setup({ durableTransform: true });
      await d.transformContext([msg.user('q')]);
      expect(d.stats().hasPending).toBe(false);
      await d.close();
    });
  });

  test(`open validates its options (${kind})`, async () => {
    await expectCode(ContextManager.open({}), 'INVALID_ARGUMENT');
    await expectCode(ContextManager.open(), 'INVALID_ARGUMENT');
    await expectCode(ContextManager.open({ sessionId: 'x', store: { kind: 'nope' } }), 'INVALID_ARGUMENT');
    await expectCode(ContextManager.open({ sessionId: 'bad\u0001id', store: options() }), 'INVALID_ARGUMENT');
  });
});

describe('ContextManager store errors', () => {
  test('an unreachable XTDB is STORE_UNAVAILABLE', async () => {
    await expectCode(ContextManager.open({ sessionId: 'x', store: { kind: 'xtdb', url: 'http://127.0.0.1:9', timeoutMs: 1000 } }), 'STORE_UNAVAILABLE');
  });

  test('without a store option the embedded store lives at <workspaceRoot>/.scm/store.sqlite', async () => {
    const ws = tempDir('scm-ws-');
    const cm = await ContextManager.open({ sessionId: uid('d'), workspaceRoot: ws });
    await cm.close();
    expect(scm.defaultStorePath(ws)).toBe(path.join(ws, '.scm/store.sqlite'));
    const { existsSync } = await import('node:fs');
    expect(existsSync(path.join(ws, '.scm/store.sqlite'))).toBe(true);
  });
});
