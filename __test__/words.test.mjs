// Each layout owns its words (issue 15 item 4, design §0 "Who owns the words"): the core says what the model reads
// (set-operation results, the system-prompt section, the tools' texts); the pi package composes them with pi's own
// read tool and passes the set operations' `text` through. The texts are byte-identical to the ones pi/index.js held
// before they moved (fixtures/pi-words-before-move.json, extracted from that file; since then only the `expand`
// tool's texts changed, on purpose: session 29, a tool call's files and a chat's tool calls; and the cache
// layout's system section says a successful edit's oldText is a ref at once: session 36, settled edits).
import { describe, expect, test } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT, describeStores, expectCode, require, scm, tempDir, uid } from './helpers.mjs';

const before = require('./fixtures/pi-words-before-move.json');
const { layoutWords, ContextManager } = scm;
const RecordingType = {
  Object: (p) => ({ object: p }),
  String: (o) => ({ string: o ?? null }),
  Number: (o) => ({ number: o ?? null }),
  Boolean: (o) => ({ boolean: o ?? null }),
  Optional: (x) => ({ optional: x }),
  Array: (x, o) => ({ array: x, options: o ?? null }),
};

describe('layout words: the core owns them, pi shows them unchanged', () => {
  test.each(['cache', 'spec'])('%s: system section, id parameter and set-operation tools as before the move', (layout) => {
    const w = layoutWords(layout);
    expect(w.layout).toBe(layout);
    expect(w.systemSection).toBe(before[layout].systemSection);
    expect(w.idDescription).toBe(before[layout].idDescription);
    const tools = Object.fromEntries(w.tools.map(({ name, ...t }) => [name, t]));
    expect(Object.keys(tools)).toEqual(['activate', 'deactivate', 'pin', 'unpin']);
    expect(tools).toEqual(before[layout].tools);
  });

  test.each(['cache', 'spec'])('%s: pi/prompts.js composes the read tool and the memory tools as before', async (layout) => {
    const prompts = await import(path.join(ROOT, 'pi/prompts.js'));
    const w = prompts.layoutWords(scm, layout);
    expect(prompts.readTexts(w, before.piReadStandIn)).toEqual(before[layout].readWithPiStandIn);
    expect(JSON.parse(JSON.stringify(prompts.memoryToolTexts(RecordingType, w.idDescription)))).toEqual(before.memoryTools[layout]);
    const prompt = { systemPrompt: 'PI' };
    expect(prompts.withSystemSection(prompt, w)).toEqual({ systemPrompt: `PI\n\n${before[layout].systemSection}` });
    const sections = {};
    expect(prompts.withSystemSection({ systemPrompt: 'PI', systemPromptOptions: { sections } }, w)).toBeUndefined();
    expect(sections['context-management']).toBe(before[layout].systemSection);
  });

  test('an unknown layout is INVALID_ARGUMENT', async () => {
    await expectCode(() => layoutWords('tail'), 'INVALID_ARGUMENT');
  });

  test('pi/ names no cache-policy key: it passes lib/config.js\'s cachePolicy on', async () => {
    const { readFileSync, readdirSync } = await import('node:fs');
    const { CACHE_POLICY_KEYS } = require('../lib/config.js');
    for (const f of readdirSync(path.join(ROOT, 'pi'))) {
      const text = readFileSync(path.join(ROOT, 'pi', f), 'utf8');
      for (const k of Object.keys(CACHE_POLICY_KEYS)) expect(text, `${f} names ${k}`).not.toMatch(new RegExp(`\\b${k}\\b\\s*[:?]|\\.${k}\\b`));
    }
  });
});

describeStores('set operations: structured outcome, text in the layout\'s words', ({ options }) => {
  async function open(layout) {
    const ws = tempDir('scm-ws-');
    mkdirSync(path.join(ws, 'src'), { recursive: true });
    writeFileSync(path.join(ws, 'src/a.ts'), 'export const a = 1;\n');
    const cm = await ContextManager.open({ sessionId: uid('s'), workspaceRoot: ws, store: options(), layout });
    expect((await cm.read('src/a.ts')).ok).toBe(true);
    return cm;
  }

  test('cache: the text names the object as typed (pi passes it through); message names it by id', async () => {
    const cm = await open('cache');
    const r = await cm.pin('f1');
    expect(r).toMatchObject({ ok: true, outcome: 'pinned', text: 'pinned f1: shown and kept from collapsing until unpin(f1)' });
    expect(r.message).toBe(`pinned ${r.id}: it stays active until unpinned`);
    expect(cm.setOpSync('deactivate', '@src/a.ts')).toMatchObject({
      outcome: 'deactivated_and_unpinned',
      text: 'deactivated and unpinned @src/a.ts: it collapses to a ref at the next collapse; activate(@src/a.ts) shows it again',
    });
    expect(await cm.deactivate('f1')).toMatchObject({ outcome: 'was_not_active', text: 'f1 is not shown (already collapsed)' });
    expect(await cm.unpin('f1')).toMatchObject({ outcome: 'was_not_pinned', text: 'f1 was not pinned' });
    expect(await cm.activate('f1')).toMatchObject({ outcome: 'activated', text: 'activated f1: its content is shown as this result' });
    const miss = await cm.activate('nope.ts');
    expect(miss).toMatchObject({ ok: false, code: 'UNKNOWN_OBJECT' });
    expect(miss.text).toBe(miss.message);
    expect(miss.outcome).toBeUndefined();
    await cm.close();
  });

  test('spec: the text is the engine message', async () => {
    const cm = await open('spec');
    const r = await cm.deactivate('src/a.ts');
    expect(r).toMatchObject({ ok: true, outcome: 'deactivated', message: `deactivated ${r.id}: its metadata stays in the pool` });
    expect(r.text).toBe(r.message);
    await cm.close();
  });
});
