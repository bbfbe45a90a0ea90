// Issue 10's targets on real recorded sessions, through the product's engine
// (the addon, default cache layout): fails when a target that holds today
// stops holding. Cheap reads (≤ 0.40× in the issue) does not hold on either
// session (docs/benchmarks.md, "A second real session"); its bound here is
// what is measured today, so it cannot get worse unnoticed.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { toProviderMessages } from "./lib/llm.mjs";
import { REAL_SESSIONS } from "./lib/real-sessions.mjs";
import { loadStrategyFactory, replaySession, summarize } from "./lib/run.mjs";
import { padReads, scaleReads } from "./scale-reads.mjs";

// Cheap reads per session: today's figure, which must not get worse (the
// second session 0.420× → 0.404× since session 36's settled edits).
const CHEAP_READS = { "pi-session-refactor.jsonl": 0.53, "pi-session-themes.jsonl": 0.41 };
// Edit-anchor visibility: the issue's 97% on the recorded session, held at
// today's 98% (118 of 120 since session 14's recent edits: a file edited in
// place keeps its newest edits' bodies, which the agent quotes when it revises
// or undoes one; docs/design.md §5). On the
// second session 97% was a local optimum of when epochs fall (110-125 of 128
// at `high` 9,000-11,000); since session 13 read and activation pointers to
// working copies shorten its context from call 178 on, the default lands on
// 122 of 128, the neighbouring settings unchanged (docs/benchmarks.md,
// "Session 13"). Since session 35 it meets the issue's 97% too (125 of 128,
// 124 before: a slice of a small file being edited shows the file whole;
// docs/benchmarks.md "Session 35").
const VISIBILITY = { "pi-session-refactor.jsonl": 0.98, "pi-session-themes.jsonl": 0.97 };
const SESSIONS = REAL_SESSIONS.map((s) => ({ ...s, cheapReads: CHEAP_READS[s.name], visibility: VISIBILITY[s.name] }));

for (const { file, name, skip, cheapReads, visibility } of SESSIONS) {
  test(`${name}: edit-anchor visibility, tokens and effective cost meet issue 10's targets`, { skip }, async () => {
    const strategies = [];
    for (const n of ["raw", "self-context-manager"]) strategies.push({ name: n, factory: await loadStrategyFactory(n) });
    const r = await replaySession({ file, text: readFileSync(file, "utf8"), strategies });
    // The addon must be built: a skipped engine would pass nothing.
    assert.deepEqual(r.skipped, []);
    assert.equal(r.stats["self-context-manager"].callsWithOrphanedToolResults, 0);
    const s = summarize(r.rows).find((x) => x.strategy === "self-context-manager");
    const figures = `${name}: ${JSON.stringify({ supported: `${s.supported}/${s.edits}`, total: s.totalRatio, ...s.priceRatios })}`;
    assert.ok(s.supportedShare >= visibility, `edit-anchor visibility ≥ ${visibility * 100}% — ${figures}`);
    assert.ok(s.totalRatio <= 0.25, `total input tokens ≤ 0.25× raw — ${figures}`);
    assert.ok(s.priceRatios.standard <= 0.3, `effective cost ≤ 0.30× (standard) — ${figures}`);
    assert.ok(s.priceRatios.writePremium <= 0.35, `≤ 0.35× with a cache-write premium — ${figures}`);
    assert.ok(s.priceRatios.expiry <= 0.35, `≤ 0.35× with cache expiry — ${figures}`);
    assert.ok(s.priceRatios.cheapReads <= cheapReads, `cheap reads no worse than measured (${cheapReads}) — ${figures}`);
  });
}

// Both layouts, on every call of both sessions: every tool result follows its
// call in what the provider receives (pi drops an errored or aborted assistant
// message with its calls; a stand-in result for one of them was a 400 from
// Anthropic — the spec layout sent 304 such requests on the recorded session).
for (const { file, name, skip } of SESSIONS) {
  test(`${name}: no tool result without its call, in either layout`, { skip }, async () => {
    const factory = await loadStrategyFactory("self-context-manager");
    const strategies = ["cache", "spec"].map((layout) => ({ name: layout, factory: (o) => ({ ...factory({ ...o, layout }), name: layout }) }));
    const r = await replaySession({ file, text: readFileSync(file, "utf8"), strategies });
    assert.deepEqual(r.skipped, []);
    for (const layout of ["cache", "spec"]) assert.equal(r.stats[layout].callsWithOrphanedToolResults, 0, layout);
  });
}

// Output is shown whole at least once before it can collapse: every tool result
// of 200+ chars appears in full in some call's context at or after its arrival.
for (const { file, name, skip } of SESSIONS) {
  test(`${name}: every tool output is shown whole at least once`, { skip }, async () => {
    const base = await loadStrategyFactory("self-context-manager");
    const arrived = new Map();
    const shown = new Set();
    const factory = (o) => {
      const s = base(o);
      const transform = s.transform.bind(s);
      s.transform = async (messages, index, info) => {
        const out = await transform(messages, index, info);
        for (const m of messages) {
          if (m.role !== "toolResult") continue;
          const text = (m.content ?? []).filter((b) => b.type === "text").map((b) => b.text).join("");
          if (text.length >= 200 && !arrived.has(text)) arrived.set(text, index);
        }
        const context = JSON.stringify(toProviderMessages(out));
        for (const text of arrived.keys()) if (!shown.has(text) && context.includes(JSON.stringify(text).slice(1, -1))) shown.add(text);
        return out;
      };
      return s;
    };
    const r = await replaySession({ file, text: readFileSync(file, "utf8"), strategies: [{ name: "self-context-manager", factory }] });
    assert.deepEqual(r.skipped, []);
    assert.ok(arrived.size > 100, `${arrived.size} outputs`);
    const never = [...arrived].filter(([text]) => !shown.has(text)).map(([text, at]) => `call ${at}: ${text.slice(0, 80)}`);
    assert.deepEqual(never, []);
  });
}

// Nothing twice: no read or activation shows again the text a working copy
// in view shows (the second session read dark.json and light.json at calls 178
// and 184 while their copies were in view: 1.1k tokens sent twice) of the
// same file (at call 359 it reads nord.json, a `cp` of dark.json: the same
// text under another file's name, rightly shown).
for (const { file, name, skip } of SESSIONS) {
  test(`${name}: no output repeats the text of a working copy in view`, { skip }, async () => {
    const base = await loadStrategyFactory("self-context-manager");
    const twice = new Map(); // result id → the first call showing it twice
    const textOf = (m) => (typeof m.content === "string" ? m.content : (m.content ?? []).filter((b) => b.type === "text").map((b) => b.text).join(""));
    const factory = (o) => {
      const s = base(o);
      const transform = s.transform.bind(s);
      s.transform = async (messages, index, info) => {
        const out = await transform(messages, index, info);
        // Each copy with its file (`FILE f14 path as of …`); each call with what it names (a path or an id).
        const copies = out.map(textOf).flatMap((t) => {
          const h = /^FILE (f\d+) (\S+) /.exec(t);
          return h ? [{ alias: h[1], path: h[2], body: t.slice(t.indexOf("\n") + 1) }] : [];
        });
        const names = new Map(out.flatMap((m) => (m.role === "assistant" && Array.isArray(m.content) ? m.content.filter((b) => b.type === "toolCall").map((b) => [b.id, b.arguments?.path ?? b.arguments?.id ?? ""]) : [])));
        // The same file: another file with the same text (a copy made with `cp`) is not shown twice.
        const sameFile = (c, name) => name === c.alias || (name !== "" && (c.path.endsWith(name) || name.endsWith(c.path)));
        for (const m of out) {
          const t = textOf(m);
          if (m.role !== "toolResult" || t.length < 200 || twice.has(m.toolCallId)) continue;
          const name = String(names.get(m.toolCallId) ?? "").replace(/^\.\//, "");
          if (copies.some((c) => (c.body === t || c.body === t.slice(t.indexOf("\n") + 1)) && sameFile(c, name))) twice.set(m.toolCallId, index);
        }
        return out;
      };
      return s;
    };
    const r = await replaySession({ file, text: readFileSync(file, "utf8"), strategies: [{ name: "self-context-manager", factory }] });
    assert.deepEqual(r.skipped, []);
    assert.deepEqual([...twice].map(([id, at]) => `${id} from call ${at}`), []);
  });
}

// The same work on files twice as large (every read output repeated): the
// layout's sizes follow the median read (context/scale.rs), so the edits'
// text stays in view about as often as on the original session (102 / 120
// with fixed sizes, 113 with scaled ones), and the cost stays a fraction of
// raw pi's (docs/benchmarks.md, "How robust the figures are").
{
  const { file, name, skip } = REAL_SESSIONS.find((s) => s.name === "pi-session-refactor.jsonl");
  test(`${name} with reads twice as large: the sizes follow them`, { skip }, async () => {
    const strategies = [];
    for (const n of ["raw", "self-context-manager"]) strategies.push({ name: n, factory: await loadStrategyFactory(n) });
    const r = await replaySession({ file, label: `${name} ×2`, text: scaleReads(readFileSync(file, "utf8"), 2), strategies });
    assert.deepEqual(r.skipped, []);
    const s = summarize(r.rows).find((x) => x.strategy === "self-context-manager");
    const figures = JSON.stringify({ supported: `${s.supported}/${s.edits}`, total: s.totalRatio, ...s.priceRatios });
    assert.ok(s.supportedShare >= 0.93, `edit-anchor visibility ≥ 93% — ${figures}`);
    assert.ok(s.totalRatio <= 0.25 && s.priceRatios.standard <= 0.3, `cost — ${figures}`);
  });
}

// The themes session on files twice as large, read whole (`padReads`: each
// whole read padded with its file's first read, shifted, so edits still
// match once): 123 / 128 supported since session 41, when a fold at the
// prompt "continue" kept the slice an interrupted edit had quoted (121
// before; docs/benchmarks.md "Session 41").
{
  const { file, name, skip } = REAL_SESSIONS.find((s) => s.name === "pi-session-themes.jsonl");
  test(`${name} with files twice as large: a fold keeps the slice being edited`, { skip }, async () => {
    const strategies = [];
    for (const n of ["raw", "self-context-manager"]) strategies.push({ name: n, factory: await loadStrategyFactory(n) });
    const r = await replaySession({ file, label: `${name} padded ×2`, text: padReads(readFileSync(file, "utf8"), 2), strategies });
    assert.deepEqual(r.skipped, []);
    const s = summarize(r.rows).find((x) => x.strategy === "self-context-manager");
    const figures = JSON.stringify({ supported: `${s.supported}/${s.edits}`, total: s.totalRatio, ...s.priceRatios });
    assert.ok(s.supported >= 123, `123 of 128 edits supported — ${figures}`);
    assert.ok(s.totalRatio <= 0.25 && s.priceRatios.standard <= 0.3, `cost — ${figures}`);
  });
}
