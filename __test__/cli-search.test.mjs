// `self-context-manager search`: the core's full-text search from the command line, on both stores. A child
// process as a user runs it; text and --json, the filters, exit statuses (2 usage, 1 coded failure), no writes.
import { it, expect, beforeAll } from 'vitest';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { scm, tempDir, uid, describeStores } from './helpers.mjs';
import { cli } from './cli-helpers.mjs';

describeStores('command-line tool: search', (sk) => {
  let storeOptions;
  let storeArg;
  let workspace;
  let sessionId;
  // A word no other test writes (suites share one XTDB node).
  const word = `zebracorn${randomUUID().slice(0, 8)}`;
  beforeAll(async () => {
    storeOptions = sk.options();
    storeArg = storeOptions.kind === 'xtdb' ? storeOptions.url : storeOptions.path;
    workspace = tempDir('scm-cli-search-');
    sessionId = uid('cli-search');
    writeFileSync(path.join(workspace, 'notes.md'), `# notes\nthe ${word} lives here\n`);
    const cm = await scm.ContextManager.open({ sessionId, store: storeOptions, workspaceRoot: workspace });
    expect((await cm.read('notes.md')).ok).toBe(true);
    const msgs = [
      { role: 'user', content: 'look', timestamp: 1 },
      { role: 'assistant', content: [{ type: 'toolCall', id: 'c1', name: 'bash', arguments: { command: 'grep -r zebra' } }], stopReason: 'toolUse', timestamp: 2 },
      { role: 'toolResult', toolCallId: 'c1', toolName: 'bash', content: [{ type: 'text', text: `found one ${word} in the logs` }], isError: false, timestamp: 3 },
    ];
    await cm.transformContext(msgs);
    await cm.close();
  });
  const run = (...args) => cli([...args, '--store', storeArg], { cwd: workspace });

  it('finds the file and the tool output, best first, with --json and as a table', async () => {
    const json = await run('search', word, '--json');
    expect(json.status, json.stderr).toBe(0);
    const hits = JSON.parse(json.stdout);
    expect(hits.map((h) => h.type).sort()).toEqual(['file', 'toolcall']);
    const call = hits.find((h) => h.type === 'toolcall');
    expect(call).toMatchObject({ id: `toolcall:${sessionId}:c1`, tool: 'bash', session: sessionId });
    expect(call.snippet).toContain(`[${word}]`);
    expect(hits.find((h) => h.type === 'file').path).toMatch(/notes\.md$/);
    expect(hits[0].score).toBeGreaterThanOrEqual(hits[1].score);
    const text = await run('search', word);
    expect(text.status, text.stderr).toBe(0);
    const rows = text.stdout.split('\n');
    expect(rows[0]).toMatch(/^#\s+TYPE\s+PATH \/ TOOL \(SESSION\)\s+WRITTEN \(UTC\)\s+MATCH$/);
    expect(text.stdout).toMatch(new RegExp(`\\n\\s*\\d\\s+toolcall\\s+bash \\(${sessionId}\\)\\s+\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d\\s+.*\\[${word}\\]`));
    expect(text.stdout).toMatch(/\s+file\s+\S*notes\.md\s/);
    // The full ids follow, for show / history / as-of.
    expect(text.stdout).toContain(`\nids:\n`);
    expect(text.stdout).toMatch(new RegExp(`\\n\\d  toolcall:${sessionId}:c1(\\n|$)`));
    expect(text.stderr).toBe('');
  });

  it('filters: --type, --session, --since, --limit', async () => {
    const files = JSON.parse((await run('search', word, '--type', 'file', '--json')).stdout);
    expect(files.map((h) => h.type)).toEqual(['file']);
    const mine = JSON.parse((await run('search', word, '--session', sessionId, '--type', 'toolcall', '--json')).stdout);
    expect(mine.map((h) => h.id)).toEqual([`toolcall:${sessionId}:c1`]);
    const other = await run('search', word, '--session', uid('nobody'));
    expect(other.status).toBe(0);
    expect(other.stdout).toBe(`no match for "${word}"\n`);
    const later = JSON.parse((await run('search', word, '--since', '2999-01-01T00:00:00Z', '--json')).stdout);
    expect(later).toEqual([]);
    const one = JSON.parse((await run('search', word, '--limit', '1', '--json')).stdout);
    expect(one).toHaveLength(1);
  });

  it('exit statuses: 2 for usage, 1 for a coded failure; searching writes nothing', async () => {
    const store = await scm.openStore(storeOptions);
    const before = await store.latestTxId();
    for (const args of [['search'], ['search', word, '--type', 'bogus'], ['search', word, '--limit', 'many'], ['search', 'a', 'b']]) {
      const r = await run(...args);
      expect(r.status, `${args.join(' ')}: ${r.stderr}`).toBe(2);
    }
    const zero = await run('search', word, '--limit', '0');
    expect(zero.status).toBe(1);
    expect(zero.stderr).toMatch(/\[INVALID_ARGUMENT\]/);
    const blank = await run('search', '   ');
    expect(blank.status).toBe(1);
    expect(blank.stderr).toMatch(/\[INVALID_ARGUMENT\]/);
    expect(await store.latestTxId()).toBe(before);
  });
});
