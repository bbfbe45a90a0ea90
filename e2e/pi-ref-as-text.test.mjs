// A ref is not file text (design §5), in a real pi agent loop (scripted faux model, embedded store, offline),
// both pi lines, default cache layout: a `write` whose content is a ref the model was shown (`[t1 · 3 lines]`,
// its read of the file) is refused before it runs — the file keeps its text and the model reads why — and the
// write of the text itself then goes through.
// Run: node --test e2e/   (needs scripts/pi/setup.sh and a built addon)
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { PI_LINES, tempBase, workspace, runScm, missingTools, failInfo, call, step, refFor, userVisibleResults, resultOf, toolCalls, assertToolResultsPaired } from "./fixtures/scm-pi.mjs";

const BASE = tempBase("pi-ref-as-text");
const TEXT = "alpha line of the file\nbeta line of the file\ngamma line of the file";

for (const line of PI_LINES) {
	const missing = missingTools(line);
	const opt = { skip: missing ? `pi ${line} not set up (${missing})` : false };

	describe(`pi ${line}: a ref is not file text (cache layout)`, () => {
		it("a write of a ref the model was shown is refused; the file keeps its text", opt, async () => {
			const ws = workspace(BASE, { "a.txt": TEXT });
			const ref = refFor("t1", TEXT);
			const fixed = TEXT.replace("beta", "BETA");
			const r = await runScm({
				line, ...ws,
				script: [step(call("read", { path: "a.txt" })), step(call("write", { path: "a.txt", content: ref })), step(call("write", { path: "a.txt", content: fixed })), "done"],
				prompt: "rewrite a.txt",
			});
			assert.equal(r.exitCode, 0, failInfo(r));
			for (const c of r.captures) assertToolResultsPaired(c);
			const [read, refused, written] = userVisibleResults(r);
			assert.equal(read.isError, false, JSON.stringify(read));
			assert.equal(refused.isError, true, JSON.stringify(refused));
			assert.match(refused.text, /A ref is not file text/);
			assert.ok(refused.text.includes(ref) && refused.text.includes("activate(t1)"), refused.text);
			assert.equal(written.isError, false, JSON.stringify(written));
			assert.equal(readFileSync(join(ws.cwd, "a.txt"), "utf8"), fixed);
			// The model read the refusal at its next call.
			const next = r.captures[2];
			const w = toolCalls(next).find((c) => c.name === "write");
			assert.match(resultOf(next, w.id).text, /A ref is not file text/);
		});
	});
}
