// The pi package across pi's session lifecycle, on both pi lines (offline, scripted faux model,
// embedded store), in the default cache layout: resume (--session-id / -c), fork (CLI, both layouts;
// RPC, spec layout), pi's compaction, external edits picked up by the watcher, the /context command
// and the status-line gauge. Every model call of every run keeps one tool result per tool call.
// Run: node --test e2e/
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync, readFileSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { runPi } from "./harness.mjs";
import {
	PI_LINES, tempBase, workspace, runScm, startScmRpc, missingTools, failInfo, convo, allText, count, pool, active,
	poolFile, activeFile, again, call, step, messageText, header, toolCalls, toolResults, resultOf, refFor, filesListed,
	fileListed, userVisibleResults, assertToolResultsPaired, waitForIndexed, storedChat,
} from "./fixtures/scm-pi.mjs";

const BASE = tempBase("pi-sessions");

/** Chat part of a call (spec layout: no pool message, no active blocks). */
const chat = (c) => convo(c).filter((m) => !/^(METADATA_POOL|ACTIVE_CONTENT id=)/.test(m.role === "user" ? messageText(m) : ""));
const poolText = (c) => messageText(convo(c).find((m) => m.role === "user" && messageText(m).startsWith("METADATA_POOL")));

/** The fork tests in the spec layout read its pool and active blocks. */
const SPEC = { SCM_LAYOUT: "spec" };

/** ~100 chars a line: file bodies big enough to collapse (results under 200 chars never do). */
const filler = (n) => Array.from({ length: n }, (_, i) => `line ${i + 1}: the quick brown fox jumps over the lazy dog, then naps by the river bank.\n`).join("");
/** A file whose marker occurs once, followed by ~400 chars of filler (~90 chars/4 units). */
const doc = (marker) => `${marker}\n${filler(4)}`;
/** A bash command whose ~400-char output repeats `tag` 40 times. */
const seqCmd = (tag) => `seq -f '${tag} %03g' 1 40`;
/** Cache policy via the environment (chars/4 units). */
// Working files off: these tests pin the collapse mechanics (working files have their own tests in the core).
const NO_WORKING = { SCM_CACHE_WORKING_CALLS: "0", SCM_CACHE_WORKING_EDITED_CALLS: "0" };
const cache = (high, low) => ({ SCM_CACHE_HIGH: String(high), SCM_CACHE_LOW: String(low), ...NO_WORKING });

/** A finished run (or closed RPC session) whose every model call keeps a result for each tool call. */
function checked(r) {
	assert.equal(r.exitCode, 0, failInfo(r));
	for (const c of r.captures) assertToolResultsPaired(c, `${r.runDir} call ${c.call}`);
	return r;
}
const scm = async (opts) => checked(await runScm(opts));

/**
 * `next` (the first call of a resumed/continued/forked session) starts with exactly `prev` (the
 * last call before it) followed by `tail` ([role, text] of the messages in between): nothing was
 * re-ingested, re-activated or renumbered, and the provider's prompt cache still holds.
 */
function assertContinues(prev, next, tail, what) {
	const a = convo(prev);
	const b = convo(next);
	assert.deepEqual(b.slice(0, a.length), a, `${what}: the previous context is not a prefix`);
	assert.deepEqual(b.slice(a.length).map((m) => [m.role, messageText(m)]), tail, `${what}: unexpected messages after the previous context`);
}

/** Cache-layout parent: reads a.md and b.md, deactivates b.md, then a bash output forces the epoch that collapses it. */
const A = doc("ALPHA-TEXT");
const B = doc("BRAVO-TEXT");
const CACHE_PARENT = cache(200, 400); // two reads (~90 units each) stay under high; the bash output (~100) pushes past it
async function cacheParentRun(line, ws) {
	const r = await scm({
		line, ...ws, env: CACHE_PARENT,
		script: [
			step(call("read", { path: "a.md" }), call("read", { path: "b.md" })),
			step(call("deactivate", { id: "t2" })),
			step(call("bash", { command: seqCmd("ROW") })),
			"parent done",
		],
		prompt: "parent",
	});
	const last = r.captures.at(-1);
	assert.ok(header(last), "no header message");
	assert.deepEqual(toolResults(last).map((x) => [x.toolCallId, x.ref ? x.text : "live"]), [
		["t1", "live"], ["t2", refFor("t2", B)], ["t3", "live"], ["t4", "live"],
	]);
	assert.equal(resultOf(last, "t1").text, A);
	assert.equal(count(allText(last), "BRAVO-TEXT"), 0);
	return r;
}

/** Spec-layout parent used by the fork test: reads a.md and b.md, then deactivates b.md. */
async function parentRun(line, ws, env) {
	const r = await scm({
		line, ...ws, env,
		script: [step(call("read", { path: "a.md" }), call("read", { path: "b.md" })), step(call("deactivate", { id: "b.md" })), "parent done"],
		prompt: "parent",
	});
	assert.ok(activeFile(r.captures.at(-1), "a.md") && !activeFile(r.captures.at(-1), "b.md"));
	return r;
}

/** Spec layout: the state a continued session must show first: the parent's last pool, a.md active only, no new objects. */
function assertSameState(parentLast, childFirst, what) {
	assert.equal(poolText(childFirst), poolText(parentLast), `${what}: the pool changed (re-ingested or lost)`);
	assert.deepEqual(active(childFirst).map((b) => b.id), active(parentLast).map((b) => b.id), `${what}: active set differs`);
	assert.equal(count(allText(childFirst), "ALPHA-TEXT"), 1, `${what}: a.md not shown exactly once`);
	assert.equal(count(allText(childFirst), "BRAVO-TEXT"), 0, `${what}: the deactivated b.md came back`);
	// The chat the parent's model saw is a prefix of what the continued session shows (cache-stable).
	const before = chat(parentLast);
	assert.deepEqual(chat(childFirst).slice(0, before.length), before, `${what}: chat prefix changed`);
}

for (const line of PI_LINES) {
	const missing = missingTools(line);
	const opt = { skip: missing ? `pi ${line} not set up (${missing})` : false };

	describe(`pi ${line}: sessions`, () => {
		it("resume by session id and by -c: the context continues byte for byte (same ids and refs, nothing re-ingested or re-activated)", opt, async () => {
			const ws = workspace(BASE, { "a.md": A, "b.md": B });
			const parent = await cacheParentRun(line, ws);
			const parentLast = parent.captures.at(-1);
			const resumed = await scm({ line, ...again(ws), env: CACHE_PARENT, sessionId: parent.sessionId, script: ["resumed"], prompt: "again" });
			assert.equal(resumed.sessionId, parent.sessionId);
			assertContinues(parentLast, resumed.captures[0], [["assistant", "parent done"], ["user", "again"]], "--session-id");

			// -c, and an activation by the f-id of the first run: the ids (t5 next, f2 for b.md) survived both resumes.
			const fb = fileListed(parentLast, "b.md");
			assert.ok(fb?.id, JSON.stringify(filesListed(parentLast)));
			const continued = await scm({ line, ...again(ws), env: CACHE_PARENT, continue: true, script: [step(call("activate", { id: fb.id })), "continued"], prompt: "and again" });
			assert.equal(continued.sessionId, parent.sessionId);
			const [first, afterActivate] = continued.captures;
			assertContinues(resumed.captures.at(-1), first, [["assistant", "resumed"], ["user", "and again"]], "-c");
			assert.equal(count(allText(first), "ALPHA-TEXT"), 1, "a.md shown again or lost");
			assert.equal(count(allText(first), "BRAVO-TEXT"), 0, "the collapsed b.md came back");
			assert.deepEqual(toolCalls(afterActivate).map((c) => c.id), ["t1", "t2", "t3", "t4", "t5"]);
			assert.equal(resultOf(afterActivate, "t5").text, `${fb.id} b.md\n${B}`);
			assert.equal(count(allText(afterActivate), "BRAVO-TEXT"), 1);
			assert.equal(header(afterActivate), header(parentLast), "the header changed across resumes");
		});

		it("quit after a run, both layouts: the run's final answer is in the stored chat before pi exits, once; a resume ingests it no second time", opt, async () => {
			for (const layout of ["cache", "spec"]) {
				const ws = workspace(BASE, { "a.md": A });
				const env = { SCM_LAYOUT: layout };
				// pi -p: one run, then pi shuts down; the last model call produced the answer.
				const r = await scm({ line, ...ws, env, script: [step(call("read", { path: "a.md" })), "FIRST-ANSWER"], prompt: "first" });
				assert.equal(r.captures.length, 2);
				const stored = await storedChat(ws.cwd, r.sessionId);
				assert.ok(stored, `${layout}: no chat:${r.sessionId} in the store`);
				assert.equal(count(stored, "FIRST-ANSWER"), 1, `${layout}: the final answer is not stored once: ${stored.slice(0, 2000)}`);
				const resumed = await scm({ line, ...again(ws), env, sessionId: r.sessionId, script: ["SECOND-ANSWER"], prompt: "second" });
				assert.equal(count(allText(resumed.captures[0]), "FIRST-ANSWER"), 1, `${layout}: the stored answer is not shown once after resume`);
				if (layout === "cache") assertContinues(r.captures.at(-1), resumed.captures[0], [["assistant", "FIRST-ANSWER"], ["user", "second"]], "resume after quit");
				else assert.deepEqual(chat(resumed.captures[0]).slice(-2).map((m) => [m.role, messageText(m)]), [["assistant", "FIRST-ANSWER"], ["user", "second"]]);
				const after = await storedChat(ws.cwd, r.sessionId);
				assert.equal(count(after, "FIRST-ANSWER"), 1, `${layout}: the answer was ingested again`);
				assert.equal(count(after, "SECOND-ANSWER"), 1, `${layout}: the resumed run's answer is not stored once`);
			}
		});

		it("a resume on a branch the store did not follow (pi went on without the package): the model sees pi's branch, never the stored one", opt, async () => {
			const ws = workspace(BASE, {});
			const one = await scm({ line, ...ws, script: ["ANSWER-ONE"], prompt: "PROMPT-ONE" });
			await scm({ line, ...again(ws), sessionId: one.sessionId, script: ["ANSWER-TWO"], prompt: "PROMPT-TWO" });
			// Meanwhile, outside the package (pi run without it, or a second pi on the same session), the user
			// went back to ANSWER-ONE and asked something else: pi's leaf is now that branch.
			const file = one.sessionFile;
			const entries = readFileSync(file, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
			const answerOne = entries.find((e) => e.type === "message" && e.message.role === "assistant" && messageText(e.message) === "ANSWER-ONE");
			const userOne = entries.find((e) => e.type === "message" && e.message.role === "user" && messageText(e.message) === "PROMPT-ONE");
			assert.ok(answerOne?.id && userOne, `no ANSWER-ONE entry with an id in ${file}`);
			const t = Date.now();
			const prompt = { ...userOne, id: "b1a2c3d4", parentId: answerOne.id, timestamp: new Date(t).toISOString(), message: { ...userOne.message, content: [{ type: "text", text: "PROMPT-BRANCH" }], timestamp: t } };
			const answer = { ...answerOne, id: "b1a2c3d5", parentId: prompt.id, timestamp: new Date(t + 1).toISOString(), message: { ...answerOne.message, content: [{ type: "text", text: "ANSWER-BRANCH" }], timestamp: t + 1 } };
			writeFileSync(file, readFileSync(file, "utf8") + `${JSON.stringify(prompt)}\n${JSON.stringify(answer)}\n`);
			const three = await scm({ line, ...again(ws), sessionId: one.sessionId, script: ["ANSWER-THREE"], prompt: "PROMPT-THREE" });
			const seen = convo(three.captures[0]).map((m) => [m.role, messageText(m)]).filter(([, text]) => /^(PROMPT|ANSWER)-/.test(text));
			assert.deepEqual(
				seen,
				[["user", "PROMPT-ONE"], ["assistant", "ANSWER-ONE"], ["user", "PROMPT-BRANCH"], ["assistant", "ANSWER-BRANCH"], ["user", "PROMPT-THREE"]],
				"the model did not see exactly pi's branch",
			);
		});

		it("two pi processes on one session: their writes never mix; a later resume sees exactly the branch pi resumes", opt, async () => {
			const ws = workspace(BASE, {});
			const one = await scm({ line, ...ws, script: ["ANSWER-ONE"], prompt: "PROMPT-ONE" });
			// A stays open (RPC) while B (a second pi, print mode) runs a turn on the same session.
			const a = await startScmRpc({ line, ...again(ws), sessionId: one.sessionId, script: ["ANSWER-A1", "ANSWER-A2"] });
			let ra;
			try {
				await a.prompt("PROMPT-A1");
				const b = await scm({ line, ...again(ws), sessionId: one.sessionId, script: ["ANSWER-B"], prompt: "PROMPT-B" });
				assert.equal(b.sessionId, one.sessionId);
				// A's next write finds B's: A stops writing (its model call still gets A's own conversation).
				await a.prompt("PROMPT-A2");
			} finally {
				ra = await a.close();
			}
			assert.equal(ra.exitCode, 0, failInfo(ra));
			const seenA = convo(ra.captures.at(-1)).map((m) => messageText(m)).filter((t) => /^(PROMPT|ANSWER)-/.test(t));
			assert.deepEqual(seenA, ["PROMPT-ONE", "ANSWER-ONE", "PROMPT-A1", "ANSWER-A1", "PROMPT-A2"], "A's model call");
			const stored = await storedChat(ws.cwd, one.sessionId);
			assert.equal(count(stored, "PROMPT-A2"), 0, "A's write after B's landed: the chat mixes both processes");
			// pi resumes its latest entries, A's branch: the model sees exactly that branch, nothing of B's.
			const c = await scm({ line, ...again(ws), sessionId: one.sessionId, script: ["ANSWER-C"], prompt: "PROMPT-C" });
			const seen = convo(c.captures[0]).map((m) => messageText(m)).filter((t) => /^(PROMPT|ANSWER)-/.test(t));
			assert.deepEqual(seen, ["PROMPT-ONE", "ANSWER-ONE", "PROMPT-A1", "ANSWER-A1", "PROMPT-A2", "ANSWER-A2", "PROMPT-C"]);
		});

		it("fork (--fork <file>), cache layout: the child's first context is the parent's context at the fork point plus its prompt", opt, async () => {
			const ws = workspace(BASE, { "a.md": A, "b.md": B });
			const parent = await cacheParentRun(line, ws);
			const child = await scm({ line, ...again(ws), env: CACHE_PARENT, fork: parent.sessionFile, script: [step(call("bash", { command: "echo child" })), "child"], prompt: "in the fork" });
			assert.notEqual(child.sessionId, parent.sessionId);
			assertContinues(parent.captures.at(-1), child.captures[0], [["assistant", "parent done"], ["user", "in the fork"]], "fork");
			// The child numbers on from the parent's aliases.
			assert.deepEqual(toolCalls(child.captures.at(-1)).map((c) => c.id), ["t1", "t2", "t3", "t4", "t5"]);
		});

		it("fork (--fork <file>), spec layout: the child starts from the parent's state", opt, async () => {
			const ws = workspace(BASE, { "a.md": "ALPHA-TEXT\n", "b.md": "BRAVO-TEXT\n" });
			const parent = await parentRun(line, ws, SPEC);
			const child = await scm({ line, ...again(ws), env: SPEC, fork: parent.sessionFile, script: ["child"], prompt: "in the fork" });
			assert.notEqual(child.sessionId, parent.sessionId);
			assertSameState(parent.captures.at(-1), child.captures[0], "fork");
			// Nothing of the copied transcript was ingested again: every object is the parent's.
			const own = (pool(child.captures[0]) ?? []).filter((e) => e.id.startsWith(`toolcall:${child.sessionId}:`));
			assert.deepEqual(own, [], "the child re-ingested the parent's tool results");
		});

		it("rpc fork at an earlier message, spec layout: session_start twice is harmless; the child has the state at the fork point", opt, async () => {
			const ws = workspace(BASE, { "a.md": "ALPHA-TEXT\n", "b.md": "BRAVO-TEXT\n" });
			const rpc = await startScmRpc({ line, ...ws, env: SPEC, script: [step(call("read", { path: "a.md" })), "one", step(call("read", { path: "b.md" })), "two", "after fork"] });
			let r;
			try {
				await rpc.prompt("first");
				await rpc.prompt("second");
				const forkable = await rpc.send({ type: "get_fork_messages" });
				const second = forkable.data.messages.find((m) => m.text === "second");
				const fork = await rpc.send({ type: "fork", entryId: second.entryId });
				assert.equal(fork.data.cancelled, false);
				await rpc.prompt("after fork");
			} finally {
				r = checked(await rpc.close());
			}
			const last = r.captures.at(-1);
			// The fork point is before b.md was read: a.md active, b.md unknown to the child.
			assert.ok(activeFile(last, "a.md"), "a.md lost in the fork");
			assert.equal(poolFile(last, "b.md"), undefined, "state after the fork point leaked into the child");
			assert.equal(count(allText(last), "ALPHA-TEXT"), 1);
			assert.equal(count(allText(last), "BRAVO-TEXT"), 0);
			assert.deepEqual(chat(last).map((m) => m.role), ["user", "assistant", "toolResult", "assistant", "user"]);
			assert.ok(!r.records.some((x) => x.type === "extension_ui_request" && /self-context-manager/.test(x.message ?? "") && x.notifyType !== "info"), "a warning was shown");
		});

		it("pi's compaction is cancelled while the context is managed; the managed context continues unchanged", opt, async () => {
			const ws = workspace(BASE, { "a.md": A });
			const rpc = await startScmRpc({ line, ...ws, settings: { compaction: { keepRecentTokens: 1 } }, script: [step(call("read", { path: "a.md" })), "one", "two", "three"] });
			let r, compact;
			try {
				await rpc.prompt("first");
				await rpc.prompt("second");
				compact = await rpc.send({ type: "compact" });
				await rpc.prompt("third");
			} finally {
				r = checked(await rpc.close());
			}
			assert.equal(compact.success, false, JSON.stringify(compact));
			assert.match(compact.error, /cancel/i);
			assert.ok(r.records.some((x) => x.type === "extension_ui_request" && x.method === "notify" && /compaction is cancelled/.test(x.message)));
			// No summarisation call reached the model (it would have taken a script step), and the call
			// after the cancelled compaction extends the one before it byte for byte.
			assert.equal(r.captures.length, 4);
			const [, , beforeCompact, afterCompact] = r.captures;
			assertContinues(beforeCompact, afterCompact, [["assistant", "two"], ["user", "third"]], "after /compact");
			assert.ok(header(afterCompact), "no header message");
			assert.equal(resultOf(afterCompact, "t1").text, A);
			assert.equal(count(allText(afterCompact), "ALPHA-TEXT"), 1);
			assert.deepEqual(convo(afterCompact).filter((m) => m.role === "user").slice(1).map(messageText), ["first", "second", "third"]);
			assert.ok(!readFileSync(r.sessionFile, "utf8").includes('"type":"compaction"'), "pi wrote a compaction entry");
		});

		it("external edits between calls and between runs: the next activation shows the watcher's version", opt, async () => {
			const [a1, a2, b1, b2] = [doc("ALPHA-1"), doc("ALPHA-2"), doc("BRAVO-1"), doc("BRAVO-2")];
			const ws = workspace(BASE, { "a.md": a1, "b.md": b1 });
			// high 50 / low 10: every call with new output is an epoch that keeps only the newest output,
			// so both reads are refs once the bash output arrives (activate then has no live read to point at).
			const env = cache(50, 10);
			const rpc = await startScmRpc({
				line, ...ws, env,
				script: [
					step(call("read", { path: "a.md" }), call("read", { path: "b.md" })),
					step(call("bash", { command: seqCmd("ROW") })),
					"one",
					step(call("activate", { id: "f2" })),
					"two",
				],
			});
			let r;
			try {
				await rpc.prompt("first");
				writeFileSync(join(ws.cwd, "b.md"), b2);
				await waitForIndexed(ws.cwd, { "b.md": b2 });
				await rpc.prompt("second");
			} finally {
				r = checked(await rpc.close());
			}
			const last = r.captures.at(-1);
			assert.deepEqual([fileListed(last, "a.md")?.id, fileListed(last, "b.md")?.id], ["f1", "f2"], JSON.stringify(filesListed(last)));
			assert.equal(resultOf(last, "t2").text, refFor("t2", b1), "the read of b.md is still live");
			assert.equal(resultOf(last, "t4").text, `f2 b.md\n${b2}`);
			// The old text only as removed lines of a CHANGED notice (issue 10), never as current.
			assert.equal(count(allText(last), "BRAVO-1"), count(allText(last), "-BRAVO-1"));

			// pi is not running while a.md changes; the resumed session's activation shows the new text.
			writeFileSync(join(ws.cwd, "a.md"), a2);
			const resumed = await scm({ line, ...again(ws), env, sessionId: r.sessionId, script: [step(call("activate", { id: "f1" })), "three"], prompt: "third" });
			const [first, afterActivate] = resumed.captures;
			assert.equal(resultOf(first, "t1").text, refFor("t1", a1));
			assert.equal(resultOf(afterActivate, "t5").text, `f1 a.md\n${a2}`);
			// The old text only as removed lines of a CHANGED notice (issue 10), never as current.
			assert.equal(count(allText(afterActivate), "ALPHA-1"), count(allText(afterActivate), "-ALPHA-1"));
			assert.match(userVisibleResults(resumed)[0].text, /^activated f1: its content is shown as this result$/);
		});

		it("a file in view changed while pi was not running: the first call after the resume tells it as a CHANGED diff", opt, async () => {
			const [a1, a2] = [doc("ALPHA-1"), doc("ALPHA-2")];
			const ws = workspace(BASE, { "a.md": a1 });
			const r = await scm({ line, ...ws, script: [step(call("read", { path: "a.md" })), "one"], prompt: "first" });
			assert.equal(resultOf(r.captures.at(-1), "t1").text, a1, "the read is live");
			writeFileSync(join(ws.cwd, "a.md"), a2);
			const resumed = await scm({ line, ...again(ws), sessionId: r.sessionId, script: ["two"], prompt: "second" });
			const text = allText(resumed.captures[0]);
			assert.equal(count(text, "CHANGED f1 a.md since you saw it"), 1, text.slice(-1500));
			assert.ok(text.includes("-ALPHA-1") && text.includes("+ALPHA-2"), text.slice(-1500));
		});

		it("the package joins a session pi ran without it: a file read there that changed since is told at the first call, one deleted since is told gone, one unchanged is not told", opt, async () => {
			const [a1, a2, b1] = [doc("ALPHA-1"), doc("ALPHA-2"), doc("BRAVO-1")];
			const ws = workspace(BASE, { "a.md": a1, "b.md": b1, "c.md": doc("CHARLIE-1") });
			const plain = checked(await runPi({ line, ...ws, script: [step(call("read", { path: "a.md" })), step(call("read", { path: "b.md" })), step(call("read", { path: "c.md" })), "one"], prompt: "first" }));
			writeFileSync(join(ws.cwd, "a.md"), a2);
			unlinkSync(join(ws.cwd, "c.md"));
			const joined = await scm({ line, ...again(ws), sessionId: plain.sessionId, script: ["two"], prompt: "second" });
			const text = allText(joined.captures[0]);
			assert.equal(count(text, "CHANGED f1 a.md since you saw it"), 1, text.slice(-1500));
			assert.ok(text.includes("-ALPHA-1") && text.includes("+ALPHA-2"), text.slice(-1500));
			assert.equal(count(text, "CHANGED f2"), 0, text.slice(-1500));
			assert.equal(count(text, "CHANGED f3 c.md: deleted or no longer readable"), 1, text.slice(-1500));
		});

		it("/context lists the active objects, pool, pinned and totals; the status line shows a token gauge", opt, async () => {
			const ws = workspace(BASE, { "a.md": "ALPHA-TEXT\n" });
			const rpc = await startScmRpc({ line, ...ws, script: [step(call("read", { path: "a.md" })), step(call("pin", { id: "a.md" })), "one"] });
			let r, resp;
			try {
				await rpc.prompt("first");
				// A handled command starts no run (0.73 answers without a disposition): wait for the report itself.
				resp = await rpc.send({ type: "prompt", message: "/context" });
				await rpc.waitFor((x) => x.type === "extension_ui_request" && x.method === "notify" && (x.message ?? "").startsWith("Active ("));
			} finally {
				r = checked(await rpc.close());
			}
			assert.equal(resp.success, true);
			assert.equal(r.captures.length, 3, "/context must not call the model");
			const report = r.records.find((x) => x.type === "extension_ui_request" && x.method === "notify" && x.message.startsWith("Active ("));
			assert.ok(report, "no /context report");
			assert.match(report.message, /Active \(1\):\n  📌 \S+ file a\.md 11 chars\n/);
			// The read's toolcall is indexed, not listed: the file's line is the one shown.
			assert.match(report.message, /Pool: 1 objects — 1 files \(0 unread, 0 deleted\), 0 tool outputs/);
			assert.match(report.message, /Pinned \(1\): a\.md/);
			assert.match(report.message, /last model call ~\d+ tokens \(pi alone: ~\d+\)/);
			const gauges = r.records.filter((x) => x.type === "extension_ui_request" && x.method === "setStatus" && x.statusKey === "scm" && x.statusText);
			assert.equal(gauges.length, 3, "one gauge update per model call");
			assert.match(gauges.at(-1).statusText, /^ctx ~\d+(\.\d)?k? tok \(pi ~\d+(\.\d)?k?\)$/);
		});
	});
}
