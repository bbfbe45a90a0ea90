// The pi package across pi's session lifecycle, on both pi lines (offline, scripted faux model,
// embedded store): resume (--session-id / -c), fork (CLI and RPC), pi's compaction, an external
// edit picked up by the watcher, the /context command and the status-line gauge.
// Run: node --test e2e/
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync, readFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { createRequire } from "node:module";
import {
	PI_LINES, REPO, tempBase, workspace, runScm, startScmRpc, missingTools, failInfo, convo, allText, count, pool, active, results,
	poolFile, activeFile, again, call, step, messageText,
} from "./fixtures/scm-pi.mjs";

const BASE = tempBase("pi-sessions");
const addon = createRequire(import.meta.url)(join(REPO, "index.js"));

/** Chat part of a call (no pool message, no active blocks). */
const chat = (c) => convo(c).filter((m) => !/^(METADATA_POOL|ACTIVE_CONTENT id=)/.test(m.role === "user" ? messageText(m) : ""));
const poolText = (c) => messageText(convo(c).find((m) => m.role === "user" && messageText(m).startsWith("METADATA_POOL")));

/** The fork tests read the spec layout's pool and active blocks. */
const SPEC = { SCM_LAYOUT: "spec" };

/** Parent run used by the resume and fork tests: reads a.md and b.md, then deactivates b.md. */
async function parentRun(line, ws, env) {
	const r = await runScm({
		line, ...ws, env,
		script: [step(call("read", { path: "a.md" }), call("read", { path: "b.md" })), step(call("deactivate", { id: "b.md" })), "parent done"],
		prompt: "parent",
	});
	assert.equal(r.exitCode, 0, failInfo(r));
	assert.ok(activeFile(r.captures.at(-1), "a.md") && !activeFile(r.captures.at(-1), "b.md"));
	return r;
}

/** The state a continued session must show first: the parent's last pool, a.md active only, no new objects. */
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
		it("resume by session id and by -c: same sets, nothing re-ingested or re-activated", opt, async () => {
			const ws = workspace(BASE, { "a.md": "ALPHA-TEXT\n", "b.md": "BRAVO-TEXT\n" });
			const parent = await parentRun(line, ws);
			const resumed = await runScm({ line, ...again(ws), sessionId: parent.sessionId, script: ["resumed"], prompt: "again" });
			assert.equal(resumed.exitCode, 0, failInfo(resumed));
			assert.equal(resumed.sessionId, parent.sessionId);
			assertSameState(parent.captures.at(-1), resumed.captures[0], "--session-id");

			const continued = await runScm({ line, ...again(ws), continue: true, script: ["continued"], prompt: "and again" });
			assert.equal(continued.exitCode, 0, failInfo(continued));
			assert.equal(continued.sessionId, parent.sessionId);
			assertSameState(resumed.captures.at(-1), continued.captures[0], "-c");
		});

		it("fork (--fork <file>): the child starts from the parent's state", opt, async () => {
			const ws = workspace(BASE, { "a.md": "ALPHA-TEXT\n", "b.md": "BRAVO-TEXT\n" });
			const parent = await parentRun(line, ws, SPEC);
			const child = await runScm({ line, ...again(ws), env: SPEC, fork: parent.sessionFile, script: ["child"], prompt: "in the fork" });
			assert.equal(child.exitCode, 0, failInfo(child));
			assert.notEqual(child.sessionId, parent.sessionId);
			assertSameState(parent.captures.at(-1), child.captures[0], "fork");
			// Nothing of the copied transcript was ingested again: every object is the parent's.
			const own = (pool(child.captures[0]) ?? []).filter((e) => e.id.startsWith(`toolcall:${child.sessionId}:`));
			assert.deepEqual(own, [], "the child re-ingested the parent's tool results");
		});

		it("rpc fork at an earlier message: session_start twice is harmless; the child has the state at the fork point", opt, async () => {
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
				r = await rpc.close();
			}
			assert.equal(r.exitCode, 0, failInfo(r));
			const last = r.captures.at(-1);
			// The fork point is before b.md was read: a.md active, b.md unknown to the child.
			assert.ok(activeFile(last, "a.md"), "a.md lost in the fork");
			assert.equal(poolFile(last, "b.md"), undefined, "state after the fork point leaked into the child");
			assert.equal(count(allText(last), "ALPHA-TEXT"), 1);
			assert.equal(count(allText(last), "BRAVO-TEXT"), 0);
			assert.deepEqual(chat(last).map((m) => m.role), ["user", "assistant", "toolResult", "assistant", "user"]);
			assert.ok(!r.records.some((x) => x.type === "extension_ui_request" && /self-context-manager/.test(x.message ?? "") && x.notifyType !== "info"), "a warning was shown");
		});

		it("pi's compaction is cancelled while the context is managed; nothing of the managed context is lost", opt, async () => {
			const ws = workspace(BASE, { "a.md": "ALPHA-TEXT\n" });
			const rpc = await startScmRpc({ line, ...ws, settings: { compaction: { keepRecentTokens: 1 } }, script: [step(call("read", { path: "a.md" })), "one", "two", "three"] });
			let r, compact;
			try {
				await rpc.prompt("first");
				await rpc.prompt("second");
				compact = await rpc.send({ type: "compact" });
				await rpc.prompt("third");
			} finally {
				r = await rpc.close();
			}
			assert.equal(r.exitCode, 0, failInfo(r));
			assert.equal(compact.success, false, JSON.stringify(compact));
			assert.match(compact.error, /cancel/i);
			assert.ok(r.records.some((x) => x.type === "extension_ui_request" && x.method === "notify" && /compaction is cancelled/.test(x.message)));
			const lastCall = r.captures.at(-1);
			assert.equal(activeFile(lastCall, "a.md")?.body, "ALPHA-TEXT\n");
			assert.deepEqual(chat(lastCall).filter((m) => m.role === "user").map(messageText), ["first", "second", "third"]);
			assert.ok(!readFileSync(r.sessionFile, "utf8").includes('"type":"compaction"'), "pi wrote a compaction entry");
		});

		it("an external edit between calls: the watcher's version is what the model sees next", opt, async () => {
			const ws = workspace(BASE, { "a.md": "ALPHA-1\n", "b.md": "BRAVO-1\n" });
			const rpc = await startScmRpc({
				line, ...ws,
				script: [step(call("read", { path: "a.md" }), call("read", { path: "b.md" })), step(call("deactivate", { id: "a.md" })), "one", step(call("activate", { id: "a.md" })), "two"],
			});
			let r;
			try {
				await rpc.prompt("first");
				writeFileSync(join(ws.cwd, "a.md"), "ALPHA-2\n");
				writeFileSync(join(ws.cwd, "b.md"), "BRAVO-2\n");
				await waitForIndexed(ws.cwd, { "a.md": "ALPHA-2\n", "b.md": "BRAVO-2\n" });
				await rpc.prompt("second");
			} finally {
				r = await rpc.close();
			}
			assert.equal(r.exitCode, 0, failInfo(r));
			const [firstOfSecond, last] = r.captures.slice(-2);
			// b.md stayed active: its new version replaces the old one in place.
			assert.equal(activeFile(firstOfSecond, "b.md")?.body, "BRAVO-2\n");
			assert.equal(count(allText(firstOfSecond), "BRAVO-1"), 0);
			// a.md was inactive: activating it shows the watcher's version.
			assert.equal(activeFile(firstOfSecond, "a.md"), undefined);
			assert.equal(activeFile(last, "a.md")?.body, "ALPHA-2\n");
			assert.equal(count(allText(last), "ALPHA-1"), 0);
		});

		it("/context lists the active objects, pool, pinned and totals; the status line shows a token gauge", opt, async () => {
			const ws = workspace(BASE, { "a.md": "ALPHA-TEXT\n" });
			const rpc = await startScmRpc({ line, ...ws, script: [step(call("read", { path: "a.md" })), step(call("pin", { id: "a.md" })), "one"] });
			let r, resp;
			try {
				await rpc.prompt("first");
				// A handled command starts no run (0.73 answers without a disposition): wait for the report itself.
				resp = await rpc.send({ type: "prompt", message: "/context" });
				await rpc.waitFor((x) => x.type === "extension_ui_request" && x.method === "notify" && /^Active \(/.test(x.message ?? ""));
			} finally {
				r = await rpc.close();
			}
			assert.equal(r.exitCode, 0, failInfo(r));
			assert.equal(resp.success, true);
			assert.equal(r.captures.length, 3, "/context must not call the model");
			const report = r.records.find((x) => x.type === "extension_ui_request" && x.method === "notify" && /^Active \(/.test(x.message));
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

/**
 * Wait until the watcher in the pi process has indexed the given contents. The watcher writes new
 * versions to the store on its own thread and there is no cross-process signal for "indexed", so
 * this polls the shared embedded store with a deadline.
 */
async function waitForIndexed(cwd, files, ms = 15000) {
	const store = await addon.openStore({ kind: "embedded", path: join(cwd, ".scm", "store.sqlite") });
	const resolver = new addon.Resolver({ workspaceRoot: cwd });
	const deadline = Date.now() + ms;
	for (;;) {
		const docs = await Promise.all(Object.keys(files).map((p) => store.get(resolver.resolve(p).objectId)));
		if (Object.values(files).every((c, i) => docs[i]?.content === c)) return;
		if (Date.now() > deadline) throw new Error(`watcher did not index ${JSON.stringify(files)} within ${ms} ms: ${JSON.stringify(docs.map((d) => d?.content))}`);
		await new Promise((res) => setTimeout(res, 50));
	}
}
