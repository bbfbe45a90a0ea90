#!/usr/bin/env node
// Replay benchmark: node bench/replay/replay.mjs <session.jsonl> [more.jsonl…]
//   [--out DIR] [--strategies raw,masking,strawman,self-context-manager]
//   [--opt STRATEGY.KEY=VALUE]…
// See docs/notes/replay.md.

import { mkdir, writeFile } from "node:fs/promises";
import { basename, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { loadStrategyFactory, reconstructionStats, replaySession, summarize } from "./lib/run.mjs";
import { breakdownTable, callsCsv, editsCsv, fmtInt, fmtM, plotSvg, priceTable, reconstructionCsv, summaryTable } from "./lib/report.mjs";
import { Tokenizer } from "./lib/tokens.mjs";

const DEFAULT_STRATEGIES = ["raw", "masking", "strawman", "self-context-manager"];

function usage(code = 0) {
  console.log(`usage: node bench/replay/replay.mjs <session.jsonl> [more.jsonl…] [--out DIR]
       [--strategies ${DEFAULT_STRATEGIES.join(",")}] [--opt STRATEGY.KEY=VALUE]…
  --out DIR         output directory (default bench/replay/out/)
  --strategies L    comma list of strategies/<name>.mjs (or paths); raw is always run first
  --opt S.K=V       option K=V for strategy S, e.g. --opt masking.keep=10 --opt strawman.threshold=60000
  --calls N         replay only the first N model calls of each session (robustness checks on truncations)`);
  process.exit(code);
}

function parseArgs(argv) {
  const files = [];
  let out = fileURLToPath(new URL("./out/", import.meta.url));
  let strategies = DEFAULT_STRATEGIES;
  const opts = {};
  let calls = 0;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      if (a.includes("=") && a.startsWith("--")) return a.slice(a.indexOf("=") + 1);
      if (i + 1 >= argv.length) usage(2);
      return argv[++i];
    };
    if (a === "-h" || a === "--help") usage(0);
    else if (a.startsWith("--out")) out = resolve(val());
    else if (a.startsWith("--calls")) {
      calls = Number(val());
      if (!Number.isInteger(calls) || calls < 1) usage(2);
    } else if (a.startsWith("--strategies")) strategies = val().split(",").map((s) => s.trim()).filter(Boolean);
    else if (a.startsWith("--opt")) {
      const kv = val();
      const m = /^([^.=]+)\.([^=]+)=(.*)$/.exec(kv);
      if (!m) usage(2);
      (opts[m[1]] ??= {})[m[2]] = m[3];
    } else if (a.startsWith("--")) usage(2);
    else files.push(a);
  }
  if (!files.length) usage(2);
  if (!strategies.includes("raw")) strategies = ["raw", ...strategies];
  else strategies = ["raw", ...strategies.filter((s) => s !== "raw")];
  return { files, out, strategies, opts, calls };
}

async function main() {
  const t0 = performance.now();
  const { files, out, strategies, opts, calls } = parseArgs(process.argv.slice(2));
  const loaded = [];
  for (const name of strategies) loaded.push({ name, factory: await loadStrategyFactory(name), options: opts[name] ?? {} });

  const tok = new Tokenizer();
  const results = [];
  const labels = new Map();
  for (const file of files) {
    console.error(`replaying ${file} …`);
    const base = basename(file);
    const n = (labels.get(base) ?? 0) + 1;
    labels.set(base, n);
    const label = n > 1 ? `${base}#${n}` : base;
    results.push(await replaySession({ file, label, strategies: loaded, tok, log: (s) => console.error(s), maxCalls: calls }));
  }

  // Global x index across sessions for the plot; markers for compactions / session starts.
  const allRows = [];
  const editRows = results.flatMap((r) => r.editRows);
  const markers = [];
  let base = 0;
  for (const r of results) {
    if (results.length > 1) markers.push({ x: base, label: r.session });
    for (const c of r.compactionCalls) markers.push({ x: base + c, label: "pi compaction" });
    for (const row of r.rows) allRows.push({ ...row, x: base + row.call });
    base += r.calls;
  }
  const summary = summarize(allRows);
  const recon = results.flatMap((r) => r.reconstruction);
  const rs = reconstructionStats(recon);
  const breakdown = { summedOverCalls: {}, uniqueContent: {} };
  for (const r of results) {
    for (const k of ["summedOverCalls", "uniqueContent"]) for (const [c, v] of Object.entries(r.breakdown[k])) breakdown[k][c] = (breakdown[k][c] ?? 0) + v;
  }
  const skipped = results.flatMap((r) => r.skipped.map((s) => ({ ...s, session: r.session })));
  const totalCalls = results.reduce((a, r) => a + r.calls, 0);
  const elapsed = (performance.now() - t0) / 1000;

  await mkdir(out, { recursive: true });
  await writeFile(`${out}/calls.csv`, callsCsv(allRows));
  await writeFile(`${out}/edits.csv`, editsCsv(editRows));
  await writeFile(`${out}/payloads.csv`, ["session,call,strategy,sha256", ...allRows.map((r) => `${r.session},${r.call},${r.strategy},${r.payload}`)].join("\n") + "\n");
  await writeFile(`${out}/reconstruction.csv`, reconstructionCsv(recon));
  await writeFile(
    `${out}/tokens-per-call.svg`,
    plotSvg(allRows, { markers, title: `Input tokens per model call — ${results.map((r) => r.session).join(", ")} (o200k)` }),
  );

  const table = summaryTable(summary);
  const prices = priceTable(summary);
  const expiredCalls = summary.find((s) => s.strategy === "raw")?.expiredCalls ?? 0;
  const visibilityMs = results.reduce((a, r) => a + (r.timings.visibility ?? 0), 0);
  const strategyNotes = [];
  for (const r of results)
    for (const [s, st] of Object.entries(r.stats)) {
      const { description, ...rest } = st;
      strategyNotes.push(`- ${r.session} / **${s}**: ${description}${Object.keys(rest).length ? ` — ${Object.entries(rest).map(([k, v]) => `${k} ${v}`).join(", ")}` : ""}`);
    }
  const md = `# Replay benchmark summary

Command: \`node bench/replay/replay.mjs ${process.argv.slice(2).join(" ")}\`

Sessions: ${results.map((r) => `${r.session} (${r.format} format, ${r.calls} calls, ${r.compactionCalls.length} pi compactions)`).join("; ")}.
Tokenizer: o200k_base (gpt-tokenizer). System prompt + tool definitions: ${fmtInt(results[0]?.preambleTokens ?? 0)} tokens per call, identical for every strategy.
Cache model: cached = longest common token prefix with the same strategy's previous call; uncached = total − cached; effective = uncached + 0.1 × cached.

${table}

## Context sufficiency and price models (issue 10)

Edit-anchor visibility: a successful recorded \`edit\` (its tool result is not an error) is *supported* at its call when ≥ 90% of its \`oldText\` lines (trimmed, ≥ 8 chars; top-level \`oldText\` and \`edits[].oldText\` together; no such line = supported) occur in the plain text of that call's provider messages (text, thinking, tool-call argument strings, tool-result text). Per edit: edits.csv.
Penalty: each unsupported edit adds one re-read of its file — the tokens of the file's most recent recorded read output before the call (else its last recorded write content), counted uncached at the model's uncached price.
Price models (uncached / cached price per token): standard 1.0 / 0.1; cache-write premium 1.25 / 0.1; cheap reads 1.25 / 0.025; cache expiry 1.0 / 0.1 where a call more than 5 minutes after the previous call's request (recorded timestamps) is all uncached, for every strategy (${expiredCalls} of ${totalCalls} calls).

${prices}

${skipped.length ? `Skipped: ${skipped.map((s) => `${s.strategy} (${s.reason})`).join("; ")}\n\n` : ""}## Strategies
${strategyNotes.join("\n")}

## Reconstruction vs recorded provider usage (raw)
Recorded usage (input + cacheRead + cacheWrite, Anthropic tokenizer, real system prompt) on ${rs.callsCompared} calls with usage (${rs.callsWithoutUsage} aborted/errored calls report none):
recorded Σ ${fmtInt(rs.recordedSum)} (${fmtM(rs.recordedSum)}; uncached input+cacheWrite ${fmtInt(rs.recordedUncachedSum)}, cacheRead ${fmtInt(rs.recordedCacheReadSum)}); ours (o200k) on the same calls Σ ${fmtInt(rs.rawSumOnCompared)} (${fmtM(rs.rawSumOnCompared)}).
Per-call ratio ours/recorded: ratio of sums ${rs.ratioOfSums.toFixed(3)}, median ${rs.ratioMedian.toFixed(3)}, p5 ${rs.ratioP05.toFixed(3)}, p95 ${rs.ratioP95.toFixed(3)}, min ${rs.ratioMin.toFixed(3)}, max ${rs.ratioMax.toFixed(3)}; Pearson r ${rs.pearson.toFixed(4)}; median ratio of call-to-call growth ${rs.incrementRatioMedian.toFixed(3)} (${rs.incrementsCompared} increments).
Per-call detail: reconstruction.csv.

## Where the tokens are (raw)
${breakdownTable(breakdown, totalCalls)}

Runtime: ${elapsed.toFixed(1)} s for ${totalCalls} calls × ${summary.length} strategies (tokenised ${fmtInt(tok.encodedChars)} unique chars in ${(tok.encodeMs / 1000).toFixed(1)} s; edit-anchor visibility ${(visibilityMs / 1000).toFixed(2)} s).
`;
  await writeFile(`${out}/summary.md`, md);
  await writeFile(
    `${out}/summary.json`,
    `${JSON.stringify({ sessions: results.map((r) => ({ session: r.session, format: r.format, calls: r.calls, compactionCalls: r.compactionCalls, preambleTokens: r.preambleTokens, stats: r.stats, skipped: r.skipped, timingsMs: r.timings })), summary, reconstruction: rs, breakdown, runtimeSeconds: elapsed }, null, 2)}\n`,
  );

  console.log(table);
  console.log(`\neffective cost under four price models (ratios vs raw; penalised = + one uncached re-read per unsupported edit; expiry: ${expiredCalls} call${expiredCalls === 1 ? "" : "s"} cold):\n`);
  console.log(prices);
  if (skipped.length) console.log(`\nskipped: ${skipped.map((s) => `${s.strategy} (${s.reason})`).join("; ")}`);
  console.log(
    `\nreconstruction: ours/recorded ratio of sums ${rs.ratioOfSums.toFixed(3)}, median ${rs.ratioMedian.toFixed(3)} [p5 ${rs.ratioP05.toFixed(3)}, p95 ${rs.ratioP95.toFixed(3)}], r=${rs.pearson.toFixed(4)} over ${rs.callsCompared} calls`,
  );
  console.log(`runtime ${elapsed.toFixed(1)} s; outputs in ${out}`);
}

main().catch((err) => {
  console.error(err?.stack ?? err);
  process.exit(1);
});
