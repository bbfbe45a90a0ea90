// export / import through the command-line tool (issue 12 item 6) on both stores: a recorded session is exported
// with --session, imported into a new embedded store file, and every object's history holds the same documents.
import { it, expect, beforeAll } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { scm, tempDir, uid, describeStores } from './helpers.mjs';
import { cli, record } from './cli-helpers.mjs';

describeStores('export / import', (sk) => {
  let storeOptions;
  let storeArg;
  let workspace;
  let sessionId;
  beforeAll(async () => {
    storeOptions = sk.options();
    storeArg = storeOptions.kind === 'xtdb' ? storeOptions.url : storeOptions.path;
    workspace = tempDir('scm-port-ws-');
    sessionId = uid('port');
    await record(storeOptions, workspace, sessionId, 3);
  });

  it('a session exported and imported into a new store file has the same documents and histories', async () => {
    const dir = tempDir('scm-port-');
    const file = path.join(dir, 'session.jsonl');
    const ex = await cli(['export', '--session', sessionId, '-o', file, '--json', '--store', storeArg], { cwd: workspace });
    expect(ex.status, ex.stderr).toBe(0);
    const stats = JSON.parse(ex.stdout);
    expect(stats.versions).toBeGreaterThan(3);
    const [header, ...rest] = readFileSync(file, 'utf8').trimEnd().split('\n');
    expect(JSON.parse(header)).toMatchObject({ format: 'scm-export', version: 1, scope: { sessions: [sessionId] } });
    expect(rest).toHaveLength(stats.versions);

    const target = path.join(dir, 'copy.sqlite');
    expect(existsSync(target)).toBe(false);
    const im = await cli(['import', file, '--store', target], { cwd: workspace });
    expect(im.status, im.stderr).toBe(0);
    expect(im.stdout).toMatch(new RegExp(`^imported ${stats.versions} versions of ${stats.objects} objects`));

    const src = await scm.openStore(storeOptions);
    const dst = await scm.openStore({ kind: 'embedded', path: target });
    const ids = [...new Set(rest.map((l) => JSON.parse(l).doc['xt/id']))];
    expect(ids).toContain(`session:${sessionId}`);
    for (const id of ids) {
      const [a, b] = await Promise.all([src.history(id), dst.history(id)]);
      expect(b.map((v) => v.doc), id).toEqual(a.map((v) => v.doc));
    }
    // Again: nothing new.
    const twice = await cli(['import', file, '--store', target, '--json'], { cwd: workspace });
    expect(JSON.parse(twice.stdout)).toMatchObject({ versions: 0, skipped: stats.versions });
    // Usage errors.
    expect((await cli(['export', '--store', target], { cwd: workspace })).status).toBe(2);
    expect((await cli(['import', path.join(dir, 'none.jsonl'), '--store', target], { cwd: workspace })).status).toBe(2);
  });
});
