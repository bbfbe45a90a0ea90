// SSOT §5.2–5.4, implementation-plan §3: agent path → source binding, the
// reverse, and watchability; identity is a pure function of the source.
import { describe, test, expect } from 'vitest';
import { mkdirSync, writeFileSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { scm, tempDir, expectCode, runNode, PKG } from './helpers.mjs';

describe('resolver: forward translation', () => {
  const ws = tempDir();
  const r = new scm.Resolver({ workspaceRoot: ws, defaultFilesystemId: 'fs-host' });

  test('a relative agent path joins the workspace root; the object id is identityHash(file, source)', () => {
    const res = r.resolve('src/a.ts');
    expect(res.source).toEqual({ type: 'filesystem', filesystemId: 'fs-host', path: `${ws}/src/a.ts` });
    expect(res.objectId).toBe(scm.identityHash('file', res.source));
    expect(res.hostPath).toBe(`${ws}/src/a.ts`);
    expect(res.watchable).toBe(true);
  });

  test('. and .. are applied lexically; slashes collapse', () => {
    expect(r.resolve(`${ws}//x/./y/../a.ts`).source.path).toBe(`${ws}/x/a.ts`);
  });

  test('a symlinked parent directory resolves to the same object as the real one', () => {
    mkdirSync(path.join(ws, 'real'));
    writeFileSync(path.join(ws, 'real/f.txt'), 'x');
    symlinkSync(path.join(ws, 'real'), path.join(ws, 'link'));
    expect(r.resolve('link/f.txt').objectId).toBe(r.resolve('real/f.txt').objectId);
  });

  test('defaults: workspace root is process.cwd(), filesystem is this machine', () => {
    const d = new scm.Resolver();
    expect(d.workspaceRoot).toBe(process.cwd());
    expect(d.defaultFilesystemId).toBe(scm.defaultFilesystemId());
  });
});

describe('resolver: mount mappings', () => {
  const host = tempDir();
  const r = new scm.Resolver({
    workspaceRoot: '/work',
    defaultFilesystemId: 'fs-sandbox',
    defaultIsLocal: false,
    mounts: [
      { agentPrefix: '/work', canonicalPrefix: '/home/u/proj', filesystemId: 'fs-host', hostPrefix: host },
      { agentPrefix: '/work/vendor', canonicalPrefix: '/srv/vendor', filesystemId: 'fs-nfs' },
    ],
  });

  test('the longest agent prefix wins, on component boundaries', () => {
    expect(r.resolve('/work/vendor/lib.c').source).toEqual({ type: 'filesystem', filesystemId: 'fs-nfs', path: '/srv/vendor/lib.c' });
    expect(r.resolve('/work/src/a.ts').source.filesystemId).toBe('fs-host');
    expect(r.resolve('/workspace/a.ts').source.filesystemId).toBe('fs-sandbox');
  });

  test('a mount with a host prefix is readable and watchable; one without is not', () => {
    const a = r.resolve('src/a.ts');
    expect(a.hostPath).toBe(`${host}/src/a.ts`);
    expect(a.watchable).toBe(true);
    const v = r.resolve('/work/vendor/lib.c');
    expect(v.hostPath).toBeNull();
    expect(v.watchable).toBe(false);
  });

  test('paths in a non-local default filesystem are neither readable nor watchable', () => {
    const s = r.resolve('/etc/passwd');
    expect(s.hostPath).toBeNull();
    expect(s.watchable).toBe(false);
  });

  test('reverse translation: agentPath and displayPath', () => {
    const src = r.resolve('/work/src/a.ts').source;
    expect(r.agentPath(src)).toBe('/work/src/a.ts');
    expect(r.displayPath(src)).toBe('src/a.ts');
    expect(r.agentPath({ filesystemId: 'fs-other', path: '/x/y' })).toBe('/x/y');
    expect(r.displayPath(r.resolve('/etc/hosts').source)).toBe('/etc/hosts');
  });

  test('same path on different filesystems → different identities', () => {
    const a = scm.identityHash('file', { type: 'filesystem', filesystemId: 'fs-a', path: '/x' });
    const b = scm.identityHash('file', { type: 'filesystem', filesystemId: 'fs-b', path: '/x' });
    expect(a).not.toBe(b);
  });
});

describe('resolver: errors', () => {
  const r = new scm.Resolver({ workspaceRoot: '/w' });
  test('an empty path or one with NUL is an INVALID_ARGUMENT', async () => {
    await expectCode(() => r.resolve(''), 'INVALID_ARGUMENT');
    await expectCode(() => r.resolve('a\0b'), 'INVALID_ARGUMENT');
  });
  test('a wrong argument type is an INVALID_ARGUMENT', async () => {
    await expectCode(() => r.resolve(42), 'INVALID_ARGUMENT');
    await expectCode(() => new scm.Resolver({ workspaceRoot: 5 }), 'INVALID_ARGUMENT');
  });
});

describe('identity across processes', () => {
  test('two Node processes derive the same object id for the same file', async () => {
    const ws = tempDir();
    writeFileSync(path.join(ws, 'a.txt'), 'hello');
    const script = `
      const scm = require(${PKG});
      const r = new scm.Resolver({ workspaceRoot: process.argv[1] ?? ${JSON.stringify(ws)} });
      console.log(JSON.stringify({ id: r.resolve('a.txt').objectId, fs: scm.defaultFilesystemId() }));`;
    const [a, b] = await Promise.all([runNode(script), runNode(script)]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    const ida = JSON.parse(a.stdout);
    expect(JSON.parse(b.stdout)).toEqual(ida);
    const here = new scm.Resolver({ workspaceRoot: ws }).resolve('a.txt').objectId;
    expect(ida.id).toBe(here);
  });
});
