// Working copies in a real pi agent loop (scripted faux model, embedded store, offline), both pi
// lines, default cache layout with small thresholds: a file the agent edits from memory — its edit
// quotes a line the context no longer shows — is shown once as it is now (`FILE f1 … as of t…`),
// and the old text is nowhere (issue 10, design §5 rule 6).
// Run: node --test e2e/   (needs scripts/pi/setup.sh and a built addon)
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { PI_LINES, tempBase, workspace, runScm, missingTools, failInfo, convo, allText, count, call, step, messageText, assertToolResultsPaired, userVisibleResults } from "./fixtures/scm-pi.mjs";

const BASE = tempBase("pi-working-copy");

/** A plan of `n` checklist lines, ~60 chars each. */
const plan = (n) => Array.from({ length: n }, (_, i) => `- [ ] step ${String(i).padStart(3, "0")}: do the thing number ${i} well\n`).join("");
const seqCmd = (tag) => `seq -f '${tag} %03g' 1 40`;
/** The plan read whole, then three calls of other work: its read has collapsed by then. */
const readThenCollapse = () => [step(call("read", { path: "plan.md" })), ...["A", "B", "C"].map((t) => step(call("bash", { command: seqCmd(t) })))];
// Small thresholds (chars/4 units): epochs every few calls; the plan's read (~600 units) is over
// the views' budget, its copy within the copies'; no fold.
const ENV = {
	SCM_CACHE_HIGH: "40",
	SCM_CACHE_LOW: "10",
	SCM_CACHE_FOLD: "0",
	SCM_CACHE_WORKING_UNITS: "50",
	SCM_CACHE_WORKING_COPY_UNITS: "4000",
};

for (const line of PI_LINES) {
	const missing = missingTools(line);
	const opt = { skip: missing ? `pi ${line} not set up (${missing})` : false };

	describe(`pi ${line}: working copies (cache layout)`, () => {
		it("a file edited from memory is shown once as it is now; its old text is gone", opt, async () => {
			const v1 = plan(40);
			const ws = workspace(BASE, { "plan.md": v1 });
			const oldLine = "- [ ] step 030: do the thing number 30 well";
			const newLine = oldLine.replace("- [ ]", "- [x]");
			const r = await runScm({
				line, ...ws,
				env: ENV,
				script: [
					...readThenCollapse(),
					// Quotes a line of the read, collapsed by now.
					step(call("edit", { path: "plan.md", oldText: oldLine, newText: newLine })),
					step(call("bash", { command: seqCmd("D") })),
					step(call("bash", { command: seqCmd("E") })),
					step(call("bash", { command: seqCmd("F") })),
					"done",
				],
				prompt: "follow the plan",
			});
			assert.equal(r.exitCode, 0, failInfo(r));
			for (const c of r.captures) assertToolResultsPaired(c);
			assert.ok(userVisibleResults(r).every((x) => !x.isError), JSON.stringify(userVisibleResults(r)));
			const v2 = v1.replace(oldLine, newLine);
			assert.equal(readFileSync(join(ws.cwd, "plan.md"), "utf8"), v2);
			// Before the edit the plan's text had collapsed: the edit quoted it from memory.
			const beforeEdit = r.captures[4];
			assert.equal(count(allText(beforeEdit), "step 031: do the thing"), 0, "collapsed before the edit");
			// The last call shows the plan once, as it is now.
			const last = r.captures.at(-1);
			const copies = convo(last).filter((m) => m.role === "user" && /^FILE f1 plan\.md as of t\d+ /.test(messageText(m)));
			assert.equal(copies.length, 1, JSON.stringify(convo(last).map(messageText)));
			assert.ok(messageText(copies[0]).includes(newLine), "the current version");
			assert.equal(count(allText(last), "step 031: do the thing"), 1, "once");
			assert.equal(count(allText(last), oldLine), 1, "the old line only as the edit's (live) old text");
		});

		it("an edit that fails on text the model cannot see brings the file as it is now at the next call", opt, async () => {
			const v1 = plan(40);
			const ws = workspace(BASE, { "plan.md": v1 });
			const wrong = "- [ ] step 030: do the thing number 30 badly";
			const r = await runScm({
				line, ...ws,
				env: ENV,
				script: [
					...readThenCollapse(),
					// Misremembers a line of the read, collapsed by now: pi's edit fails.
					step(call("edit", { path: "plan.md", oldText: wrong, newText: wrong.replace("- [ ]", "- [x]") })),
					"done",
				],
				prompt: "follow the plan",
			});
			assert.equal(r.exitCode, 0, failInfo(r));
			for (const c of r.captures) assertToolResultsPaired(c);
			assert.ok(userVisibleResults(r).some((x) => x.isError), "the edit failed");
			const [before, after] = [r.captures[4], r.captures[5]];
			assert.equal(count(allText(before), "step 031: do the thing"), 0, "collapsed before the edit");
			// The call after the failed edit ends with the file as it is (an epoch may run at this
			// call with these thresholds; the cached prefix is asserted in tests/working_copies.rs).
			const now = convo(after).map(messageText);
			const copy = now.at(-1);
			assert.match(copy, /^FILE f1 plan\.md as of t\d+ /, JSON.stringify(now));
			assert.ok(copy.includes("- [ ] step 030: do the thing number 30 well"), "the file as it is");
			assert.equal(count(allText(after), "step 031: do the thing"), 1, "once");
		});
	});
}
