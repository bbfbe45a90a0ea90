// pi's /tree (in-session branch navigation) with the package loaded, on both pi lines (offline,
// scripted faux model, embedded store). Neither line's RPC has a tree command, but both give command
// contexts ctx.navigateTree: the probe extension's `/probe-tree <entryId> [summarize]` calls it, sent
// as an RPC `prompt`. Entry ids: RPC `get_tree` on 1.5; the session file on 0.73 (no get_tree there).
// What is asserted is the design's cursor (docs/design.md §4): after the leaf moves, pi hands over a
// replaced array; the engine ingests exactly the messages it has not consumed and keeps what it has
// (memory-system-v0 §22.2: the engine is canonical). So the model keeps seeing the branch that was
// left, its final answer included (stored at agent_end, before any navigation), the new prompt comes
// after it once, and every tool output stays retrievable by id.
// Run: node --test --test-concurrency=1 e2e/pi-tree.test.mjs
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import {
	PI_LINES, tempBase, workspace, again, runScm, startScmRpc, missingTools, failInfo, convo, allText, count, call, step, messageText,
	header, toolCalls, toolResults, resultOf, refOf, assertToolResultsPaired,
} from "./fixtures/scm-pi.mjs";
import { PROBE_EXTENSION } from "./harness.mjs";

const BASE = tempBase("pi-tree");

const filler = (n) => Array.from({ length: n }, (_, i) => `line ${i + 1}: the quick brown fox jumps over the lazy dog, then naps by the river bank.\n`).join("");
const A = `ALPHA-TEXT\n${filler(4)}`;
const ROWS = "seq -f 'ROW %03g' 1 40";
const ROWS_OUT = Array.from({ length: 40 }, (_, i) => `ROW ${String(i + 1).padStart(3, "0")}`).join("\n") + "\n";
/** high 50 / low 10 (chars/4 units): every call with new output is an epoch that keeps only the newest output live. */
// Working files off: this test pins the collapse mechanics across branches.
const EAGER = { SCM_CACHE_HIGH: "50", SCM_CACHE_LOW: "10", SCM_CACHE_WORKING_CALLS: "0", SCM_CACHE_WORKING_EDITED_CALLS: "0" };
const TREE = { SCM_PROBE_TREE: "1" };

function checked(r) {
	assert.equal(r.exitCode, 0, failInfo(r));
	for (const c of r.captures) if (header(c)) assertToolResultsPaired(c, `${r.runDir} call ${c.call}`);
	return r;
}

/** `next` starts with exactly `prev`'s messages, followed by `tail` ([role, text]). */
function assertContinues(prev, next, tail, what) {
	const a = convo(prev);
	const b = convo(next);
	assert.deepEqual(b.slice(0, a.length), a, `${what}: the previous context is not a prefix`);
	assert.deepEqual(b.slice(a.length).map((m) => [m.role, messageText(m)]), tail, `${what}: unexpected messages after the previous context`);
}

/**
 * The session's entries in tree order: [{ id, type, role, text }], and the leaf. 1.5: RPC `get_tree`.
 * 0.73 has no get_tree/get_entries: the session file (JSONL, id/parentId) gives the same ids.
 */
async function treeEntries(rpc) {
	let roots, leafId;
	if (rpc.line === "0.73") {
		const { sessionFile } = (await rpc.send({ type: "get_state" })).data;
		const all = readFileSync(sessionFile, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l)).filter((e) => e.type !== "session");
		const nodes = new Map(all.map((e) => [e.id, { entry: e, children: [] }]));
		roots = [];
		for (const e of all) (e.parentId && nodes.has(e.parentId) ? nodes.get(e.parentId).children : roots).push(nodes.get(e.id));
		leafId = undefined; // not in the file: pi keeps it in memory
	} else {
		const r = await rpc.send({ type: "get_tree" });
		assert.equal(r.success, true, JSON.stringify(r));
		[roots, leafId] = [r.data.tree, r.data.leafId];
	}
	const out = [];
	const walk = (n) => {
		const m = n.entry.message;
		out.push({ id: n.entry.id, type: n.entry.type, role: m?.role, text: m ? messageText(m) : n.entry.summary ?? "" });
		for (const c of n.children) walk(c);
	};
	for (const n of roots) walk(n);
	return { entries: out, leafId };
}
const entryOf = (entries, role, text) => {
	const e = entries.find((x) => x.role === role && x.text === text);
	assert.ok(e, `no ${role} entry "${text}" in ${JSON.stringify(entries)}`);
	return e.id;
};

/** /tree through RPC; resolves once navigation is over (a handled command answers after its handler). */
async function navigate(rpc, targetId, summarize = false) {
	const resp = await rpc.send({ type: "prompt", message: `/probe-tree ${targetId}${summarize ? " summarize" : ""}` });
	// 0.73 answers a handled command without a disposition.
	assert.equal(resp.success, true, JSON.stringify(resp));
	if (rpc.line !== "0.73") assert.equal(resp.data?.disposition, "handled", JSON.stringify(resp));
	return resp;
}

/** Records that tell the user something went wrong: extension errors, or our notices above "info". */
const problems = (r) =>
	r.records.filter(
		(x) => x.type === "extension_error" || (x.type === "extension_ui_request" && x.method === "notify" && (/self-context-manager/.test(x.message ?? "") && x.notifyType !== "info")),
	);

for (const LINE of PI_LINES) {
	const missing = missingTools(LINE);
	const opt = { skip: missing ? `pi ${LINE} not set up (${missing})` : false };

	describe(`pi ${LINE}: /tree`, () => {

		it("navigate back, prompt, activate, navigate forward, resume: the prompt reaches the model once, nothing consumed comes twice, ids keep working, same session", opt, async () => {
			const ws = workspace(BASE, { "a.md": A });
			const rpc = await startScmRpc({
				line: LINE, ...ws, env: { ...EAGER, ...TREE }, extensions: [PROBE_EXTENSION],
				script: [
					step(call("read", { path: "a.md" })), "one", // first
					step(call("bash", { command: ROWS })), "two", // second (the branch that is left)
					step(call("activate", { id: "t1" })), step(call("activate", { id: "t2" })), "three", // third (new branch)
					"four", // fourth (back on the first branch)
				],
			});
			let r, state0, state1, tree1, tree2;
			try {
				await rpc.prompt("first");
				await rpc.prompt("second");
				state0 = (await rpc.send({ type: "get_state" })).data;
				tree1 = await treeEntries(rpc);
				// /tree onto the user message "second": pi moves the leaf to its parent ("one"), as the TUI does.
				await navigate(rpc, entryOf(tree1.entries, "user", "second"));
				state1 = (await rpc.send({ type: "get_state" })).data;
				await rpc.prompt("third");
				tree2 = await treeEntries(rpc);
				// And back onto the first branch's last answer (an assistant entry: the leaf becomes that entry).
				await navigate(rpc, entryOf(tree2.entries, "assistant", "two"));
				await rpc.prompt("fourth");
			} finally {
				r = checked(await rpc.close());
			}
			assert.deepEqual(problems(r), [], "an error or warning was shown");
			assert.equal(state1.sessionId, state0.sessionId, "/tree changed the session id");
			assert.equal(r.sessionId, state0.sessionId);
			const treeEvents = r.probe.filter((x) => x.ev === "session_tree");
			assert.deepEqual(
				treeEvents.map((x) => [x.sessionId, x.oldLeafId, x.newLeafId]),
				[
					[state0.sessionId, entryOf(tree1.entries, "assistant", "two"), entryOf(tree1.entries, "assistant", "one")],
					[state0.sessionId, entryOf(tree2.entries, "assistant", "three"), entryOf(tree1.entries, "assistant", "two")],
				],
			);
			// Navigation itself calls no model (no summary asked for).
			assert.equal(r.captures.length, 8, `model calls: ${r.captures.map((c) => c.step)}`);
			const [, , , second2, third1, third2, third3, fourth1] = r.captures;

			// The first call on the new branch: the engine's previous context, the left branch's final
			// answer (stored at agent_end: the engine is canonical, nothing is lost), the new prompt, once each.
			assertContinues(second2, third1, [["assistant", "two"], ["user", "third"]], "after /tree");
			for (const t of ["first", "second", "third"]) assert.equal(convo(third1).filter((m) => m.role === "user" && messageText(m) === t).length, 1, `prompt "${t}" not exactly once`);
			assert.equal(count(allText(third1), "two"), 1, "the left branch's final answer is not shown once");
			assert.equal(count(allText(third1), "ROW 001"), 1, "the left branch's bash output is not shown once");
			// t1 (read of a.md) collapsed when the bash output arrived; t2 is the newest output.
			assert.equal(refOf(resultOf(third1, "t1").text)?.id, "t1");
			assert.equal(resultOf(third1, "t2").text, ROWS_OUT);

			// Ids keep working across the switch, and numbering continues (no alias is reused on the new branch).
			assert.deepEqual(toolCalls(third3).map((c) => [c.id, c.name]), [["t1", "read"], ["t2", "bash"], ["t3", "activate"], ["t4", "activate"]]);
			assert.equal(resultOf(third2, "t3").text, `t1 read a.md\n${A}`, "activate t1 did not show the read's output");
			assert.equal(resultOf(third3, "t4").text, `t2 bash ${ROWS}\n${JSON.stringify({ command: ROWS })}\n${ROWS_OUT}`, "activate t2 (output of the branch that was left) did not show it");
			// Each output once: the epoch that t4 started collapsed t3.
			assert.deepEqual(toolResults(third3).map((x) => [x.toolCallId, x.ref ? x.text : "live"]), [["t1", "[t1 · 6 lines]"], ["t2", "[t2 · 41 lines]"], ["t3", "[t3 · 7 lines]"], ["t4", "live"]]);
			assert.equal(count(allText(third3), "ROW 001"), 1);

			// Back on the first branch: the second branch's final answer ("three", stored when its run ended)
			// and the new prompt follow what the engine already had; "two" (consumed before) does not come again.
			assertContinues(third3, fourth1, [["assistant", "three"], ["user", "fourth"]], "after /tree back");
			for (const t of ["first", "second", "third", "fourth"]) assert.equal(convo(fourth1).filter((m) => m.role === "user" && messageText(m) === t).length, 1, `prompt "${t}" not exactly once`);
			for (const t of ["two", "three"]) assert.equal(convo(fourth1).filter((m) => m.role === "assistant" && messageText(m) === t).length, 1, `answer "${t}" not exactly once`);

			// Resume after the switches: pi replays the current branch; the engine re-ingests nothing.
			const resumed = checked(await runScm({ line: LINE, ...again(ws), env: EAGER, sessionId: r.sessionId, script: ["five"], prompt: "fifth" }));
			assert.equal(resumed.sessionId, r.sessionId);
			assertContinues(fourth1, resumed.captures[0], [["assistant", "four"], ["user", "fifth"]], "resume after /tree");
			// Both branches are in pi's one session file.
			const entries = readFileSync(r.sessionFile, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
			assert.deepEqual(entries.filter((e) => e.type === "session").map((e) => e.id), [r.sessionId]);
		});

		it("spec layout: the same cursor; the pool and active set carry over, the chat gets the left answer and the new prompt once", opt, async () => {
			const ws = workspace(BASE, { "a.md": "ALPHA-TEXT\n" });
			const rpc = await startScmRpc({
				line: LINE, ...ws, env: { SCM_LAYOUT: "spec", ...TREE }, extensions: [PROBE_EXTENSION],
				script: [step(call("read", { path: "a.md" })), "one", step(call("bash", { command: ROWS })), "two", "three"],
			});
			let r;
			try {
				await rpc.prompt("first");
				await rpc.prompt("second");
				await navigate(rpc, entryOf((await treeEntries(rpc)).entries, "user", "second"));
				await rpc.prompt("third");
			} finally {
				r = checked(await rpc.close());
			}
			assert.deepEqual(problems(r), [], "an error or warning was shown");
			assert.equal(r.captures.length, 5);
			const [, , , second2, third1] = r.captures;
			const isState = (m) => m.role === "user" && /^(METADATA_POOL|ACTIVE_CONTENT id=)/.test(messageText(m));
			const chat = (c) => convo(c).filter((m) => !isState(m));
			const state = (c) => convo(c).filter(isState).map(messageText);
			assert.deepEqual(chat(third1).slice(0, chat(second2).length), chat(second2));
			assert.deepEqual(chat(third1).slice(chat(second2).length).map((m) => [m.role, messageText(m)]), [["assistant", "two"], ["user", "third"]]);
			assert.deepEqual(state(third1), state(second2), "the pool or active set changed across /tree");
			assert.equal(count(allText(third1), "ALPHA-TEXT"), 1);
		});

		it("/tree with a branch summary: the summary call goes around the package; the summary reaches the model once, after the kept branch", opt, async () => {
			const ws = workspace(BASE, { "a.md": A });
			const rpc = await startScmRpc({
				line: LINE, ...ws, env: TREE, extensions: [PROBE_EXTENSION],
				script: [step(call("read", { path: "a.md" })), "one", step(call("bash", { command: ROWS })), "two", "SUMMARY-TEXT of the branch", "three"],
			});
			let r, tree;
			try {
				await rpc.prompt("first");
				await rpc.prompt("second");
				tree = await treeEntries(rpc);
				await navigate(rpc, entryOf(tree.entries, "user", "second"), true);
				await rpc.prompt("third");
			} finally {
				r = checked(await rpc.close());
			}
			assert.deepEqual(problems(r), [], "an error or warning was shown");
			assert.equal(r.captures.length, 6);
			const [, , , second2, summaryCall, third1] = r.captures;
			// pi's summariser calls the model directly (no context hook): pi's own messages, no header, no tools.
			assert.equal(summaryCall.step, 4);
			assert.equal(header(summaryCall), null);
			assert.deepEqual(summaryCall.tools, []);
			assert.match(messageText(convo(summaryCall)[0]), /^<conversation>\n\[Assistant tool calls\]: bash\(command="seq -f 'ROW %03g' 1 40"\)\n\n\[Assistant\]: two\n<\/conversation>/);
			const ev = r.probe.find((x) => x.ev === "session_tree");
			assert.equal(ev.summaryEntry?.type, "branch_summary");
			// pi's context now has the summary (role branchSummary, a user message for the model) before the
			// prompt; the left branch's final answer was stored before it.
			const [, summary] = convo(third1).slice(convo(second2).length);
			assertContinues(second2, third1, [["assistant", "two"], ["user", messageText(summary)], ["user", "third"]], "after /tree with summary");
			assert.match(messageText(summary), /^The following is a summary of a branch that this conversation came back from:\n\n<summary>\n[\s\S]*SUMMARY-TEXT of the branch[\s\S]*<\/summary>$/);
			assert.equal(count(allText(third1), "SUMMARY-TEXT"), 1);
			assert.equal(count(allText(third1), "third"), 1);
			assert.equal(toolResults(third1).length, 2);
		});
	});
}
