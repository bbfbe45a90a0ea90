// pi's /tree (in-session branch navigation) with the package loaded, on both pi lines (offline,
// scripted faux model, embedded store). Neither line's RPC has a tree command, but both give command
// contexts ctx.navigateTree: the probe extension's `/probe-tree <entryId> [summarize]` calls it, sent
// as an RPC `prompt`. Entry ids: RPC `get_tree` on 1.5; the session file on 0.73 (no get_tree there).
// What is asserted is what a pi user means by /tree (issue 11 item 4, docs/design.md §7 "Branches"):
// the session moves to the context commit the new branch position maps to, so the model sees exactly
// the current branch (plus pi's branch summary when pi makes one), never the abandoned one; two
// branches from one commit are independent; going back to the first branch shows it as it was.
// Run: node --test --test-concurrency=1 e2e/pi-tree.test.mjs
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import {
	PI_LINES, tempBase, workspace, again, runScm, startScmRpc, missingTools, failInfo, convo, allText, count, countWord, call, step, messageText,
	header, toolCalls, toolResults, resultOf, assertToolResultsPaired,
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

/** `next` starts with exactly `prev`'s messages (its last `drop` left out), followed by `tail` ([role, text]). */
function assertContinues(prev, next, tail, what, drop = 0) {
	const a = convo(prev).slice(0, convo(prev).length - drop);
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

/** pi's /fork at the user message `text`: a new session holding what came before it. */
async function forkAt(rpc, text) {
	const forkable = await rpc.send({ type: "get_fork_messages" });
	const fork = await rpc.send({ type: "fork", entryId: forkable.data.messages.find((m) => m.text === text).entryId });
	assert.equal(fork.data.cancelled, false, JSON.stringify(fork));
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

		it("navigate back, prompt, navigate forward, resume: the model sees exactly the current branch, never the one left", opt, async () => {
			const ws = workspace(BASE, { "a.md": A });
			const rpc = await startScmRpc({
				line: LINE, ...ws, env: { ...EAGER, ...TREE }, extensions: [PROBE_EXTENSION],
				script: [
					step(call("read", { path: "a.md" })), "one", // first
					step(call("bash", { command: ROWS })), "two", // second (the branch that is left)
					step(call("activate", { id: "t1" })), "three", // third (new branch from "one")
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
			assert.equal(r.captures.length, 7, `model calls: ${r.captures.map((c) => c.step)}`);
			const [, , second1, second2, third1, third2, fourth1] = r.captures;

			// The first call on the new branch: exactly what the model saw when "second" was asked, with
			// "third" in its place. Nothing of the branch that was left: not its prompt, tool output or answer.
			assertContinues(second1, third1, [["user", "third"]], "after /tree", 1);
			for (const t of ["second", "two", "ROW 001", "seq -f"]) assert.equal(countWord(allText(third1), t), 0, `"${t}" of the left branch reached the model`);
			assert.equal(count(allText(third1), "ALPHA-TEXT"), 1);
			// Ids on the new branch continue from the commit: the activate call is t2 there (t2 was the
			// left branch's bash), and t1 still names the read of a.md.
			assert.deepEqual(toolCalls(third2).map((c) => [c.id, c.name]), [["t1", "read"], ["t2", "activate"]]);
			// On this branch the read's output never collapsed (the bash that collapsed it is on the other branch).
			assert.equal(resultOf(third2, "t1").text, A);
			assert.equal(resultOf(third2, "t2").text, "[t1 is shown above]");
			for (const t of ["second", "two", "ROW 001"]) assert.equal(countWord(allText(third2), t), 0, `"${t}" of the left branch reached the model`);

			// Back on the first branch: exactly its last context, its answer, the new prompt. Nothing of
			// the second branch (its prompt, activate call or answer).
			assertContinues(second2, fourth1, [["assistant", "two"], ["user", "fourth"]], "after /tree back");
			for (const t of ["third", "three"]) assert.equal(countWord(allText(fourth1), t), 0, `"${t}" of the other branch reached the model`);
			assert.equal(count(allText(fourth1), "ROW 001"), 1);
			assert.equal(resultOf(fourth1, "t2").text, ROWS_OUT, "the first branch's bash output is not as it was");

			// Resume after the switches: pi replays the current branch; the engine re-ingests nothing.
			const resumed = checked(await runScm({ line: LINE, ...again(ws), env: EAGER, sessionId: r.sessionId, script: ["five"], prompt: "fifth" }));
			assert.equal(resumed.sessionId, r.sessionId);
			assertContinues(fourth1, resumed.captures[0], [["assistant", "four"], ["user", "fifth"]], "resume after /tree");
			// Both branches are in pi's one session file.
			const entries = readFileSync(r.sessionFile, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
			assert.deepEqual(entries.filter((e) => e.type === "session").map((e) => e.id), [r.sessionId]);
		});

		it("spec layout: the chat, pool and active set are the commit's; nothing of the left branch", opt, async () => {
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
			const [, , second1, , third1] = r.captures;
			const isState = (m) => m.role === "user" && /^(METADATA_POOL|ACTIVE_CONTENT id=)/.test(messageText(m));
			const chat = (c) => convo(c).filter((m) => !isState(m));
			const state = (c) => convo(c).filter(isState).map(messageText);
			assert.deepEqual(chat(third1).slice(0, -1), chat(second1).slice(0, -1));
			assert.deepEqual(chat(third1).slice(-1).map((m) => [m.role, messageText(m)]), [["user", "third"]]);
			assert.deepEqual(state(third1), state(second1), "the pool or active set is not the commit's");
			for (const t of ["second", "two", "ROW 001"]) assert.equal(countWord(allText(third1), t), 0, `"${t}" of the left branch reached the model`);
			assert.equal(count(allText(third1), "ALPHA-TEXT"), 1);
		});

		it("/tree onto the first prompt: the session goes back to its root; the model sees only the new prompt", opt, async () => {
			const ws = workspace(BASE, { "a.md": A });
			const rpc = await startScmRpc({
				line: LINE, ...ws, env: TREE, extensions: [PROBE_EXTENSION],
				script: [step(call("read", { path: "a.md" })), "one", "two", "three"],
			});
			let r;
			try {
				await rpc.prompt("first");
				await rpc.prompt("second");
				await navigate(rpc, entryOf((await treeEntries(rpc)).entries, "user", "first"));
				await rpc.prompt("third");
			} finally {
				r = checked(await rpc.close());
			}
			assert.deepEqual(problems(r), [], "an error or warning was shown");
			assert.equal(r.captures.length, 4);
			const third = r.captures[3];
			// The engine's own intro (cache layout) and the prompt; no message of the branch left.
			assert.deepEqual(convo(third).filter((m) => m.role !== "user" || !messageText(m).startsWith("Context manager:")).map((m) => [m.role, messageText(m)]), [["user", "third"]]);
			for (const t of ["first", "second", "two", "ALPHA-TEXT", "a.md"]) assert.equal(countWord(convo(third).map(messageText).join("\n"), t), 0, `"${t}" of the branch left reached the model`);
		});

		it("/tree in a forked session back onto the first prompt, before the fork point: the model sees only the new prompt", opt, async () => {
			const ws = workspace(BASE, { "a.md": A });
			const rpc = await startScmRpc({
				line: LINE, ...ws, env: TREE, extensions: [PROBE_EXTENSION],
				script: [step(call("read", { path: "a.md" })), "one", step(call("bash", { command: ROWS })), "two", "three", "four"],
			});
			let r;
			try {
				await rpc.prompt("first");
				await rpc.prompt("second");
				// /fork at "second": a new session holding "first" and its turn; the engine seeds it from the parent.
				await forkAt(rpc, "second");
				await rpc.prompt("third");
				// In the fork, /tree onto "first": before everything the fork was seeded with.
				await navigate(rpc, entryOf((await treeEntries(rpc)).entries, "user", "first"));
				await rpc.prompt("fourth");
			} finally {
				r = checked(await rpc.close());
			}
			assert.deepEqual(problems(r), [], "an error or warning was shown");
			assert.equal(r.captures.length, 6);
			const third = r.captures[4];
			assert.ok(allText(third).includes("ALPHA-TEXT"), "the fork lost its parent's read");
			const fourth = r.captures[5];
			assert.deepEqual(convo(fourth).filter((m) => m.role !== "user" || !messageText(m).startsWith("Context manager:")).map((m) => [m.role, messageText(m)]), [["user", "fourth"]]);
			for (const t of ["first", "second", "third", "three", "ALPHA-TEXT", "ROW 001"]) assert.equal(countWord(convo(fourth).map(messageText).join("\n"), t), 0, `"${t}" of the branch left reached the model`);
		});

		it("/tree in a forked session back onto the fork point: the session as it was forked, the parent's pin kept", opt, async () => {
			const ws = workspace(BASE, { "a.md": A });
			const COLS = "seq -f 'COL %03g' 1 40";
			const rpc = await startScmRpc({
				line: LINE, ...ws, env: { ...EAGER, ...TREE }, extensions: [PROBE_EXTENSION],
				script: [
					step(call("read", { path: "a.md" })), step(call("pin", { id: "t1" })), "one",
					step(call("bash", { command: ROWS })), "two",
					step(call("bash", { command: ROWS })), "three",
					step(call("bash", { command: COLS })), "four",
				],
			});
			let r;
			try {
				await rpc.prompt("first");
				await rpc.prompt("second");
				// /fork at "second": the fork holds "first" and its turn (the read, its pin).
				await forkAt(rpc, "second");
				await rpc.prompt("third");
				// /tree onto "third": the leaf goes back to the fork point, the end of "first"'s turn.
				await navigate(rpc, entryOf((await treeEntries(rpc)).entries, "user", "third"));
				await rpc.prompt("fourth");
			} finally {
				r = checked(await rpc.close());
			}
			assert.deepEqual(problems(r), [], "an error or warning was shown");
			assert.equal(r.captures.length, 9);
			// Each output arriving is an epoch keeping only the newest live: the pinned read stays shown,
			// in the fork (seeded with the pin) and after going back to where it was forked.
			for (const k of [5, 6, 7, 8]) assert.equal(count(allText(r.captures[k]), "ALPHA-TEXT"), 1, `call ${k + 1}: the pinned read is not shown once`);
			const four = r.captures[8];
			assert.ok(allText(four).includes("COL 001"));
			for (const t of ["third", "three", "ROW 001"]) assert.equal(countWord(convo(four).map(messageText).join("\n"), t), 0, `"${t}" of the branch left reached the model`);
		});

		it("/tree with a branch summary: the summary call goes around the package; the model sees the kept branch, pi's summary, the prompt", opt, async () => {
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
			const [, , second1, , summaryCall, third1] = r.captures;
			// pi's summariser calls the model directly (no context hook): pi's own messages, no header, no tools.
			assert.equal(summaryCall.step, 4);
			assert.equal(header(summaryCall), null);
			assert.deepEqual(summaryCall.tools, []);
			assert.match(messageText(convo(summaryCall)[0]), /^<conversation>\n\[Assistant tool calls\]: bash\(command="seq -f 'ROW %03g' 1 40"\)\n\n\[Assistant\]: two\n<\/conversation>/);
			const ev = r.probe.find((x) => x.ev === "session_tree");
			assert.equal(ev.summaryEntry?.type, "branch_summary");
			// The kept branch as it was at "one", pi's summary (role branchSummary, a user message for the
			// model), the prompt; of the left branch only what the summary says.
			const summary = convo(third1).at(-2);
			assertContinues(second1, third1, [["user", messageText(summary)], ["user", "third"]], "after /tree with summary", 1);
			assert.match(messageText(summary), /^The following is a summary of a branch that this conversation came back from:\n\n<summary>\n[\s\S]*SUMMARY-TEXT of the branch[\s\S]*<\/summary>$/);
			assert.equal(count(allText(third1), "SUMMARY-TEXT"), 1);
			for (const t of ["second", "ROW 001"]) assert.equal(countWord(allText(third1), t), 0, `"${t}" of the left branch reached the model`);
			assert.equal(toolResults(third1).length, 1);
		});
	});
}
