// The command-line tool (bin/self-context-manager.js) as a user runs it: a child process on a store that a
// recorded session wrote, every subcommand on both stores, human output and --json, exit statuses
// (0 done, 1 failed, 2 wrong usage), and that looking never writes.
import { describe, it, expect, beforeAll } from 'vitest';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { scm, tempDir, uid, describeStores } from './helpers.mjs';
import { cli, lines, record } from './cli-helpers.mjs';

describeStores('command-line tool', (sk) => {
  let storeOptions;
  let storeArg;
  let workspace;
  let sessionId;
  let outs;
  beforeAll(async () => {
    storeOptions = sk.options();
    storeArg = storeOptions.kind === 'xtdb' ? storeOptions.url : storeOptions.path;
    workspace = tempDir('scm-cli-ws-');
    sessionId = uid('cli');
    outs = await record(storeOptions, workspace, sessionId);
  });
  const run = (...args) => cli([...args, '--store', storeArg], { cwd: workspace });

  it('sessions: the recorded session with its calls and the last call\'s tokens', async () => {
    const json = await run('sessions', '--json');
    expect(json.status, json.stderr).toBe(0);
    const s = JSON.parse(json.stdout).find((x) => x.sessionId === sessionId);
    expect(s).toMatchObject({ calls: outs.length });
    expect(s.tokens).toBeGreaterThan(0);
    // Kept by the last call's record, equal to what `calls` counts on the session rebuilt.
    const calls = JSON.parse((await run('calls', sessionId, '--json')).stdout);
    expect(s.tokens).toBe(calls.at(-1).tokens);
    expect(Object.keys(s).sort()).toEqual(['calls', 'lastActivity', 'objects', 'sessionId', 'started', 'tokens']);
    expect(Date.parse(s.started)).toBeLessThanOrEqual(Date.parse(s.lastActivity));
    const text = await run('sessions');
    expect(text.status).toBe(0);
    expect(text.stdout.split('\n')[0]).toMatch(/^SESSION\s+STARTED \(UTC\)\s+CALLS\s+TOKENS\s+LAST ACTIVITY/);
    expect(text.stdout).toMatch(new RegExp(`${sessionId}\\s+\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d\\s+${outs.length}\\s`));
    expect(text.stderr).toBe('');
  });

  it('objects: ids as the model sees them, full ids with --full', async () => {
    const json = await run('objects', sessionId, '--json');
    expect(json.status, json.stderr).toBe(0);
    const list = JSON.parse(json.stdout);
    const file = list.find((o) => o.type === 'file');
    expect(file.alias).toBe('f1');
    expect(file.path).toMatch(/notes\.md$/);
    const calls = list.filter((o) => o.type === 'toolcall');
    expect(calls.map((o) => o.alias)).toEqual(calls.map((_, i) => `t${i + 1}`));
    expect(calls[0].id).toBe(`toolcall:${sessionId}:c1`);
    const text = await run('objects', sessionId);
    expect(text.stdout).toMatch(/^ID\s+TYPE\s+PATH \/ TOOL\s+CHARS\s+SET/);
    expect(text.stdout).toMatch(/\nt1\s+toolcall\s+bash\s+\d/);
    expect(text.stdout).not.toContain(`toolcall:${sessionId}:c1`);
    const full = await run('objects', sessionId, '--full');
    expect(full.stdout).toMatch(new RegExp(`\\nt1\\s+toolcall:${sessionId}:c1\\s+toolcall`));
  });

  it('show: by full id, by short id with --session; a short id alone is a usage error', async () => {
    const full = await run('show', `toolcall:${sessionId}:c2`, '--json');
    expect(full.status).toBe(0);
    const doc = JSON.parse(full.stdout);
    expect(doc).toMatchObject({ 'xt/id': `toolcall:${sessionId}:c2`, type: 'toolcall', tool: 'bash', content: lines(20, 'out2') });
    const short = await run('show', 't2', '--session', sessionId);
    expect(short.status).toBe(0);
    expect(short.stdout).toMatch(new RegExp(`^xt/id\\s+toolcall:${sessionId}:c2\\ntype\\s+toolcall`));
    expect(short.stdout).toContain(`--- content (${lines(20, 'out2').length} chars)\nout2 line 0`);
    const alone = await run('show', 't2');
    expect(alone.status).toBe(2);
    expect(alone.stderr).toContain('t2 is an id the model sees in one session: add --session');
    const missing = await run('show', 'no-such-object');
    expect(missing.status).toBe(1);
    expect(missing.stderr).toMatch(/no object no-such-object \[UNKNOWN_OBJECT\]/);
  });

  it('history and as-of: every version, and the one visible at a transaction or a time', async () => {
    const file = path.join(workspace, 'notes.md');
    const cm = await scm.ContextManager.open({ sessionId, store: storeOptions, workspaceRoot: workspace });
    writeFileSync(file, '# notes\nhello again\n');
    await cm.observeWrite('notes.md');
    await cm.close();
    const json = await run('history', 'f1', '--session', sessionId, '--json');
    expect(json.status, json.stderr).toBe(0);
    const versions = JSON.parse(json.stdout);
    expect(versions.map((v) => v.doc.content)).toEqual(['# notes\nhello\n', '# notes\nhello again\n']);
    const text = await run('history', 'f1', '--session', sessionId);
    expect(text.stdout).toMatch(/^\s*TX\s+TIME \(UTC\)\s+CHARS\s+STATE\s+OBJECT HASH\n/);
    expect(text.stdout.trim().split('\n')).toHaveLength(3);
    const first = await run('as-of', 'f1', String(versions[0].txId), '--session', sessionId, '--json');
    expect(first.status).toBe(0);
    expect(JSON.parse(first.stdout).content).toBe('# notes\nhello\n');
    const byTime = await run('as-of', 'f1', versions[1].txTime, '--session', sessionId);
    expect(byTime.status).toBe(0);
    expect(byTime.stdout).toContain('hello again');
    const before = await run('as-of', 'f1', '0', '--session', sessionId);
    expect(before.status).toBe(1);
    expect(before.stderr).toContain('[UNKNOWN_OBJECT]');
  });

  it('calls: one line per model call, equal to what the session returned', async () => {
    const json = await run('calls', sessionId, '--json');
    expect(json.status, json.stderr).toBe(0);
    const list = JSON.parse(json.stdout);
    expect(list.map((c) => c.call)).toEqual(outs.map((_, i) => i));
    expect(list.map((c) => c.messages)).toEqual(outs.map((o) => o.length));
    expect(list[0].cachedTokens).toBe(0);
    expect(list[1].cachedTokens).toBeGreaterThan(0);
    expect(list.reduce((n, c) => n + c.epochs, 0)).toBeGreaterThan(0);
    // pi alone sends the whole transcript; by the last call the collapses keep the context below it.
    expect(list.at(-1).transcriptTokens).toBeGreaterThan(list.at(-1).tokens);
    const text = await run('calls', sessionId);
    const rows = text.stdout.trim().split('\n');
    expect(rows[0]).toMatch(/^CALL\s+MESSAGES\s+TOKENS\s+CACHED\s+NEW\s+PI MESSAGES\s+COLLAPSES\s+COMMIT$/);
    expect(rows).toHaveLength(outs.length + 1);
    expect(text.stdout).toMatch(/\d collapses?/);
    expect(text.stderr).toBe('', 'no progress bar when stderr is not a terminal');
  });

  it('call: exactly what the model saw, rebuilt from the store', async () => {
    const n = outs.length - 1;
    const json = await run('call', sessionId, String(n), '--json');
    expect(json.status, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual(outs[n]);
    const text = await run('call', sessionId, '2');
    expect(text.status).toBe(0);
    expect(text.stdout).toMatch(/── \[\d+\] toolResult t2 \(bash\)\nout2 line 0/);
    expect(text.stdout).toContain('→ bash({"command":"echo 2"})');
    const bad = await run('call', sessionId, 'two');
    expect(bad.status).toBe(2);
    const beyond = await run('call', sessionId, '999');
    expect(beyond.status).toBe(1);
    expect(beyond.stderr).toContain('[INVALID_ARGUMENT]');
    const nobody = await run('calls', uid('nobody'));
    expect(nobody.status).toBe(1);
    expect(nobody.stderr).toContain('[UNKNOWN_OBJECT]');
  });

  it('stats: kind, size, objects, versions, sessions', async () => {
    const json = await run('stats', '--json');
    expect(json.status, json.stderr).toBe(0);
    const s = JSON.parse(json.stdout);
    expect(s.kind).toBe(storeOptions.kind);
    expect(s.objects).toBeGreaterThan(outs.length);
    expect(s.versions).toBeGreaterThanOrEqual(s.objects);
    expect(s.sessions).toBeGreaterThanOrEqual(1);
    if (sk.kind === 'embedded') expect(s.bytes).toBeGreaterThan(0);
    const text = await run('stats');
    expect(text.stdout).toMatch(new RegExp(`^store\\s+${storeOptions.kind} `));
    expect(text.stdout).toMatch(/\nversions\s+[\d,]+\n/);
  });

  it('looking writes nothing: every read-only command leaves the store as it was', async () => {
    const store = await scm.openStore(storeOptions);
    const before = await store.history(`session:${sessionId}`);
    writeFileSync(path.join(workspace, 'notes.md'), 'changed on disk\n');
    for (const args of [['objects', sessionId], ['calls', sessionId], ['call', sessionId, '0'], ['sessions']]) {
      const r = await run(...args);
      expect(r.status, `${args.join(' ')}: ${r.stderr}`).toBe(0);
    }
    expect(await store.history(`session:${sessionId}`)).toEqual(before);
    const file = JSON.parse((await run('history', 'f1', '--session', sessionId, '--json')).stdout);
    expect(file.at(-1).doc.content).not.toBe('changed on disk\n');
  });
});

describe('command-line tool: usage and the store it picks', () => {
  it('no command prints the help with exit 2; help exits 0', async () => {
    const none = await cli([]);
    expect(none.status).toBe(2);
    expect(none.stdout).toMatch(/^usage: self-context-manager <command>/);
    for (const c of ['sessions', 'objects <session>', 'show <id>', 'history <id>', 'as-of <id> <time|tx>', 'calls <session>', 'call <session> <n>', 'stats']) {
      expect(none.stdout).toContain(`  ${c} `);
    }
    expect((await cli(['help'])).status).toBe(0);
    expect((await cli(['calls', '--help'])).stdout).toMatch(/^usage: self-context-manager calls <session>/);
  });

  it('wrong usage exits 2 with a message on stderr', async () => {
    for (const args of [['bogus'], ['calls'], ['calls', 'a', 'b'], ['stats', '--bogus'], ['stats', '--store']]) {
      const r = await cli(args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/^self-context-manager: /);
      expect(r.stdout).toBe('');
    }
  });

  it('the store comes from SCM_STORE_PATH like the pi package; a missing file is an error, never created', async () => {
    const dir = tempDir('scm-cli-env-');
    const file = path.join(dir, 'store.sqlite');
    const missing = await cli(['stats'], { cwd: dir, env: { SCM_STORE_PATH: file } });
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain(`no store at ${file}`);
    expect(missing.stderr).toContain('[STORE_UNAVAILABLE]');
    expect(existsSync(file)).toBe(false);
    await record({ kind: 'embedded', path: file }, dir, uid('env'), 2);
    const ok = await cli(['stats', '--json'], { cwd: dir, env: { SCM_STORE_PATH: file } });
    expect(ok.status).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ kind: 'embedded', location: file, sessions: 1 });
    // Default: <cwd>/.scm/store.sqlite, as pi's package uses it.
    const def = await cli(['stats'], { cwd: dir });
    expect(def.status).toBe(1);
    expect(def.stderr).toContain(path.join(dir, '.scm', 'store.sqlite'));
  });

  it('an unreachable XTDB node is a failure (exit 1) with its code', async () => {
    const r = await cli(['stats', '--store', 'http://127.0.0.1:9', '--json'], { env: { SCM_XTDB_TIMEOUT_MS: '500' } });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/\[STORE_(UNAVAILABLE|TIMEOUT)\]/);
  });
});
