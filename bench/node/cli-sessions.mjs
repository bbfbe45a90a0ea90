// The command-line tool's `sessions` listing on a store holding many sessions (a shared store: many agents, one
// database). Records N small cache-layout sessions (a file read, five bash calls with long outputs), then runs
// `self-context-manager sessions --json` as a user does, a child process, `runs` times; prints each wall time.
// Each row's last-call tokens come from that call's record (session 40; before, each session was rebuilt
// read-only for them: 300 sessions on XTDB 5.4-6.2 s, 0.5-0.8 s after). Sessions recorded before records kept
// tokens are still rebuilt; run it with an older addon (NAPI_RS_NATIVE_LIBRARY_PATH) for that path. Then times
// `stats` on the same store (on XTDB one history request per object, eight in flight since session 40).
//
//   node bench/node/cli-sessions.mjs [sessions=300] [runs=3] [--xtdb URL]
//
// Embedded: a store file in a temporary directory.

import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { header, scm, unique } from "./common.mjs";

const argv = process.argv.slice(2);
const xi = argv.indexOf("--xtdb");
const url = xi >= 0 ? argv[xi + 1] : null;
const [n = 300, runs = 3] = argv.filter((a, i) => !a.startsWith("--") && (xi < 0 || i !== xi + 1)).map(Number);
header("cli-sessions", argv);
const dir = mkdtempSync(path.join(os.tmpdir(), "scm-cli-sessions-"));
const store = url ? { kind: "xtdb", url } : { kind: "embedded", path: path.join(dir, "store.db") };
const storeArg = url ?? store.path;
const bin = path.join(path.dirname(fileURLToPath(import.meta.url)), "../../bin/self-context-manager.js");
const lines = (k, tag) => Array.from({ length: k }, (_, i) => `${tag} line ${i} of a long tool output, padded out`).join("\n");

let t = performance.now();
for (let s = 0; s < n; s += 1) {
  const ws = mkdtempSync(path.join(dir, "ws-"));
  writeFileSync(path.join(ws, "notes.md"), "# notes\nhello\n");
  const cm = await scm.ContextManager.open({ sessionId: unique("bench-sessions"), store, workspaceRoot: ws, cachePolicy: { high: 300, low: 100, fold: 0 } });
  const msgs = [{ role: "user", content: "look around", timestamp: 1 }];
  await cm.read("notes.md");
  await cm.transformContext(msgs);
  for (let i = 1; i < 6; i += 1) {
    msgs.push({ role: "assistant", content: [{ type: "toolCall", id: `c${i}`, name: "bash", arguments: { command: `echo ${i}` } }], stopReason: "toolUse", timestamp: 10 * i });
    msgs.push({ role: "toolResult", toolCallId: `c${i}`, toolName: "bash", content: [{ type: "text", text: lines(20, `out${i}`) }], isError: false, timestamp: 10 * i + 1 });
    await cm.transformContext(msgs);
  }
  await cm.close();
}
console.log(`- recorded ${n} sessions in ${Math.round(performance.now() - t)} ms (${url ? "XTDB " + url : "embedded"})`);
const cli = (...args) => {
  const t0 = performance.now();
  const out = spawnSync(process.execPath, [bin, ...args, "--json", "--store", storeArg], { encoding: "utf8", maxBuffer: 1 << 28 });
  if (out.status !== 0) throw new Error(`${args[0]} failed (${out.status}): ${out.stderr}`);
  return { json: JSON.parse(out.stdout), ms: Math.round(performance.now() - t0) };
};
console.log("\n| run | sessions listed | wall ms |\n|---:|---:|---:|");
for (let r = 1; r <= runs; r += 1) {
  const { json, ms } = cli("sessions");
  console.log(`| ${r} | ${json.length} | ${ms} |`);
}
// `stats` on the same store: XTDB v1 has no version count, so it reads every object's history.
console.log("\n| run | stats: objects | versions | wall ms |\n|---:|---:|---:|---:|");
for (let r = 1; r <= runs; r += 1) {
  const { json, ms } = cli("stats");
  console.log(`| ${r} | ${json.objects} | ${json.versions} | ${ms} |`);
}
