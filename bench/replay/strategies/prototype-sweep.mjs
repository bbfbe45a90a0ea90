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

const strategies = [{ name: "raw", factory: await loadStrategyFactory("raw"), options: {} }];
for (const v of variants) strategies.push({ name: v.label, factory: await loadStrategyFactory(v.strategy), options: { ...v.options, label: v.label } });

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
  const { description, callsWithOrphanedToolResults, ...rest } = st;
  if (callsWithOrphanedToolResults) rest.ORPHANS = callsWithOrphanedToolResults;
  console.log(
    `| ${s.strategy} | ${fmt(s.total)} | ${fmt(s.uncached)} | ${fmt(s.effective)} | ${s.totalRatio.toFixed(3)} | ${s.uncachedRatio.toFixed(2)} | ${s.effectiveRatio.toFixed(3)} | ${fmt(s.total / s.calls)} | ${fmt(Math.max(...rows.map((x) => x.total)))} | ${fmt(q(rows.map((x) => x.uncached), 0.95))} | ${Object.entries(rest).map(([k, v]) => `${k} ${v}`).join(", ")} |`,
  );
}
const csv = flag("--csv");
if (csv) await writeFile(csv, `call,strategy,total,cached,uncached,effective\n${r.rows.map((x) => `${x.call},${x.strategy},${x.total},${x.cached},${x.uncached},${x.effective}`).join("\n")}\n`);
