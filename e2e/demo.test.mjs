// The demo a person reads first (scripts/pi/demo.mjs, run by scripts/demo.sh): a real pi session, scripted model,
// offline, on both pi lines. It must print one row per model call (what came in, model saw vs pi alone, what
// collapsed), the total, why the first calls cost more, and every term it uses.
// Run: node --test e2e/demo.test.mjs
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { PI_LINES, REPO, missingTools } from "./fixtures/scm-pi.mjs";

const run = (line) =>
	new Promise((resolve) => {
		execFile(process.execPath, [join(REPO, "scripts/pi/demo.mjs"), "--line", line], { cwd: REPO, timeout: 180000, maxBuffer: 16 << 20 }, (error, stdout, stderr) =>
			resolve({ status: error ? (error.code ?? 1) : 0, stdout, stderr }),
		);
	});

for (const line of PI_LINES) {
	const missing = missingTools(line);
	describe(`pi ${line}: demo`, () => {
		it("prints a per-call table, the total, the first calls' overhead and its terms", { skip: missing ? `pi ${line} not set up (${missing})` : false }, async () => {
			const r = await run(line);
			assert.equal(r.status, 0, r.stderr);
			const out = r.stdout;
			const calls = Number(/· (\d+) model calls ·/.exec(out)?.[1]);
			assert.ok(calls >= 5, out);
			const lines = out.split("\n");
			const head = lines.findIndex((l) => /^CALL\s+AFTER\s+MODEL SAW\s+PI ALONE\s+DIFF\s+COLLAPSED AT THIS CALL$/.test(l));
			assert.ok(head >= 0, out);
			const rows = lines.slice(head + 1, head + 1 + calls);
			rows.forEach((row, i) => assert.match(row, new RegExp(`^\\s*${i}\\s{2}\\S.*\\s\\d+ tok\\s+\\d+ tok\\s+[+-]\\d+%`), row));
			assert.match(rows[0], /^\s*0\s+the prompt\s/);
			assert.match(rows[1], /^\s*1\s+bash\s/);
			// The demo's thresholds make at least one output collapse to a ref.
			assert.ok(rows.some((row) => /\[t\d+ · \d+ lines?\]/.test(row)), rows.join("\n"));
			assert.match(lines[head + 1 + calls], /^\s*all\s+\d+ tok\s+\d+ tok\s+[+-]\d+%$/);
			assert.match(out, /Why the first calls cost more than pi alone: every call starts with the product's header \(≈ \d+ tok/);
			for (const term of ["tok", "MODEL SAW", "PI ALONE", "AFTER", "header", "t1, t2, f1", "[t3 · 42 lines]", "collapse", "FILES"]) {
				assert.ok(out.includes(`\n  ${term} `), `term ${term} not explained`);
			}
			assert.match(out, /docs\/design\.md, "Glossary"/);
			// No per-message listing unless asked for.
			assert.doesNotMatch(out, /── call 0/);
		});
	});
}
