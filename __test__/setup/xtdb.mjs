// One XTDB node for the whole vitest run.
// - SCM_TEST_XTDB_URL set: use that node (not started or stopped here).
// - otherwise: `bash xtdb/start.sh --config mem` (prints only the base URL),
//   stopped in teardown, which vitest runs even when tests fail; an exit hook
//   covers an interrupted run.
// - no node available: XTDB suites skip with the reason in their title, or,
//   with SCM_REQUIRE_XTDB=1, the run fails here.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export default function setup(project) {
  let url = process.env.SCM_TEST_XTDB_URL || null;
  let reason = null;
  let started = false;
  if (!url) {
    try {
      url = execFileSync('bash', [path.join(ROOT, 'xtdb/start.sh'), '--config', 'mem'], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
        timeout: 300_000,
      }).trim();
      started = true;
    } catch (err) {
      const stderr = String(err.stderr ?? '').trim().split('\n').slice(-3).join(' | ');
      reason = `xtdb/start.sh failed: ${stderr || err.message}`;
    }
  }
  if (!url && process.env.SCM_REQUIRE_XTDB === '1') {
    throw new Error(`SCM_REQUIRE_XTDB=1 but no XTDB node is available (${reason})`);
  }
  if (!url) console.warn(`\n[xtdb] XTDB suites will be skipped: ${reason}\n`);

  let stopped = !started;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    execFileSync('bash', [path.join(ROOT, 'xtdb/stop.sh')], { stdio: 'inherit', timeout: 60_000 });
  };
  if (started) process.once('exit', stop);

  project.provide('xtdbUrl', url);
  project.provide('xtdbSkipReason', reason);
  return stop;
}
