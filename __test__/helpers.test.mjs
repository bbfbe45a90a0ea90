// The test helpers clean up after themselves: temp dirs made inside a test used
// to stay behind (a hook registered while a test runs is never run), 1–2 MB per
// random session, tens of GB over many runs of the suite.
import { test, expect } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT } from './helpers.mjs';

test('temp dirs made at collection and inside a test are gone once the file is done', () => {
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'scm-helpers-'));
  try {
    const out = path.join(scratch, 'dirs.json');
    execFileSync(process.execPath, [path.join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', '--config', '__test__/fixtures/temp-dirs/vitest.config.mjs'], {
      cwd: ROOT,
      env: { ...process.env, SCM_FIXTURE_OUT: out },
      stdio: 'pipe',
    });
    const dirs = JSON.parse(readFileSync(out, 'utf8'));
    expect(dirs).toHaveLength(3);
    expect(dirs.filter((d) => existsSync(d))).toEqual([]);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
});
