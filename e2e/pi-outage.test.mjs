// A store outage in the middle of a pi session (XTDB store, both pi lines): the run completes and the
// calls made while the node is down still get the managed context (assembled from memory; reads are
// indexed from disk; the writes stay queued) with a notice; once the node is back the queued writes
// land and nothing of the session is lost (checked in the store itself). A session that starts while
// the node is down cannot load its state: pi's own context until the store is back.
// Uses its own XTDB node (RocksDB, own port), stopped and restarted on the same data.
// Run: node --test e2e/   (needs bash xtdb/setup.sh; ~70 s, mostly two JVM start-ups)
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { join } from "node:path";
import { PI_LINES, REPO, tempBase, workspace, startScmRpc, missingTools, failInfo, convo, count, allText, pool, poolFile, activeFile, results, call, step } from "./fixtures/scm-pi.mjs";
import { startXtdbNode, xtdbMissing } from "./fixtures/scm-xtdb-node.mjs";

const BASE = tempBase("pi-outage");
const addon = createRequire(import.meta.url)(join(REPO, "index.js"));
const lines = PI_LINES.filter((l) => !missingTools(l));
const noXtdb = xtdbMissing();
if (noXtdb && process.env.SCM_REQUIRE_XTDB === "1") throw new Error(noXtdb);
const skip = noXtdb ? `no XTDB here (${noXtdb})` : lines.length === 0 ? "no pi line set up (scripts/pi/setup.sh)" : false;

let node;
before(async () => {
	if (!skip) node = await startXtdbNode(join(BASE, "xtdb"));
});
after(async () => {
	await node?.stop();
});

// The assertions read the spec layout's pool, refs and active blocks.
const ENV = (url, extra = {}) => ({ SCM_STORE: "xtdb", SCM_XTDB_URL: url, SCM_XTDB_TIMEOUT_MS: "3000", SCM_LAYOUT: "spec", ...extra });

const notices = (r) => r.records.filter((x) => x.type === "extension_ui_request" && x.method === "notify").map((x) => x.message);

describe("store outage mid-session", { skip }, () => {
	// One outage (stop → restart) serves both lines: each runs its whole session across it.
	it(`the run completes on the managed context; after the store is back nothing is lost (pi ${lines.join(", ")})`, { timeout: 600000 }, async () => {
		const runs = [];
		for (const line of lines) {
			const ws = workspace(BASE, { "a.md": "ALPHA-TEXT\n", "b.md": "BRAVO-TEXT\n" });
			const rpc = await startScmRpc({
				line, ...ws,
				env: ENV(node.url),
				script: [
					step(call("read", { path: "a.md" }, "r1")), "one",
					step(call("read", { path: "b.md" }, "r2"), call("bash", { command: "printf 'OUT-%s\\n' 9" }, "b2")), "two",
					"three",
				],
			});
			await rpc.prompt("first");
			runs.push({ line, ws, rpc });
		}

		await node.stop();
		for (const run of runs) await run.rpc.prompt("second"); // two model calls each, store down
		// A session that starts while the store is down: pi's own context, then managed once it is back.
		const late = [];
		for (const line of lines) {
			const ws = workspace(BASE, { "c.md": "CHARLIE-TEXT\n" });
			const rpc = await startScmRpc({
				line, ...ws,
				env: ENV(node.url, { SCM_RETRY_MS: "0" }),
				script: [step(call("read", { path: "c.md" }, "l1")), "one", "two"],
			});
			await rpc.prompt("first");
			late.push({ line, rpc });
		}
		await node.start();
		for (const run of runs) {
			await run.rpc.prompt("third");
			run.r = await run.rpc.close();
		}
		for (const run of late) {
			await run.rpc.prompt("second");
			run.r = await run.rpc.close();
		}
		for (const { line, r } of late) {
			assert.equal(r.exitCode, 0, `${line} (late): ${failInfo(r)}`);
			assert.ok(notices(r).some((m) => /could not open the context store \(STORE_/.test(m)), `${line} (late): ${notices(r)}`);
			const [c1, c2, c3] = r.captures;
			assert.equal(pool(c1), null);
			assert.equal(pool(c2), null);
			// Opened on the next call: the whole transcript is ingested; the read's output is shown once.
			assert.ok(pool(c3), `${line} (late): not managed after the store came back`);
			assert.equal(count(allText(c3), "CHARLIE-TEXT"), 1);
			assert.ok(results(c3).every((x) => x.ref));
		}

		for (const { line, r } of runs) {
			assert.equal(r.exitCode, 0, `${line}: ${failInfo(r)}`);
			assert.equal(r.captures.length, 5, `${line}: every model call happened`);
			const [, , down1, down2, back] = r.captures;
			// While the node is down: still the managed context (from memory), and a notice.
			for (const c of [down1, down2]) assert.ok(pool(c), `${line}: pi's own context while the store was down`);
			assert.equal(activeFile(down1, "a.md")?.body, "ALPHA-TEXT\n");
			// b.md was read during the outage: indexed from disk, shown once; the bash output too.
			assert.equal(activeFile(down2, "b.md")?.body, "BRAVO-TEXT\n");
			assert.equal(count(allText(down2), "BRAVO-TEXT"), 1);
			assert.equal(count(allText(down2), "OUT-9"), 1);
			assert.ok(results(down2).every((x) => x.ref), `${line}: raw tool results during the outage`);
			assert.ok(notices(r).some((m) => /store write delayed \(STORE_/.test(m)), `${line}: no outage notice: ${notices(r)}`);
			assert.ok(!notices(r).some((m) => /assembling the context failed/.test(m)), `${line}: fell back to pi's context`);
			// Back: managed again, with everything that happened during the outage.
			assert.ok(notices(r).some((m) => /works again/.test(m)), `${line}: no recovery notice`);
			assert.equal(activeFile(back, "a.md")?.body, "ALPHA-TEXT\n");
			const refs = results(back);
			assert.deepEqual(refs.map((x) => x.toolCallId), ["r1", "r2", "b2"], `${line}: tool results`);
			assert.ok(refs.every((x) => x.ref), `${line}: all results are refs`);
			// The files read are listed (their reads are indexed only), the bash output too.
			const ids = new Set(pool(back).map((e) => e.id));
			for (const p of ["a.md", "b.md"]) assert.ok(poolFile(back, p), `${line}: ${p} not in the pool`);
			assert.ok(ids.has(refs[2].ref.id), `${line}: ${refs[2].ref.id} not in the pool`);
			assert.equal(count(allText(back), "OUT-9"), 1, `${line}: the outage-time bash output is active once`);
			assert.deepEqual(convo(back).filter((m) => m.role === "user" && !/^(METADATA_POOL|ACTIVE_CONTENT)/.test(typeof m.content === "string" ? m.content : "")).length, 3);

			// Nothing lost: the store holds the whole session (a fresh reader, not pi's process).
			const store = await addon.openStore({ kind: "xtdb", url: node.url });
			const session = await store.get(`session:${r.sessionId}`);
			const chat = await store.get(`chat:${r.sessionId}`);
			assert.ok(session && chat, `${line}: session or chat document missing`);
			assert.equal(chat.turn_count, 3, `${line}: chat turns`);
			for (const x of refs) assert.ok(session.session_index.includes(x.ref.id), `${line}: ${x.ref.id} missing from the stored session index`);
			const out9 = await store.get(refs[2].ref.id);
			assert.equal(out9?.content, "OUT-9\n");
			// And a resumed manager shows what pi's model last saw.
			const cm = await addon.ContextManager.open({ sessionId: r.sessionId, workspaceRoot: r.cwd, store: { kind: "xtdb", url: node.url }, layout: "spec" });
			try {
				const snap = cm.snapshot();
				assert.deepEqual(snap.metadataPool.map((e) => e.id), pool(back).map((e) => e.id), `${line}: stored pool`);
			} finally {
				await cm.close();
			}
		}
	});
});
