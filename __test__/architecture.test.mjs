// The core's shape (docs/design.md §0 "Imports run one way"): no two files of crates/scm-core/src import each other,
// and the lower layers import nothing above them. Read from the sources: every `crate::…`, `super::…`, `self::…` path
// (also inside `use …::{…}` lists), resolved to the file of the longest module prefix that exists.
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, test } from 'vitest';

const SRC = join(import.meta.dirname, '..', 'crates', 'scm-core', 'src');

function rustFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? rustFiles(join(dir, e.name)) : e.name.endsWith('.rs') ? [join(dir, e.name)] : [],
  );
}

const files = rustFiles(SRC).map((f) => relative(SRC, f));
/** Module path of a file: `session/mod.rs` → [session], `session/drive.rs` → [session, drive]. */
const modPath = (f) => {
  const p = f.slice(0, -3).split('/');
  return ['mod', 'lib'].includes(p.at(-1)) ? p.slice(0, -1) : p;
};
const byPath = new Map(files.map((f) => [modPath(f).join('::'), f]));

function resolve(from, segs) {
  let mod;
  if (segs[0] === 'crate') mod = [];
  else if (segs[0] === 'self') mod = modPath(from);
  else if (segs[0] === 'super') {
    mod = modPath(from).slice(0, -1);
    while (segs[1] === 'super') {
      segs = segs.slice(1);
      mod = mod.slice(0, -1);
    }
  } else return null;
  segs = segs.slice(1);
  let found = null;
  for (let i = 0; i <= segs.length; i++) found = byPath.get([...mod, ...segs.slice(0, i)].join('::')) ?? found;
  return found;
}

/** from → set of files it names. */
const imports = new Map();
for (const f of files) {
  const text = readFileSync(join(SRC, f), 'utf8').replace(/\/\/[^\n]*/g, '');
  const out = new Set();
  const add = (segs) => {
    const t = resolve(f, segs);
    if (t && t !== f) out.add(t);
  };
  for (const m of text.matchAll(/\b((?:crate|super|self)(?:::\w+)+)/g)) add(m[1].split('::'));
  for (const m of text.matchAll(/use ((?:crate|super)(?:::\w+)*)::\{([^}]*)\}/g)) {
    for (const item of m[2].split(',')) {
      const name = item.trim().split(' as ')[0];
      if (name) add([...m[1].split('::'), ...name.split('::')]);
    }
  }
  imports.set(f, out);
}

describe('the core imports one way', () => {
  test('the walk finds the core and its imports', () => {
    expect(files.length).toBeGreaterThan(60);
    expect(imports.get('session/handle.rs')).toContain('session/drive.rs');
  });

  test('no two files import each other', () => {
    const circles = [];
    for (const [a, to] of imports) for (const b of to) if (a < b && imports.get(b)?.has(a)) circles.push(`${a} ↔ ${b}`);
    expect(circles).toEqual([]);
  });

  test('model, store, fs and context import nothing above them', () => {
    const order = ['model', 'store', 'fs', 'context'];
    const above = { model: ['store', 'fs', 'context', 'session', 'memory', 'commits'], store: ['fs', 'context', 'session', 'memory', 'commits'], fs: ['context', 'session', 'memory', 'commits'], context: ['session', 'memory', 'commits'] };
    const upward = [];
    for (const [f, to] of imports) {
      const layer = f.split('/')[0];
      if (!order.includes(layer)) continue;
      for (const t of to) if (above[layer].includes(t.split('/')[0])) upward.push(`${f} → ${t}`);
    }
    expect(upward).toEqual([]);
  });
});
