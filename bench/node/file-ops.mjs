// The agent's file operations through the addon (ContextManager.read / observeEdit): N new files read, then each
// edited on disk and observed, then each read again unchanged. Per call ms and the store's transactions per call
// (docs/design.md §3 "One path for a file version": one per operation).
//
//   node bench/node/file-ops.mjs [files=200] [--xtdb URL]
//
// Embedded: a store file (WAL, synchronous = FULL), so a transaction costs what it costs on disk.

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { f3, header, loadavg, scm, stats, textBytes } from "./common.mjs";

const args = process.argv.slice(2);
const xi = args.indexOf("--xtdb");
const xtdb = xi >= 0 ? args.splice(xi, 2)[1] : null;
const N = Number(args[0] ?? 200);
header("file-ops", process.argv.slice(2));

const dir = mkdtempSync(join(tmpdir(), "scm-fileops-"));
const store = xtdb ? { kind: "xtdb", url: xtdb } : { kind: "embedded", path: join(dir, "s.sqlite") };
const cm = await scm.ContextManager.open({ sessionId: `fileops-${process.pid}-${Date.now()}`, workspaceRoot: dir, store });
const file = (i) => join(dir, `src/f${i}.txt`);
const { mkdirSync } = await import("node:fs");
mkdirSync(join(dir, "src"), { recursive: true });
for (let i = 0; i < N; i++) writeFileSync(file(i), textBytes(4000, i));

/** ms per call and the store's transactions per call (the addon's count of submitted transactions). */
async function phase(name, op) {
	const ms = [];
	const tx0 = cm.store.submittedTxCount?.() ?? null;
	for (let i = 0; i < N; i++) {
		const a = process.hrtime.bigint();
		const r = await op(i);
		ms.push(Number(process.hrtime.bigint() - a) / 1e6);
		if (!r.ok) throw new Error(`${name} ${i}: ${r.message}`);
	}
	const tx1 = cm.store.submittedTxCount?.() ?? null;
	const s = stats(ms);
	const perCall = tx0 === null ? "?" : ((tx1 - tx0) / N).toFixed(2);
	console.log(`| ${store.kind} | ${name} | ${N} | ${f3(s.p50)} | ${f3(s.p99)} | ${f3(s.max)} | ${perCall} |`);
}

console.log("\n| store | operation | calls | p50 ms | p99 ms | max ms | transactions per call |\n|---|---|---:|---:|---:|---:|---:|");
await phase("read, new file", (i) => cm.read(file(i)));
for (let i = 0; i < N; i++) writeFileSync(file(i), textBytes(4000, i + 1_000_000));
await phase("edit observed", (i) => cm.observeEdit(file(i)));
await phase("read, unchanged", (i) => cm.read(file(i)));
await cm.close();
rmSync(dir, { recursive: true, force: true });
console.log(`\n(loadavg at end: ${loadavg()})`);
