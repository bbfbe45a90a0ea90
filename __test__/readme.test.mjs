// The README's "Use from Node" snippet runs as written: extracted from README.md, saved as demo.mjs in a fresh
// folder that has the package installed (a symlink to this checkout) and a README.md, run with node.
import { it, expect } from 'vitest';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT, tempDir } from './helpers.mjs';
import { spawnSync } from 'node:child_process';

function snippet() {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Use from Node'));
  const m = /```js\n([\s\S]*?)```/.exec(section);
  if (!m) throw new Error('README: no js block under "## Use from Node"');
  return m[1];
}

it('README "Use from Node" runs as written and shows the ids and the { ok: false, code } answer', () => {
  const dir = tempDir('scm-readme-');
  mkdirSync(path.join(dir, 'node_modules'));
  symlinkSync(ROOT, path.join(dir, 'node_modules', 'self-context-manager'), 'dir');
  writeFileSync(path.join(dir, 'README.md'), '# a project\n\nIt does things.\n');
  writeFileSync(path.join(dir, 'demo.mjs'), snippet());
  const env = { ...process.env };
  delete env.SCM_STORE_PATH;
  delete env.SCM_STORE;
  const r = spawnSync(process.execPath, ['demo.mjs'], { cwd: dir, env, encoding: 'utf8', timeout: 60_000 });
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  expect(r.stdout).toMatch(/\[ 'system'|\[ 'user'/);
  expect(r.stdout).toContain('ok: true');
  expect(r.stdout).toMatch(/ok: false[\s\S]*code: 'UNKNOWN_OBJECT'/);
  // The store went where the README says: <workspace>/.scm/store.sqlite.
  expect(readFileSync(path.join(dir, '.scm', 'store.sqlite')).length).toBeGreaterThan(0);
});
