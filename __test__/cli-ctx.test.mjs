// `self-context-manager ctx …` (issue 11 item 6) and the commit each model call followed in `calls` / `call`
// (item 5), as a user runs them: a child process on a store a session with context commits and a /tree-style
// branch switch wrote, both stores, human output and --json, exit statuses (0 done, 1 failed, 2 wrong usage).
import { it, expect, beforeAll } from 'vitest';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { scm, tempDir, uid, describeStores } from './helpers.mjs';
import { cli } from './cli-helpers.mjs';

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

describeStores('command-line tool: ctx', (sk) => {
  let storeArg;
  let workspace;
  let sessionId;
  let c; // commits: c0, c1 (branch A), cb (branch B from c0)
  let a;
  beforeAll(async () => {
    const storeOptions = sk.options();
    storeArg = storeOptions.kind === 'xtdb' ? storeOptions.url : storeOptions.path;
    workspace = tempDir('scm-cli-ctx-');
    sessionId = uid('ctx');
    const cm = await scm.ContextManager.open({ sessionId, store: storeOptions, workspaceRoot: workspace, template: 'pi/test', principal: uid('p') });
    a = [...turn(0)];
    await cm.transformContext(a); // call 0
    const c0 = await cm.checkpoint({ trigger: 'turn_boundary', createdAt: '2026-11-24T14:00:00Z' });
    a.push(...turn(1));
    await cm.transformContext(a); // call 1
    const c1 = await cm.checkpoint({ trigger: 'turn_boundary', createdAt: '2026-11-24T14:01:00Z' });
    await cm.commits.updateMetadata(c1.id, { summary: 'asked twice' });
    await cm.rewind(turn(0));
    await cm.transformContext([...turn(0), ...turn(5)]); // call 2, branch B
    const cb = await cm.checkpoint({ trigger: 'turn_boundary', createdAt: '2026-11-24T14:02:00Z' });
    await cm.close();
    c = { c0: c0.id, c1: c1.id, cb: cb.id };
  });
  const run = (...args) => cli([...args, '--store', storeArg], { cwd: workspace });

  it('ctx log: the session\'s chain from its tip (the branch it is on), newest first', async () => {
    const json = await run('ctx', 'log', sessionId, '--json');
    expect(json.status, json.stderr).toBe(0);
    const log = JSON.parse(json.stdout);
    expect(log.tip).toBe(c.cb);
    expect(log.commits.map((x) => x.id)).toEqual([c.cb, c.c0]);
    const text = await run('ctx', 'log', '--session', sessionId);
    expect(text.status, text.stderr).toBe(0);
    const rows = text.stdout.trim().split('\n');
    expect(rows[0]).toMatch(/^COMMIT\s+TYPE\s+TRIGGER\s+MESSAGES\s+TOKENS\s+CREATED \(UTC\)\s+SUMMARY$/);
    expect(rows[1]).toMatch(new RegExp(`^${c.cb}\\s+delta\\s+turn_boundary\\s+4\\s+\\d+\\s+2026-11-24 14:02:00`));
    expect(rows).toHaveLength(3);
    expect(JSON.parse((await run('ctx', 'log', sessionId, '--depth', '1', '--json')).stdout).commits.map((x) => x.id)).toEqual([c.cb]);
    const none = await run('ctx', 'log', uid('nobody'));
    expect(none.status).toBe(0);
    expect(none.stdout).toMatch(/^no context commits in session/);
  });

  it('ctx show and history', async () => {
    const json = await run('ctx', 'show', c.c1, '--json');
    expect(json.status, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ id: c.c1, parent: c.c0, sessionId, summary: 'asked twice', template: 'pi/test' });
    const text = await run('ctx', 'show', c.c1);
    expect(text.stdout).toMatch(new RegExp(`^commit    ${c.c1}\\nparent    ${c.c0}\\ntype      delta \\(turn_boundary\\)`));
    expect(text.stdout).toContain('summary   asked twice');
    const h = await run('ctx', 'history', c.c1, '--json');
    expect(JSON.parse(h.stdout).map((x) => x.id)).toEqual([c.c1, c.c0]);
    const h1 = await run('ctx', 'history', c.c1, '--depth', '1');
    expect(h1.stdout.trim().split('\n')).toHaveLength(2);
    const missing = await run('ctx', 'show', `ctx-${'0'.repeat(32)}`);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('[UNKNOWN_OBJECT]');
    const bad = await run('ctx', 'show', 'nope');
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain('[INVALID_ARGUMENT]');
  });

  it('ctx resolve: the commit at or before a time', async () => {
    const r = await run('ctx', 'resolve', '--session', sessionId, '--at', '2026-11-24T14:01:30Z');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe(`${c.c1}\n`);
    const j = await run('ctx', 'resolve', '--session', sessionId, '--at', '2026-11-24T14:05:00Z', '--json');
    expect(JSON.parse(j.stdout)).toMatchObject({ commit: c.cb });
    const early = await run('ctx', 'resolve', '--session', sessionId, '--at', '2026-11-24T13:00:00Z');
    expect(early.status).toBe(1);
    expect(early.stderr).toContain('[UNKNOWN_OBJECT]');
    expect((await run('ctx', 'resolve', '--session', sessionId)).status).toBe(2);
    const badTime = await run('ctx', 'resolve', '--session', sessionId, '--at', 'teatime');
    expect(badTime.status).toBe(1);
    expect(badTime.stderr).toContain('[INVALID_ARGUMENT]');
  });

  it('ctx materialize: the conversation at a commit, as pi messages or a pi session file', async () => {
    const j = await run('ctx', 'materialize', c.c1);
    expect(j.status, j.stderr).toBe(0);
    expect(JSON.parse(j.stdout)).toEqual(a);
    const b = await run('ctx', 'materialize', c.cb, '--json');
    expect(JSON.parse(b.stdout)).toMatchObject({ messages: [...turn(0), ...turn(5)], commits: 2 });
    const after = await run('ctx', 'materialize', c.c1, '--stop', c.c0, '--json');
    expect(JSON.parse(after.stdout).messages).toEqual(turn(1));
    const out = path.join(workspace, 'session.jsonl');
    const file = await run('ctx', 'materialize', c.c1, '--format', 'pi-jsonl', '-o', 'session.jsonl');
    expect(file.status, file.stderr).toBe(0);
    expect(file.stdout).toMatch(/session\.jsonl: 8 message\(s\) from 2 commit\(s\)/);
    const entries = readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(entries[0].type).toBe('session');
    expect(entries.filter((e) => e.type === 'message')).toHaveLength(8);
    const badFormat = await run('ctx', 'materialize', c.c1, '--format', 'docx');
    expect(badFormat.status).toBe(1);
    expect(badFormat.stderr).toContain('[INVALID_ARGUMENT]');
  });

  it('usage errors exit 2', async () => {
    for (const args of [['ctx'], ['ctx', 'bogus'], ['ctx', 'show'], ['ctx', 'log'], ['ctx', 'log', 'a', 'b'], ['ctx', 'history', 'x', '--depth', 'lots']]) {
      const r = await run(...args);
      expect(r.status, `${args.join(' ')}: ${r.stderr}`).toBe(2);
    }
  });

  it('calls and call: the commit each model call followed, on both branches', async () => {
    const json = await run('calls', sessionId, '--json');
    expect(json.status, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout).map((x) => x.commit)).toEqual([null, c.c0, c.c0]);
    const text = await run('calls', sessionId);
    expect(text.stdout.trim().split('\n')[3]).toMatch(new RegExp(`${c.c0}$`));
    const call = await run('call', sessionId, '2');
    expect(call.status, call.stderr).toBe(0);
    expect(call.stdout.split('\n')[0]).toBe(`call 2 followed context commit ${c.c0}`);
    expect(call.stdout).toContain('question 5');
    expect(call.stdout).not.toContain('question 1');
    expect((await run('call', sessionId, '0')).stdout.split('\n')[0]).toBe("call 0 followed no context commit (before the session's first)");
  });
});
