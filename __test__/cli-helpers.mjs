// Shared by the command-line tool's tests: run the tool as a child process, and record a session to look at.
import { expect } from 'vitest';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT, scm } from './helpers.mjs';

const BIN = path.join(ROOT, 'bin/self-context-manager.js');

/** Runs the tool; resolves with { status, stdout, stderr }. */
export function cli(args, { cwd = ROOT, env = {} } = {}) {
  return new Promise((resolve, reject) => {
    const clean = { ...process.env };
    for (const k of ['SCM_STORE', 'SCM_STORE_PATH', 'SCM_XTDB_URL']) delete clean[k];
    const child = spawn(process.execPath, [BIN, ...args], { cwd, env: { ...clean, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

export const lines = (n, tag) => Array.from({ length: n }, (_, i) => `${tag} line ${i} of a long tool output, padded out`).join('\n');

/** A recorded cache-layout session: a file read, then `calls` bash calls with long outputs (small thresholds, so collapses happen). */
export async function record(storeOptions, workspace, sessionId, calls = 6) {
  writeFileSync(path.join(workspace, 'notes.md'), '# notes\nhello\n');
  const cm = await scm.ContextManager.open({
    sessionId,
    store: storeOptions,
    workspaceRoot: workspace,
    cachePolicy: { high: 300, low: 100, fold: 0 },
  });
  const msgs = [{ role: 'user', content: 'look around', timestamp: 1 }];
  expect((await cm.read('notes.md')).ok).toBe(true);
  const outs = [await cm.transformContext(msgs)];
  for (let i = 1; i < calls; i += 1) {
    msgs.push({
      role: 'assistant',
      content: [{ type: 'toolCall', id: `c${i}`, name: 'bash', arguments: { command: `echo ${i}` } }],
      stopReason: 'toolUse',
      timestamp: 10 * i,
    });
    msgs.push({ role: 'toolResult', toolCallId: `c${i}`, toolName: 'bash', content: [{ type: 'text', text: lines(20, `out${i}`) }], isError: false, timestamp: 10 * i + 1 });
    outs.push(await cm.transformContext(msgs));
  }
  await cm.close();
  return outs;
}

