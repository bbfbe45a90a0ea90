// lib/config.js: the configuration the pi package and the command-line tool share (environment first, then
// "selfContextManager" in pi's settings, project over global), here for the store override and the sandbox keys.
import { describe, it, expect, afterEach } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { require, scm, tempDir, uid } from './helpers.mjs';

const { loadConfig, storeFromArg } = require('../lib/config.js');
const KEYS = ['SCM_STORE', 'SCM_STORE_PATH', 'SCM_XTDB_URL', 'SCM_DEFAULT_FILESYSTEM_ID', 'SCM_DEFAULT_IS_LOCAL', 'SCM_CACHE_SCALE_ABOVE', 'SCM_WATCH_POLL', 'SCM_WATCH_POLL_MS'];
const saved = Object.fromEntries(KEYS.map((k) => [k, process.env[k]]));
afterEach(() => {
  for (const k of KEYS) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
});
for (const k of KEYS) delete process.env[k];

function workspace(settings) {
  const dir = tempDir('scm-config-');
  const agentDir = path.join(dir, 'agent');
  mkdirSync(agentDir);
  if (settings) {
    mkdirSync(path.join(dir, '.pi'));
    writeFileSync(path.join(dir, '.pi', 'settings.json'), JSON.stringify({ selfContextManager: settings }));
  }
  return { dir, agentDir };
}

describe('sandbox settings (SSOT §5.1–§5.2): the default filesystem and whether it is local', () => {
  it('unset: the engine defaults (this machine, local)', () => {
    const { dir, agentDir } = workspace();
    const c = loadConfig(dir, { agentDir });
    expect(c.defaultFilesystemId).toBeUndefined();
    expect(c.defaultIsLocal).toBeUndefined();
  });

  it('from settings, and the environment over settings', () => {
    const { dir, agentDir } = workspace({ defaultFilesystemId: 'container-1', defaultIsLocal: false });
    expect(loadConfig(dir, { agentDir })).toMatchObject({ defaultFilesystemId: 'container-1', defaultIsLocal: false });
    process.env.SCM_DEFAULT_FILESYSTEM_ID = 'container-2';
    process.env.SCM_DEFAULT_IS_LOCAL = 'true';
    expect(loadConfig(dir, { agentDir })).toMatchObject({ defaultFilesystemId: 'container-2', defaultIsLocal: true });
  });

  it('bad values are INVALID_ARGUMENT', () => {
    for (const bad of [{ defaultFilesystemId: '' }, { defaultFilesystemId: 7 }, { defaultIsLocal: 'no' }]) {
      const { dir, agentDir } = workspace(bad);
      let err;
      try {
        loadConfig(dir, { agentDir });
      } catch (e) {
        err = e;
      }
      expect(err?.code, JSON.stringify(bad)).toBe('INVALID_ARGUMENT');
    }
  });

  it('wired to the engine: with defaultIsLocal false an unmapped path has no host path and is not read', async () => {
    const { dir, agentDir } = workspace({ defaultFilesystemId: 'container-1', defaultIsLocal: false });
    writeFileSync(path.join(dir, 'secret.txt'), 'host content\n');
    const c = loadConfig(dir, { agentDir });
    const cm = await scm.ContextManager.open({
      sessionId: uid('sandbox'),
      workspaceRoot: dir,
      store: { kind: 'embedded', path: path.join(dir, 'store.sqlite') },
      defaultFilesystemId: c.defaultFilesystemId,
      defaultIsLocal: c.defaultIsLocal,
    });
    const r = cm.resolve(path.join(dir, 'secret.txt'));
    expect(r.source.filesystemId).toBe('container-1');
    expect(r.hostPath).toBeNull();
    const read = await cm.read(path.join(dir, 'secret.txt'));
    expect(JSON.stringify(await cm.getObject(read.id ?? ''))).not.toContain('host content');
    await cm.close();
  });
});

describe('polling watcher settings (network filesystems)', () => {
  it('unset: the engine decides (auto, 2 s); from settings; the environment over settings; wired to the engine', async () => {
    const none = workspace();
    expect(loadConfig(none.dir, { agentDir: none.agentDir })).toMatchObject({ watchPoll: undefined, watchPollMs: undefined });
    const { dir, agentDir } = workspace({ watchPoll: 'always', watchPollMs: 500 });
    expect(loadConfig(dir, { agentDir })).toMatchObject({ watchPoll: 'always', watchPollMs: 500 });
    process.env.SCM_WATCH_POLL = 'never';
    process.env.SCM_WATCH_POLL_MS = '250';
    const c = loadConfig(dir, { agentDir });
    expect(c).toMatchObject({ watchPoll: 'never', watchPollMs: 250 });
    // The engine takes them.
    const open = (o) => scm.ContextManager.open({ sessionId: uid('poll'), workspaceRoot: dir, store: { kind: 'embedded', path: ':memory:' }, watch: true, ...o });
    await (await open({ watchPoll: c.watchPoll, watchPollMs: c.watchPollMs })).close();
  });

  it('bad values are a configuration error when pi starts (INVALID_ARGUMENT)', () => {
    for (const [env, settings] of [[{ SCM_WATCH_POLL: 'often' }, undefined], [{ SCM_WATCH_POLL_MS: '5' }, undefined], [{}, { watchPollMs: 3_600_001 }], [{}, { watchPoll: 'Always' }]]) {
      const { dir, agentDir } = workspace(settings);
      Object.assign(process.env, env);
      let err;
      try {
        loadConfig(dir, { agentDir });
      } catch (e) {
        err = e;
      }
      for (const k of Object.keys(env)) delete process.env[k];
      expect(err?.code, JSON.stringify({ env, settings })).toBe('INVALID_ARGUMENT');
      expect(err.message).toMatch(/SCM_WATCH_POLL(_MS)? \(selfContextManager\.watchPoll(Ms)?\) must be/);
    }
  });
});

describe('the store a command-line --store names', () => {
  it('an http(s) URL is an XTDB node, anything else an embedded file, resolved against the workspace', () => {
    expect(storeFromArg('http://127.0.0.1:3000')).toEqual({ kind: 'xtdb', url: 'http://127.0.0.1:3000' });
    expect(storeFromArg('x/store.sqlite')).toEqual({ kind: 'embedded', path: 'x/store.sqlite' });
    const { dir, agentDir } = workspace({ store: { kind: 'xtdb', url: 'http://elsewhere' } });
    process.env.SCM_STORE_PATH = '/somewhere/else.sqlite';
    expect(loadConfig(dir, { agentDir, store: storeFromArg('s.sqlite') }).store).toEqual({ kind: 'embedded', path: path.join(dir, 's.sqlite') });
  });
});

describe('the cache layout\'s size scale (design §5 rule 7)', () => {
  it('scaleAbove from settings, the environment over settings, and a bad value is INVALID_ARGUMENT', () => {
    const { dir, agentDir } = workspace({ cachePolicy: { scaleAbove: 2000 } });
    expect(loadConfig(dir, { agentDir }).cachePolicy).toMatchObject({ scaleAbove: 2000 });
    process.env.SCM_CACHE_SCALE_ABOVE = '0';
    expect(loadConfig(dir, { agentDir }).cachePolicy).toMatchObject({ scaleAbove: 0 });
    process.env.SCM_CACHE_SCALE_ABOVE = 'big';
    expect(() => loadConfig(dir, { agentDir })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});
