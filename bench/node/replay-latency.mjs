// Latency of the engine on a real recorded session: every model call of a pi
// session (reconstructed exactly as bench/replay does) goes through
// ContextManager.transformContext, on the embedded store and on XTDB.
// Token figures are bench/replay's business; this only times the calls.
//
//   node bench/node/replay-latency.mjs [session.jsonl] [--xtdb URL] [--repeat N] [--stores embedded,xtdb] [--durable]
//
// Default session: /work/shared/workloads/pi-session-refactor.jsonl.
// Reports p50/p99/max per call (all calls, and by thirds of the session, so
// growth with history shows), plus the JSON share measured in the same run.

import { mkdtempSync, readFileSync, rmSync, realpathSync, statSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { loadSession } from "../replay/lib/session.mjs";
import { scm, spyDelta, stats, f1, f2, f3, int, header, unique, loadavg } from "./common.mjs";

const args = process.argv.slice(2);
const opt = (k, d) => {
  const i = args.indexOf(`--${k}`);
  return i >= 0 ? args[i + 1] : d;
};
const VALUED = new Set(["--xtdb", "--repeat", "--stores"]);
const file = args.find((a, i) => !a.startsWith("--") && !(i > 0 && VALUED.has(args[i - 1]))) ?? "/work/shared/workloads/pi-session-refactor.jsonl";
const XTDB = opt("xtdb", process.env.SCM_BENCH_XTDB_URL);
const REPEAT = Number(opt("repeat", 1));
// --durable: each call resolves after its store write (default: write behind).
const DURABLE = args.includes("--durable");
// --epoch-detail: one line per epoch call (total, native part, append size, its JSON.parse) on stderr.
const EPOCH_DETAIL = args.includes("--epoch-detail");

header("replay-latency", args);
const session = loadSession(readFileSync(file, "utf8"));
const calls = session.calls;
console.log(`- session: ${file} — ${calls.length} model calls, ${session.compactionCalls.length} compactions (first calls after them: ${session.compactionCalls.join(", ")})`);

const dir = realpathSync(mkdtempSync(join(tmpdir(), "scm-bench-replay-")));
const ONLY = opt("stores", "embedded,xtdb").split(",");
const stores = [];
if (ONLY.includes("embedded")) stores.push(["embedded (file)", (r) => ({ kind: "embedded", path: join(dir, `replay-${r}.sqlite`) })]);
if (XTDB && ONLY.includes("xtdb")) stores.push(["xtdb", () => ({ kind: "xtdb", url: XTDB })]);

console.log(`\n## transformContext per model call, ${calls.length} calls${REPEAT > 1 ? ` × ${REPEAT} runs` : ""} (ms)\n`);
console.log("| store | write | run | p50 | p99 | max | mean | Σ s | thirds p50 | thirds p99 | steady p50 | steady p99 | epoch calls | epoch p50 | epoch p99 | after-compaction calls (ms) | JSON (tail in, append out) p50 | msgs appended per call | in JSON KiB (last) |");
console.log("|---|---|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|");
const writes = [];
for (const [kind, storeFor] of stores) {
  for (let r = 0; r < REPEAT; r++) {
    const cm = await scm.ContextManager.open({
      sessionId: unique("replay"),
      store: storeFor(r),
      workspaceRoot: join(dir, "ws"),
      defaultFilesystemId: unique("fs-replay"),
      emitSystemMessage: false,
      durableTransform: DURABLE,
    });
    const lat = [];
    const json = [];
    const split = { steady: [], epoch: [] };
    let appended = 0;
    // What the addon answers (the delta's `append`, `keep`), recorded as it passes.
    const seen = spyDelta(cm);
    let lastIn = 0;
    let prevLen = 0;
    for (const call of calls) {
      const epochs = cm.cacheStats().epochs;
      const t0 = performance.now();
      const out = await cm.transformContext(call.messages);
      const ms = performance.now() - t0;
      lat.push(ms);
      const isEpoch = cm.cacheStats().epochs !== epochs;
      (isEpoch ? split.epoch : split.steady).push(ms);
      if (EPOCH_DETAIL && isEpoch) {
        const p0 = performance.now();
        JSON.parse(seen.append);
        const parseMs = performance.now() - p0;
        console.error(`epoch call ${lat.length - 1}: ${f3(ms)} ms, native ${f3(seen.nativeMs)} ms, keep ${seen.keep}, out ${out.length}, append ${int(seen.append.length / 1024)} KiB parsed in ${f3(parseMs)} ms`);
      }
      appended += out.length - seen.keep;
      // The facade's JSON work, timed on its own: the messages after the
      // previous call's array (from its last one) in, the addon's `append` out.
      const from = Math.max(0, Math.min(prevLen, call.messages.length) - 1);
      const j0 = performance.now();
      JSON.stringify(call.messages.slice(from));
      JSON.parse(seen.append);
      json.push(performance.now() - j0);
      prevLen = call.messages.length;
      lastIn = JSON.stringify(call.messages).length;
    }
    // What the calls wrote: every stored version of the chat and session
    // heads and of their pages (the documents are paged, docs/design.md
    // "Persistence"), as stored — not the whole documents `history` rebuilds.
    const size = (d) => (d == null ? 0 : JSON.stringify(d).length);
    const chatNow = size(await cm.getObject(cm.chatObjectId));
    const sessNow = size(await cm.getObject(cm.sessionObjectId));
    await cm.flush();
    const raw = await scm.openStore(storeFor(r));
    // Fetching every version can exceed a store call's deadline on XTDB:
    // report that instead of failing.
    const versions = async (id) => {
      try {
        const h = await raw.storedHistory(id);
        let bytes = h.reduce((a, v) => a + size(v.doc), 0);
        let pages = 0;
        const parts = h.at(-1)?.doc?.paged?.parts ?? {};
        for (const [part, d] of Object.entries(parts)) {
          for (let k = 0; k < d.pages; k++) {
            const ph = await raw.storedHistory(`page:${id}:${part}:${k}`);
            pages += ph.length;
            bytes += ph.reduce((a, v) => a + size(v.doc), 0);
          }
        }
        return { n: pages ? `${h.length} + ${pages} page` : h.length, mib: f1(bytes / 2 ** 20) };
      } catch (e) {
        return { n: e.code ?? "error", mib: "–" };
      }
    };
    const chatV = await versions(cm.chatObjectId);
    const sessV = await versions(cm.sessionObjectId);
    await cm.close();
    const dbFile = kind.startsWith("embedded") ? storeFor(r).path : null;
    const fileSize = (p) => {
      try {
        return statSync(p).size;
      } catch {
        return 0;
      }
    };
    const dbBytes = dbFile ? fileSize(dbFile) + fileSize(`${dbFile}-wal`) : null;
    writes.push(
      `| ${kind} | ${r + 1} | ${chatV.n} | ${int(chatNow / 1024)} | ${chatV.mib} | ${sessV.n} | ${int(sessNow / 1024)} | ${sessV.mib} | ${dbBytes == null ? "–" : f1(dbBytes / 2 ** 20)} |`,
    );
    const all = stats(lat);
    const n = lat.length;
    const third = (k) => lat.slice(Math.floor((k * n) / 3), Math.floor(((k + 1) * n) / 3));
    const afterCompaction = session.compactionCalls.map((c) => `#${c}: ${f1(lat[c])}`).join(", ");
    const js = stats(json);
    const sp = (v, k) => (v.length ? f3(stats(v)[k]) : "–");
    const th = (k) => [0, 1, 2].map((i) => f3(stats(third(i))[k])).join(" / ");
    console.log(
      `| ${kind} | ${DURABLE ? "durable" : "behind"} | ${r + 1} | ${f3(all.p50)} | ${f3(all.p99)} | ${f3(all.max)} | ${f3(all.mean)} | ${f2(lat.reduce((a, b) => a + b, 0) / 1e3)} | ${th("p50")} | ${th("p99")} | ${sp(split.steady, "p50")} | ${sp(split.steady, "p99")} | ${split.epoch.length} | ${sp(split.epoch, "p50")} | ${sp(split.epoch, "p99")} | ${afterCompaction} | ${f3(js.p50)} | ${f1(appended / n)} | ${int(lastIn / 1024)} |`,
    );
  }
}
console.log("\n### What the replay wrote\n");
console.log("| store | run | chat versions (head + pages) | chat doc now KiB | Σ chat versions stored MiB | session versions (head + pages) | session doc now KiB | Σ session versions stored MiB | store file + WAL MiB |");
console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
for (const w of writes) console.log(w);
console.log(`\n(loadavg at end: ${loadavg()})`);
rmSync(dir, { recursive: true, force: true });
