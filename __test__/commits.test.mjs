// Context commits through the addon and the facade (issue 11): cm.checkpoint, cm.commits.{show, history, resolve,
// updateMetadata, materialize}, ContextManager.open({ fromCommit }). The rules are tested in the core's conformance
// suite (crates/scm-core/tests/commits.rs); this proves the names, shapes and codes carry through.
import { test, expect } from 'vitest';
import { scm, tempDir, uid, describeStores, expectCode } from './helpers.mjs';

const { ContextManager, commitsOf } = scm;

/** pi messages of turn k: prompt, tool call, result, answer. */
function turn(k) {
  const ts = 1_700_000_000_000 + k * 10;
  const call = `call-${k}`;
  const meta = { api: 'faux', provider: 'faux', model: 'faux-1', usage: { input: 1, output: 1 } };
  return [
    { role: 'user', content: `question ${k}`, timestamp: ts },
    { role: 'assistant', content: [{ type: 'text', text: `looking ${k}` }, { type: 'toolCall', id: call, name: 'bash', arguments: { command: `echo ${k}` } }], ...meta, stopReason: 'toolUse', timestamp: ts + 1 },
    { role: 'toolResult', toolCallId: call, toolName: 'bash', content: [{ type: 'text', text: `output ${k}` }], isError: false, timestamp: ts + 2 },
    { role: 'assistant', content: [{ type: 'text', text: `answer ${k}` }], ...meta, stopReason: 'stop', timestamp: ts + 3 },
  ];
}

describeStores('context commits', ({ options }) => {
  async function open(extra = {}) {
    const ws = tempDir('scm-ws-');
    return ContextManager.open({ sessionId: uid('c'), workspaceRoot: ws, store: options(), template: 'pi/test', principal: uid('p'), ...extra });
  }

  test('checkpoint, show, history, materialize, updateMetadata', async () => {
    const cm = await open();
    const t = [];
    const ids = [];
    for (const k of [0, 1, 2]) {
      t.push(...turn(k));
      await cm.transformContext(t);
      const c = await cm.checkpoint({ trigger: 'turn_boundary' });
      expect(c).toMatchObject({ commitType: 'delta', trigger: 'turn_boundary', template: 'pi/test', sessionId: cm.sessionId, messageCount: 4, format: 'pi-messages/1' });
      expect(c.id).toMatch(/^ctx-[0-9a-f]{32}$/);
      expect(c.parent).toBe(ids.at(-1) ?? null);
      ids.push(c.id);
    }
    expect(cm.commitTip).toBe(ids[2]);
    // Nothing new: no commit, the tip comes back.
    expect((await cm.checkpoint({ trigger: 'turn_boundary' })).id).toBe(ids[2]);
    const h = await cm.commits.history(ids[2]);
    expect(h.map((c) => c.id)).toEqual([...ids].reverse());
    expect((await cm.commits.history(ids[2], { depth: 1 })).map((c) => c.id)).toEqual([ids[2]]);
    const m = await cm.commits.materialize(ids[2]);
    expect(m.messages).toEqual(t);
    expect(m).toMatchObject({ messageCount: 12, commits: 3, cached: false, stop: 'compaction' });
    expect((await cm.commits.materialize(ids[2])).cached).toBe(true);
    const j = await cm.commits.materialize(ids[1], { format: 'pi-jsonl' });
    const lines = j.jsonl.trim().split('\n').map((l) => JSON.parse(l));
    expect(lines[0]).toMatchObject({ type: 'session', version: 3 });
    expect(lines.slice(1).map((l) => l.message)).toEqual(t.slice(0, 8));
    await cm.commits.updateMetadata(ids[0], { summary: 'asked and answered' });
    expect((await cm.commits.show(ids[0])).summary).toBe('asked and answered');
    const e = await cm.checkpoint({ summary: 'explicit, nothing new' });
    expect(e).toMatchObject({ trigger: 'explicit', parent: ids[2], messageCount: 0, summary: 'explicit, nothing new' });
    await cm.close();
  });

  test('resolve by time, on the session and the principal', async () => {
    const principal = uid('alice');
    const cm = await open({ principal });
    const ids = [];
    for (const k of [0, 1, 2]) {
      await cm.transformContext(turn(0).concat(...[1, 2].slice(0, k).map(turn)));
      ids.push((await cm.checkpoint({ createdAt: `2026-11-24T14:0${k}:00.000Z` })).id);
    }
    const commits = commitsOf(cm.store);
    expect(await commits.resolve({ sessionId: cm.sessionId, at: '2026-11-24T14:05:00Z' })).toBe(ids[2]);
    expect(await commits.resolve({ principal, at: new Date('2026-11-24T14:01:30Z') })).toBe(ids[1]);
    expect(await commits.resolve({ principal, at: '2026-11-24T13:00:00Z' })).toBeNull();
    await expectCode(commits.resolve({ at: '2026-11-24T14:00:00Z' }), 'INVALID_ARGUMENT');
    await expectCode(commits.resolve({ sessionId: cm.sessionId, at: 'teatime' }), 'INVALID_ARGUMENT');
    await cm.close();
  });

  test('compaction: delta first, then a compaction commit; stop strategies', async () => {
    const cm = await open();
    const t = [...turn(0), ...turn(1)];
    await cm.transformContext(t);
    const summary = { role: 'compactionSummary', summary: 'two turns', tokensBefore: 100, timestamp: 1_700_000_001_000 };
    const comp = await cm.checkpoint({ trigger: 'compaction', compaction: [summary] });
    expect(comp).toMatchObject({ commitType: 'compaction', trigger: 'compaction' });
    expect((await cm.commits.show(comp.parent)).commitType).toBe('delta');
    const after = [summary, ...turn(2)];
    await cm.transformContext(after);
    const tip = await cm.checkpoint({ trigger: 'turn_boundary' });
    expect((await cm.commits.materialize(tip.id)).messages).toEqual(after);
    expect((await cm.commits.materialize(tip.id, { stop: 'root' })).messages).toEqual([...t, ...turn(2)]);
    await cm.close();
  });

  test('open({ fromCommit }) branches; the branch holds nothing of its parent\'s later turns', async () => {
    const store = options();
    const ws = tempDir('scm-ws-');
    const a = await ContextManager.open({ sessionId: uid('a'), workspaceRoot: ws, store });
    const t = [...turn(0)];
    await a.transformContext(t);
    const base = await a.checkpoint({ trigger: 'turn_boundary' });
    const b = await ContextManager.open({ sessionId: uid('b'), workspaceRoot: ws, store, fromCommit: base.id });
    expect(b.commitTip).toBe(base.id);
    const bt = (await b.commits.materialize(base.id)).messages.concat(turn(1));
    await b.transformContext(bt);
    const bc = await b.checkpoint({ trigger: 'turn_boundary' });
    expect(bc).toMatchObject({ parent: base.id, messageCount: 4, sessionId: b.sessionId });
    t.push(...turn(2));
    await a.transformContext(t);
    const ac = await a.checkpoint({ trigger: 'turn_boundary' });
    const ma = (await a.commits.materialize(ac.id)).messages;
    const mb = (await b.commits.materialize(bc.id)).messages;
    expect(mb).toEqual(bt);
    expect(ma.some((m) => m.content === 'question 1')).toBe(false);
    expect(mb.some((m) => m.content === 'question 2')).toBe(false);
    await expectCode(ContextManager.open({ sessionId: a.sessionId, workspaceRoot: ws, store, fromCommit: 'ctx-nope' }), 'INVALID_ARGUMENT');
    await a.close();
    await b.close();
  });

  test('rewind (a host branch switch) and which commit each model call followed', async () => {
    const cm = await open();
    const a = [...turn(0)];
    await cm.transformContext(a); // call 0: before any commit
    const c0 = await cm.checkpoint({ trigger: 'turn_boundary' });
    a.push(...turn(1));
    await cm.transformContext(a); // call 1
    const c1 = await cm.checkpoint({ trigger: 'turn_boundary' });
    // The branch continues the session: nothing moves.
    expect(await cm.rewind(a)).toEqual({ moved: false, commit: null });
    // Back to turn 0 (pi's /tree): the session moves to c0; the next call shows nothing of turn 1.
    const moved = await cm.rewind(turn(0));
    expect(moved).toMatchObject({ moved: true, commit: { id: c0.id } });
    expect(cm.commitTip).toBe(c0.id);
    const b = [...turn(0), ...turn(5)];
    const seen = JSON.stringify(await cm.transformContext(b)); // call 2
    expect(seen).toContain('question 5');
    expect(seen).not.toContain('question 1');
    const cb = await cm.checkpoint({ trigger: 'turn_boundary' });
    expect(cb.parent).toBe(c0.id);
    expect((await cm.rewind(a)).commit.id).toBe(c1.id);
    await cm.transformContext([...a, ...turn(6)]); // call 3
    // Accountability: each call names the commit it followed, on both branches.
    const followed = [null, c0.id, c0.id, c1.id];
    expect((await cm.callSummaries()).map((c) => c.commit)).toEqual(followed);
    for (const [n, id] of followed.entries()) expect(await cm.callCommit(n)).toBe(id);
    await expectCode(cm.callCommit(9), 'INVALID_ARGUMENT');
    await expectCode(cm.rewind('nope'), 'INVALID_ARGUMENT');
    // Back before the first commit: the root; the next commit is a new root.
    expect(await cm.rewind([turn(0)[0]])).toEqual({ moved: true, commit: null });
    expect(cm.commitTip).toBeNull();
    const seenRoot = JSON.stringify(await cm.transformContext([turn(0)[0], ...turn(7).slice(1)]));
    expect(seenRoot).not.toContain('answer 0');
    expect((await cm.checkpoint({ trigger: 'turn_boundary' })).parent).toBeNull();
    await cm.close();
  });

  test('rewind onto the branch the session is on (every resume under pi): nothing moves, nothing is committed', async () => {
    const cm = await open();
    const a = [...turn(0), ...turn(1)];
    await cm.transformContext(a);
    expect(await cm.rewind(a)).toEqual({ moved: false, commit: null });
    expect(cm.commitTip).toBeNull();
    await cm.close();
  });

  test('rewind in a session opened from a commit, back before its own first commit: the model sees only the branch', async () => {
    const store = options();
    const ws = tempDir('scm-ws-');
    const a = await ContextManager.open({ sessionId: uid('a'), workspaceRoot: ws, store });
    await a.transformContext([...turn(0), ...turn(1)]);
    const base = await a.checkpoint({ trigger: 'turn_boundary' });
    await a.close();
    // pi /fork or /ctx fork: the new session starts from the parent's state at the fork point.
    const b = await ContextManager.open({ sessionId: uid('b'), workspaceRoot: ws, store, fromCommit: base.id });
    const seeded = (await b.commits.materialize(base.id)).messages;
    await b.transformContext([...seeded, ...turn(2)]);
    // /tree onto turn 0, before the fork point: no commit of this session maps, and its first state holds turn 1.
    expect(await b.rewind(turn(0))).toEqual({ moved: true, commit: null });
    expect(b.commitTip).toBeNull();
    const seen = JSON.stringify(await b.transformContext([...turn(0), ...turn(3)]));
    expect(seen).toContain('question 3');
    expect(seen).toContain('answer 0');
    for (const left of ['question 1', 'answer 1', 'question 2', 'answer 2']) expect(seen).not.toContain(left);
    // The next commit is a new root; the branch is committed as the session goes on.
    expect((await b.checkpoint({ trigger: 'turn_boundary' })).parent).toBeNull();
    await b.close();
    // Resumed, the session goes on from there.
    const again = await ContextManager.open({ sessionId: b.sessionId, workspaceRoot: ws, store });
    const after = JSON.stringify(await again.transformContext([...turn(0), ...turn(3), ...turn(4)]));
    expect(after).toContain('question 4');
    expect(after).not.toContain('question 1');
    await again.close();
  });

  test('bad input has codes', async () => {
    const cm = await open();
    await expectCode(cm.commits.show('nope'), 'INVALID_ARGUMENT');
    await expectCode(cm.commits.show(`ctx-${'0'.repeat(32)}`), 'UNKNOWN_OBJECT');
    await expectCode(cm.checkpoint({ trigger: 'sometimes' }), 'INVALID_ARGUMENT');
    await expectCode(cm.commits.materialize(`ctx-${'0'.repeat(32)}`, { stop: 'lunch' }), 'INVALID_ARGUMENT');
    await expectCode(cm.commits.history(`ctx-${'0'.repeat(32)}`, { depth: -1 }), 'INVALID_ARGUMENT');
    await cm.close();
  });
});
