#!/usr/bin/env node
// Side-by-side runs of prototype variants (not a strategy): each variant is a
// strategy file + options under its own label, replayed in one run against raw.
//   node bench/replay/strategies/prototype-sweep.mjs SESSION.jsonl [--calls N] [--set NAME] [--csv FILE]
// --calls N replays only the first N calls (truncation check). Variant sets are below.
// Prints one markdown row per variant (totals, ratios vs raw, per-call figures, stats).

import { readFile, writeFile } from "node:fs/promises";
import { loadStrategyFactory, replaySession, summarize } from "../lib/run.mjs";
import { Tokenizer } from "../lib/tokens.mjs";
import { SETS } from "./prototype-variants.mjs";

const args = process.argv.slice(2);
const file = args.find((a) => !a.startsWith("--") && !/^\d+$/.test(a) && !SETS[a]);
const flag = (k) => {
  const i = args.indexOf(k);
  return i >= 0 ? args[i + 1] : undefined;
};
const maxCalls = flag("--calls") ? Number(flag("--calls")) : Infinity;
const setName = flag("--set") ?? "all";
const variants = SETS[setName];
if (!file || !variants) {
  console.error(`usage: prototype-sweep.mjs SESSION.jsonl [--calls N] [--set ${Object.keys(SETS).join("|")}] [--csv FILE]`);
  process.exit(2);
}

let text = await readFile(file, "utf8");
if (Number.isFinite(maxCalls)) {
  // keep the JSONL up to (excluding) the entry of the (maxCalls+1)-th assistant message
  const lines = text.split("\n");
  let n = 0;
  const kept = [];
  for (const l of lines) {
    if (l.includes('"role":"assistant"') && /"type":"message"/.test(l)) {
      if (n === maxCalls) break;
      n++;
    }
    kept.push(l);
  }
  text = kept.join("\n");
}

// "Blind edits": edit calls the model issued on a path none of whose content
// (a read result, a write's content, an edit's newText) was visible in the
// context of that call. The replay cannot model the agent re-reading what was
// collapsed; this counts the places where it would have had to (raw's own count,
// after pi's compactions, is the floor).
const isRef = (t) => t.length < 200 && !t.includes("\n") && (/^\[.*\]$/.test(t.trim()) || t.startsWith("toolcall_ref"));
function visiblePaths(out) {
  const vis = new Set();
  const callPath = new Map();
  for (const m of out) {
    if (m.role === "assistant")
      for (const b of m.content ?? []) {
        if (b.type !== "toolCall") continue;
        const a = b.arguments ?? {};
        if (typeof a.path === "string") callPath.set(b.id, a.path);
        if (b.name === "write" && typeof a.content === "string" && !isRef(a.content)) vis.add(a.path);
        if (b.name === "edit" && typeof a.newText === "string" && !isRef(a.newText)) vis.add(a.path);
      }
    else if (m.role === "toolResult" && m.toolName === "read" && !m.isError) {
      const t = (m.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
      const p = callPath.get(m.toolCallId);
      if (p && !isRef(t)) vis.add(p);
    } else {
      // tail/active blocks of the spec layout
      const t = typeof m.content === "string" ? m.content : (m.content ?? []).map((c) => c.text ?? "").join("\n");
      for (const x of t.matchAll(/^--- file id=\S+ path=(.+?)(?: \(\S+\))? ---$/gm)) vis.add(x[1]);
    }
  }
  return vis;
}
function withBlindEdits(factory) {
  return (opts) => {
    const s = factory(opts);
    let prevVis = null;
    let blind = 0;
    let edits = 0;
    const seen = new WeakSet();
    return {
      ...s,
      async transform(messages, i, info) {
        // the newest assistant message is the previous call's output
        if (prevVis)
          for (let k = messages.length - 1; k >= 0; k--) {
            const m = messages[k];
            if (m.role !== "assistant") continue;
            if (!seen.has(m)) {
              seen.add(m);
              for (const b of m.content ?? [])
                if (b.type === "toolCall" && b.name === "edit" && typeof b.arguments?.path === "string") {
                  edits++;
                  if (!prevVis.has(b.arguments.path)) {
                    blind++;
                    if (process.env.BLIND_DEBUG && process.env.BLIND_DEBUG === opts.label) console.error(`blind edit at call ${i - 1}: ${b.arguments.path}`);
                  }
                }
            }
            break;
          }
        const out = await s.transform(messages, i, info);
        prevVis = visiblePaths(out);
        return out;
      },
      stats() {
        return { ...s.stats?.(), blindEdits: `${blind}/${edits}` };
      },
    };
  };
}

const strategies = [{ name: "raw", factory: withBlindEdits(await loadStrategyFactory("raw")), options: {} }];
for (const v of variants) strategies.push({ name: v.label, factory: withBlindEdits(await loadStrategyFactory(v.strategy)), options: { ...v.options, label: v.label } });

const t0 = performance.now();
const r = await replaySession({ file, text, strategies, tok: new Tokenizer() });
const sum = summarize(r.rows);
const per = new Map();
for (const row of r.rows) {
  let p = per.get(row.strategy);
  if (!p) per.set(row.strategy, (p = []));
  p.push(row);
}
const q = (a, f) => {
  const s = [...a].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor(f * s.length))];
};
const fmt = (n) => Math.round(n).toLocaleString("en-US");
console.log(`session ${file.split("/").pop()}${Number.isFinite(maxCalls) ? ` (first ${r.calls} calls)` : ""}: ${r.calls} calls, ${(performance.now() - t0) / 1000 | 0} s`);
console.log("| variant | Σ total | Σ uncached | Σ effective | total× | uncached× | effective× | mean/call | max/call | p95 uncached/call | stats |");
console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|");
for (const s of sum) {
  const rows = per.get(s.strategy);
  const st = r.stats[s.strategy] ?? {};
  const { description: _description, callsWithOrphanedToolResults, ...rest } = st;
  if (callsWithOrphanedToolResults) rest.ORPHANS = callsWithOrphanedToolResults;
  console.log(
    `| ${s.strategy} | ${fmt(s.total)} | ${fmt(s.uncached)} | ${fmt(s.effective)} | ${s.totalRatio.toFixed(3)} | ${s.uncachedRatio.toFixed(2)} | ${s.effectiveRatio.toFixed(3)} | ${fmt(s.total / s.calls)} | ${fmt(Math.max(...rows.map((x) => x.total)))} | ${fmt(q(rows.map((x) => x.uncached), 0.95))} | ${Object.entries(rest).map(([k, v]) => `${k} ${v}`).join(", ")} |`,
  );
}
const csv = flag("--csv");
if (csv) await writeFile(csv, `call,strategy,total,cached,uncached,effective\n${r.rows.map((x) => `${x.call},${x.strategy},${x.total},${x.cached},${x.uncached},${x.effective}`).join("\n")}\n`);
