// transformContext latency through the Node addon (ContextManager), on the
// same synthetic sessions as crates/scm-core/benches/session.rs, so the
// binding's cost (JSON.stringify of the whole transcript in, JSON.parse of
// the assembled context out, napi async hop) is visible next to the core's.
//
//   node bench/node/transform.mjs [--samples N] [--xtdb URL] [--sizes 50x200,200x1000,500x2000] [--layout cache|spec] [--stores embedded,xtdb] [--durable] [--settle] [--runs R]
//
// Each measured call appends ONE message (alternately an assistant tool call
// and its result) to the transcript, like the Rust bench.

import { mkdtempSync, mkdirSync, writeFileSync, rmSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { PerformanceObserver } from "node:perf_hooks";
import { tmpdir } from "node:os";
import { scm, spyDelta, stats, f1, f3, int, header, unique, loadavg, textBytes } from "./common.mjs";

const args = process.argv.slice(2);
const opt = (k, d) => {
  const i = args.indexOf(`--${k}`);
  return i >= 0 ? args[i + 1] : d;
};
const SAMPLES = Number(opt("samples", 200));
const XTDB = opt("xtdb", process.env.SCM_BENCH_XTDB_URL);
const SIZES = opt("sizes", "50x200,200x1000,500x2000")
  .split(",")
  .map((s) => s.split("x").map(Number));
const LAYOUT = opt("layout", "cache");
// --durable: transformContext resolves after its store write (the default
// returns once the context is assembled; the write follows behind).
const DURABLE = args.includes("--durable");
// --settle: await flush() (untimed) before each measured call, so no background write overlaps it.
const SETTLE = args.includes("--settle");
// --epoch-detail: one line per epoch call (total, native part, append size, its JSON.parse).
// --runs R: each size built and measured R times (a row each), then each call's minimum over
// the runs (the same work: the session is deterministic) — the machine's preemption only ever
// adds time, so on a noisy box these percentiles are the code's own (as replay-min.mjs does
// for the recorded session).
const RUNS = Number(opt("runs", 1));
const EPOCH_DETAIL = args.includes("--epoch-detail");
const READS = 20;
const OUTPUT_BYTES = 800;

class Transcript {
  messages = [];
  ts = 0;
  calls = 0;
  tick() {
    return 1_700_000_000_000 + ++this.ts;
  }
  user(text) {
    this.messages.push({ role: "user", content: text, timestamp: this.tick() });
  }
  assistantCall() {
    const ts = this.tick();
    this.calls++;
    const id = `call_${String(this.calls).padStart(6, "0")}`;
    this.messages.push({
      role: "assistant",
      content: [
        { type: "text", text: `Running step ${this.calls} to check the change.` },
        { type: "toolCall", id, name: "bash", arguments: { command: `cargo test -p crate${this.calls % 17} -- case_${this.calls}` } },
      ],
      api: "anthropic-messages",
      provider: "anthropic",
      model: "claude-x",
      usage: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0 },
      stopReason: "toolUse",
      timestamp: ts,
    });
    return id;
  }
  result(id) {
    this.messages.push({
      role: "toolResult",
      toolCallId: id,
      toolName: "bash",
      content: [{ type: "text", text: textBytes(OUTPUT_BYTES, this.calls) }],
      isError: false,
      timestamp: this.tick(),
    });
  }
}

async function build(store, root, turns, objects) {
  const t0 = performance.now();
  const nFiles = Math.floor(objects / 2);
  const nCalls = objects - nFiles;
  const files = [];
  for (let i = 0; i < nFiles; i++) {
    const rel = `pkg${String(Math.floor(i / 200)).padStart(2, "0")}/mod_${String(i).padStart(5, "0")}.rs`;
    mkdirSync(join(root, rel, ".."), { recursive: true });
    writeFileSync(join(root, rel), textBytes(1024, i));
    files.push(rel);
  }
  const cm = await scm.ContextManager.open({
    sessionId: unique("bench"),
    store,
    workspaceRoot: root,
    systemPrompt: "You are a coding agent. Be terse.",
    defaultFilesystemId: unique("fs-bench"),
    layout: LAYOUT,
    durableTransform: DURABLE,
  });
  const t = new Transcript();
  const reads = files.slice(0, READS);
  const stubs = files.slice(READS);
  const share = (v, turn) => v.slice(Math.floor((turn * v.length) / turns), Math.floor(((turn + 1) * v.length) / turns));
  for (let turn = 0; turn < turns; turn++) {
    t.user(`Turn ${turn}: please continue with the next part of the refactor.`);
    for (const rel of share(reads, turn)) {
      const r = await cm.read(rel);
      if (!r.ok) throw new Error(r.message);
    }
    const listing = share(stubs, turn);
    if (listing.length) {
      const r = await cm.observeFind(listing.join("\n"));
      if (!r.ok) throw new Error(r.message);
    }
    const calls = Math.floor(((turn + 1) * nCalls) / turns) - Math.floor((turn * nCalls) / turns);
    if (calls === 0) await cm.transformContext(t.messages);
    for (let k = 0; k < calls; k++) {
      await cm.transformContext(t.messages);
      t.result(t.assistantCall());
    }
  }
  await cm.transformContext(t.messages);
  const snap = cm.snapshot();
  const pool = snap.metadataPool.length;
  if (pool !== objects) throw new Error(`pool ${pool} != ${objects}`);
  return { cm, t, buildS: (performance.now() - t0) / 1e3 };
}


async function measure({ cm, t }) {
  const total = [];
  const json = [];
  const split = { steady: [], epoch: [] };
  const thirds = [[], [], []];
  const flags = [];
  let pending = null;
  let outLen = 0;
  let appended = 0;
  const seen = spyDelta(cm);
  // Node GC pauses, to tell which slow calls overlapped one.
  const gcs = [];
  const obs = new PerformanceObserver((l) => {
    for (const e of l.getEntries()) gcs.push([e.startTime, e.startTime + e.duration]);
  });
  obs.observe({ entryTypes: ["gc"] });
  const spans = [];
  const base = [];
  for (let i = 0; i < SAMPLES; i++) {
    if (pending == null) pending = t.assistantCall();
    else {
      t.result(pending);
      pending = null;
    }
    if (SETTLE) await cm.flush();
    // Baseline in the same run: a fixed ~0.1 ms JS loop, timed like a call (the
    // machine's own tail: preemption on a shared 2-CPU box).
    const b0 = performance.now();
    let acc = 0;
    for (let k = 0; k < 150_000; k++) acc = (acc * 31 + k) | 0;
    base.push(performance.now() - b0);
    if (acc === 42) console.log("");
    const epochs = LAYOUT === "cache" ? cm.cacheStats().epochs : 0;
    const t0 = performance.now();
    const out = await cm.transformContext(t.messages);
    const ms = performance.now() - t0;
    spans.push([t0, t0 + ms]);
    total.push(ms);
    thirds[Math.min(2, Math.floor((3 * i) / SAMPLES))].push(ms);
    const isEpoch = LAYOUT === "cache" && cm.cacheStats().epochs !== epochs;
    (isEpoch ? split.epoch : split.steady).push(ms);
    flags.push(isEpoch);
    if (EPOCH_DETAIL && isEpoch) {
      const p0 = performance.now();
      JSON.parse(seen.append);
      const parseMs = performance.now() - p0;
      console.error(`epoch call ${i}: ${f3(ms)} ms, native ${f3(seen.nativeMs)} ms, keep ${seen.keep}, out ${out.length}, append ${int(seen.append.length / 1024)} KiB parsed in ${f3(parseMs)} ms`);
    }
    outLen = out.length;
    appended += out.length - seen.keep;
    // The facade's JSON work on the same data, timed on its own: it
    // stringifies the tail after the cursor (from the last consumed message)
    // and parses the addon's `append` (the messages after the kept prefix).
    const j0 = performance.now();
    JSON.stringify(t.messages.slice(-2));
    JSON.parse(seen.append);
    json.push(performance.now() - j0);
  }
  await new Promise((r) => setImmediate(r));
  obs.disconnect();
  const gcHit = spans.map(([a, b]) => gcs.some(([x, y]) => x < b && y > a));
  const noGc = total.filter((_, i) => !gcHit[i]);
  const inBytes = JSON.stringify(t.messages).length;
  const st = (v) => (v.length ? stats(v) : null);
  return { raw: total, rawBase: base, epochAt: flags, total: stats(total), json: stats(json), outLen, inBytes, steady: st(split.steady), epoch: st(split.epoch), thirds: thirds.map(st), appended: appended / SAMPLES, gcCalls: gcHit.filter(Boolean).length, noGc: st(noGc), gcMs: gcs.reduce((a, [x, y]) => a + y - x, 0), base: stats(base) };
}

header("transform", process.argv.slice(2));
console.log(`\n## ContextManager.transformContext through the addon, one new message per call (${SAMPLES} calls per size; ms)\n`);
console.log("| store | layout | write | turns | objects | build s | p50 | p99 | max | steady p50 | steady p99 | epoch calls | epoch p50 | epoch p99 | thirds p50 | thirds p99 | calls overlapping a Node GC | p99 of the others | baseline 0.1 ms loop p50 / p99 | JSON (tail in, append out) p50 | p99 | transcript JSON KiB | out msgs | msgs appended per call |");
console.log("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---|---:|---:|---:|---:|---:|");
const dir = realpathSync(mkdtempSync(join(tmpdir(), "scm-bench-node-")));
const ONLY = opt("stores", "embedded,xtdb").split(",");
const kinds = [];
if (ONLY.includes("embedded")) kinds.push(["embedded", (i) => ({ kind: "embedded", path: join(dir, `s${i}.sqlite`) })]);
if (XTDB && ONLY.includes("xtdb")) kinds.push(["xtdb", () => ({ kind: "xtdb", url: XTDB })]);
let i = 0;
const minima = [];
for (const [kind, storeFor] of kinds) {
  for (const [turns, objects] of SIZES) {
    const runs = [];
    for (let r = 0; r < RUNS; r++) {
      const root = join(dir, `ws${i}`);
      mkdirSync(root);
      const b = await build(storeFor(i++), root, turns, objects);
      const m = await measure(b);
      runs.push(m);
      const o = (x, k) => (x ? f3(x[k]) : "–");
      console.log(
        `| ${kind} | ${LAYOUT} | ${DURABLE ? "durable" : SETTLE ? "behind, settled before each call" : "behind"} | ${turns} | ${int(objects)} | ${f1(b.buildS)} | ${f3(m.total.p50)} | ${f3(m.total.p99)} | ${f3(m.total.max)} | ${o(m.steady, "p50")} | ${o(m.steady, "p99")} | ${m.epoch?.n ?? 0} | ${o(m.epoch, "p50")} | ${o(m.epoch, "p99")} | ${m.thirds.map((x) => o(x, "p50")).join(" / ")} | ${m.thirds.map((x) => o(x, "p99")).join(" / ")} | ${m.gcCalls} | ${o(m.noGc, "p99")} | ${f3(m.base.p50)} / ${f3(m.base.p99)} | ${f3(m.json.p50)} | ${f3(m.json.p99)} | ${int(m.inBytes / 1024)} | ${m.outLen} | ${f1(m.appended)} |`,
      );
      await b.cm.close();
    }
    if (RUNS > 1) minima.push([kind, turns, objects, runs]);
  }
}
if (minima.length) {
  console.log(`\n## Each call's minimum over ${RUNS} runs (ms)\n`);
  console.log("| store | turns | objects | p50 | p99 | max | epoch calls | epoch p99 | calls over 1 ms | the 0.1 ms loop's, p99 |");
  console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
  for (const [kind, turns, objects, runs] of minima) {
    const min = runs[0].raw.map((_, k) => Math.min(...runs.map((m) => m.raw[k])));
    const epochs = min.filter((_, k) => runs[0].epochAt[k]);
    const s = stats(min);
    const e = epochs.length ? f3(stats(epochs).p99) : "–";
    const loop = stats(runs[0].rawBase.map((_, k) => Math.min(...runs.map((m) => m.rawBase[k])))).p99;
    console.log(`| ${kind} | ${turns} | ${int(objects)} | ${f3(s.p50)} | ${f3(s.p99)} | ${f3(s.max)} | ${epochs.length} | ${e} | ${min.filter((x) => x > 1).length} | ${f3(loop)} |`);
  }
}
console.log(`\n(loadavg at end: ${loadavg()})`);
rmSync(dir, { recursive: true, force: true });
