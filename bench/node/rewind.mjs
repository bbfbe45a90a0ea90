// A host branch switch (pi's /tree → cm.rewind, docs/design.md §7 "Branches") on a session of N turns with a
// turn-boundary commit after each: the time of the rewind (commit what is new, find the commit, restore its state,
// open the session again) and of the first call after it, for three targets (the last turn, the middle, turn 1).
//
//   node bench/node/rewind.mjs [turns=500] [cache|spec] [--xtdb URL]
//
// Each turn: a prompt (~200 chars), a bash call with a 40-line output, an answer.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { scm } from "./common.mjs";

function turn(k) {
	const ts = 1_700_000_000_000 + k * 10;
	const call = `call-${k}`;
	const meta = { api: "faux", provider: "faux", model: "faux-1", usage: { input: 1, output: 1 } };
	return [
		{ role: "user", content: `question ${k} `.repeat(20), timestamp: ts },
		{ role: "assistant", content: [{ type: "text", text: `looking ${k}` }, { type: "toolCall", id: call, name: "bash", arguments: { command: `echo ${k}` } }], ...meta, stopReason: "toolUse", timestamp: ts + 1 },
		{ role: "toolResult", toolCallId: call, toolName: "bash", content: [{ type: "text", text: `output ${k}\n`.repeat(40) }], isError: false, timestamp: ts + 2 },
		{ role: "assistant", content: [{ type: "text", text: `answer ${k}` }], ...meta, stopReason: "stop", timestamp: ts + 3 },
	];
}

const args = process.argv.slice(2);
const xi = args.indexOf("--xtdb");
const xtdb = xi >= 0 ? args.splice(xi, 2)[1] : null;
const N = Number(args[0] ?? 500);
const layout = args[1] ?? "cache";
const dir = mkdtempSync(join(tmpdir(), "scm-rewind-"));
const store = xtdb ? { kind: "xtdb", url: xtdb } : { kind: "embedded", path: join(dir, "s.sqlite") };
const cm = await scm.ContextManager.open({ sessionId: `rewind-${process.pid}-${Date.now()}`, workspaceRoot: dir, store, layout, template: "bench" });
const t = [];
for (let k = 0; k < N; k++) {
	t.push(...turn(k));
	await cm.transformContext(t);
	await cm.checkpoint({ trigger: "turn_boundary" });
}
const ms = (a) => (Number(process.hrtime.bigint() - a) / 1e6).toFixed(1);
for (const back of [N - 1, Math.floor(N / 2), 1]) {
	const branch = t.slice(0, back * 4);
	let a = process.hrtime.bigint();
	const r = await cm.rewind(branch);
	const took = ms(a);
	a = process.hrtime.bigint();
	await cm.transformContext([...branch, ...turn(1_000_000 + back)]);
	console.log(`${store.kind} ${layout} ${N} turns: rewind to turn ${back}: ${took} ms (moved: ${r.moved}); next call ${ms(a)} ms`);
	await cm.rewind(t); // back onto the full branch for the next round
}
await cm.close();
rmSync(dir, { recursive: true, force: true });
