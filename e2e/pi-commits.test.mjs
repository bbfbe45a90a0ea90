// Context commits in the real pi loop, both pi lines (offline, scripted faux model, embedded store): a
// turn-boundary commit after each completed run (agent_end), the chain continuing across a restart
// (resume by session id), and materialize of the tip giving the conversation pi holds (and the model was
// shown) with every tool output back in full.
// Run: node --test e2e/pi-commits.test.mjs
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { join } from "node:path";
import { PI_LINES, tempBase, workspace, again, runScm, startScmRpc, missingTools, failInfo, call, step, messageText, REPO } from "./fixtures/scm-pi.mjs";

const BASE = tempBase("pi-commits");
const addon = createRequire(import.meta.url)(join(REPO, "index.js"));
const ROWS = "seq -f 'ROW %03g' 1 40";
const ROWS_OUT = Array.from({ length: 40 }, (_, i) => `ROW ${String(i + 1).padStart(3, "0")}`).join("\n") + "\n";

async function commitsOf(cwd, sessionId) {
	const store = await addon.openStore({ kind: "embedded", path: join(cwd, ".scm", "store.sqlite") });
	const commits = addon.commitsOf(store);
	const tip = await commits.resolve({ sessionId, at: "2999-01-01T00:00:00Z" });
	return { commits, tip, chain: tip ? await commits.history(tip) : [] };
}

for (const line of PI_LINES) {
	const missing = missingTools(line);
	const opt = { skip: missing ? `pi ${line} not set up (${missing})` : false };

	describe(`pi ${line}: context commits`, () => {
		it("a commit per completed run, the chain continues after a restart, materialize gives pi's conversation", opt, async () => {
			const ws = workspace(BASE);
			const first = await runScm({ line, ...ws, script: [step(call("bash", { command: ROWS })), "FIRST-DONE"], prompt: "first" });
			assert.equal(first.exitCode, 0, failInfo(first));
			const a = await commitsOf(ws.cwd, first.sessionId);
			assert.equal(a.chain.length, 1, JSON.stringify(a.chain));
			assert.equal(a.chain[0].trigger, "turn_boundary");
			assert.equal(a.chain[0].parent, null);
			assert.match(a.chain[0].template, /^pi\//);

			const second = await runScm({ line, ...again(ws), sessionId: first.sessionId, script: ["SECOND-DONE"], prompt: "second" });
			assert.equal(second.exitCode, 0, failInfo(second));
			const b = await commitsOf(ws.cwd, first.sessionId);
			assert.equal(b.chain.length, 2, JSON.stringify(b.chain));
			assert.equal(b.chain[0].parent, a.tip, "the resumed session's commit names the tip before the restart");
			assert.equal(b.chain[0].messageCount, 2, "only the new prompt and answer");

			const m = await b.commits.materialize(b.tip, { stop: "root" });
			const view = m.messages.map((x) => [x.role, messageText(x)]);
			assert.deepEqual(view, [
				["user", "first"],
				["assistant", ""],
				["toolResult", ROWS_OUT],
				["assistant", "FIRST-DONE"],
				["user", "second"],
				["assistant", "SECOND-DONE"],
			]);
			// The model of the second run saw the first run's conversation (the commit's) before "second".
			const seen = second.captures[0].messages.filter((x) => x.role === "user").map(messageText);
			assert.ok(seen.includes("first") && seen.at(-1) === "second", JSON.stringify(seen));
		});

		it("/ctx fork <id>: a new pi session from another session's commit; the model sees the commit's conversation, the branch's commit names it", opt, async () => {
			const ws = workspace(BASE);
			const rpc = await startScmRpc({ line, ...ws, script: ["ONE", "TWO"] });
			let r, parent, tip, forked;
			try {
				await rpc.prompt("first");
				parent = (await rpc.send({ type: "get_state" })).data.sessionId;
				tip = (await commitsOf(ws.cwd, parent)).tip;
				assert.ok(tip);
				assert.equal((await rpc.send({ type: "prompt", message: `/ctx fork ${tip}` })).success, true);
				forked = (await rpc.send({ type: "get_state" })).data.sessionId;
				await rpc.prompt("second");
			} finally {
				r = await rpc.close();
			}
			assert.equal(r.exitCode, 0, failInfo(r));
			assert.notEqual(forked, parent, "pi switched to the forked session");
			const last = r.captures.at(-1).messages.filter((x) => x.role !== "system").map((x) => [x.role, messageText(x)]);
			// The cache layout's header aside, the model sees the commit's conversation, then the new prompt.
			const chat = last.filter(([role, t]) => !(role === "user" && t.startsWith("Context manager:")));
			assert.deepEqual(chat, [["user", "first"], ["assistant", "ONE"], ["user", "second"]], JSON.stringify(last));
			const b = await commitsOf(ws.cwd, forked);
			// history runs through the parent's chain: [the branch's commit, the forked commit].
			assert.deepEqual(b.chain.map((c) => [c.sessionId, c.parent]), [[forked, tip], [parent, null]]);
			assert.equal(b.chain[0].messageCount, 2, "only what the branch added");
		});

		it("/ctx checkpoint <summary>, /ctx log, /ctx call (the commit a model call followed)", opt, async () => {
			const ws = workspace(BASE);
			const rpc = await startScmRpc({ line, ...ws, script: ["ONE", "TWO"] });
			let r;
			try {
				await rpc.prompt("first");
				assert.equal((await rpc.send({ type: "prompt", message: "/ctx checkpoint marked here" })).success, true);
				await rpc.prompt("second");
				assert.equal((await rpc.send({ type: "prompt", message: "/ctx log" })).success, true);
				assert.equal((await rpc.send({ type: "prompt", message: "/ctx call" })).success, true);
				assert.equal((await rpc.send({ type: "prompt", message: "/ctx call 0" })).success, true);
			} finally {
				r = await rpc.close();
			}
			assert.equal(r.exitCode, 0, failInfo(r));
			const { chain } = await commitsOf(ws.cwd, r.sessionId);
			assert.deepEqual(
				chain.map((c) => [c.trigger, c.messageCount, c.summary]),
				[
					["turn_boundary", 2, null],
					["explicit", 0, "marked here"],
					["turn_boundary", 2, null],
				],
			);
			const notes = r.records.filter((x) => x.type === "extension_ui_request" && x.method === "notify").map((x) => x.message);
			const log = notes.find((m) => m.includes(chain[0].id));
			assert.ok(log && log.includes("marked here") && log.includes(chain[2].id), JSON.stringify(notes));
			// The second prompt's call came after the explicit commit; the first before any.
			assert.ok(notes.some((m) => m.startsWith(`model call 1 followed ${chain[1].id}`) && m.includes("marked here")), JSON.stringify(notes));
			assert.ok(notes.includes("model call 0 came before this session's first commit"), JSON.stringify(notes));
		});
	});
}
