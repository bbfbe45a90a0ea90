// Intrinsic per-call cost on the recorded session: the replay run R times,
// each call's minimum over the runs (the machine's preemption and other
// processes only ever add time), then percentiles over calls of those
// minima. For A/B comparisons on a noisy box; replay-latency.mjs gives the
// ordinary wall-clock figures.
//
//   node bench/node/replay-min.mjs [session.jsonl] [--runs R] [--clone]
//
// --clone: each call gets a structuredClone of its messages (untimed), as pi's
// context hook does, so no message object is the one consumed before.
import { mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { scm, stats, f3, header, unique } from "./common.mjs";
import { loadSession } from "../replay/lib/session.mjs";

const args = process.argv.slice(2);
const runsAt = args.indexOf("--runs");
const RUNS = runsAt >= 0 ? Number(args[runsAt + 1]) : 5;
const CLONE = args.includes("--clone");
const file = args.find((a, i) => !a.startsWith("--") && args[i - 1] !== "--runs") ?? "/work/shared/workloads/pi-session-refactor.jsonl";
header("replay-min", args);
const { calls } = loadSession(readFileSync(file, "utf8"));
const dir = realpathSync(mkdtempSync(join(tmpdir(), "scm-bench-min-")));
const min = new Array(calls.length).fill(Infinity);
for (let r = 0; r < RUNS; r++) {
  const cm = await scm.ContextManager.open({
    sessionId: unique("min"),
    store: { kind: "embedded", path: join(dir, `r${r}.sqlite`) },
    workspaceRoot: join(dir, "ws"),
    defaultFilesystemId: unique("fs-min"),
    emitSystemMessage: false,
  });
  for (let i = 0; i < calls.length; i++) {
    const messages = CLONE ? structuredClone(calls[i].messages) : calls[i].messages;
    const t0 = performance.now();
    await cm.transformContext(messages);
    min[i] = Math.min(min[i], performance.now() - t0);
  }
  await cm.close();
}
const s = stats(min);
const over = min.map((ms, i) => [ms, i]).filter(([ms]) => ms > 1).sort((a, b) => b[0] - a[0]);
console.log(`\n${CLONE ? "cloned messages (as pi passes them), " : ""}per-call minimum over ${RUNS} runs, ${calls.length} calls (ms): p50 ${f3(s.p50)} · p99 ${f3(s.p99)} · max ${f3(s.max)} · mean ${f3(s.mean)}`);
console.log(`calls over 1 ms: ${over.length} (${over.map(([ms, i]) => `#${i} ${ms.toFixed(2)}`).join(", ")})`);
rmSync(dir, { recursive: true, force: true });
