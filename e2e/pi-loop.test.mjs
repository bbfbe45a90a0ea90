// The pi package in the real pi loop (scripted faux model, embedded store, offline), on both pi lines,
// default (cache) layout: what the model receives over several user prompts (issue 10).
//   - ten short text-only turns: every user prompt exactly once in every call (finding 2);
//   - pi's system prompt is stored as versions of system_prompt:<sid>, and reconstructCall(n) returns
//     exactly what the model received for call n, system prompt included (finding 5);
//   - ranged and image reads index the file, so no toolcall's file_refs names a missing object (finding 6);
//   - a file changed on disk after deactivate/activate: `activate` shows the new text and never points
//     at an old one as if it were current (finding 1);
//   - a read's output reaches the model in full at least once before it can collapse (finding 3);
//   - a file printed through bash (`cat F`) is a read of it (session 30).
// Run: node --test e2e/pi-loop.test.mjs   (needs scripts/pi/setup.sh and a built addon)
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { join } from "node:path";
import { PROBE_EXTENSION } from "./harness.mjs";
import {
	PI_LINES, REPO, tempBase, workspace, runScm, startScmRpc, missingTools, failInfo, convo, allText, call, step,
	messageText, toolResults, resultOf, callTo, refOf, assertToolResultsPaired,
} from "./fixtures/scm-pi.mjs";

const BASE = tempBase("pi-loop");
const addon = createRequire(import.meta.url)(join(REPO, "index.js"));

function checked(r) {
	assert.equal(r.exitCode, 0, failInfo(r));
	for (const c of r.captures) assertToolResultsPaired(c, `${r.runDir} call ${c.call}`);
	return r;
}

/** Runs `prompts` one after another in one `pi --mode rpc` session; the RPC session's result. */
async function rpcRun(opts, prompts) {
	const rpc = await startScmRpc(opts);
	let r;
	try {
		for (const p of prompts) {
			const resp = await rpc.prompt(p);
			assert.equal(resp.success, true, JSON.stringify(resp));
		}
	} finally {
		r = checked(await rpc.close());
	}
	return r;
}

/** The session as stored by the pi run (pi has exited): a manager on the workspace's embedded store. */
function openStored(ws, sessionId) {
	return addon.ContextManager.open({ sessionId, workspaceRoot: ws.cwd, layout: "cache", emitSystemMessage: false });
}

/** ~100 chars a line. */
const filler = (n, tag = "line") =>
	Array.from({ length: n }, (_, i) => `${tag} ${i + 1}: the quick brown fox jumps over the lazy dog, then naps by the river bank.\n`).join("");

// A 1×1 transparent PNG.
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==", "base64");

for (const line of PI_LINES) {
	const missing = missingTools(line);
	const opt = { skip: missing ? `pi ${line} not set up (${missing})` : false };

	describe(`pi ${line}: the real loop over several prompts (cache layout)`, () => {
		it("ten short text-only turns: every user prompt reaches the model exactly once, in order", opt, async () => {
			// The user prompts again as soon as pi takes the previous prompt (RPC `followUp`, as typing ahead does):
			// on 0.73 the `agent_end` of a run is then handled while the next run already calls the model.
			const ws = workspace(BASE, {});
			const prompts = Array.from({ length: 10 }, (_, i) => `prompt ${i + 1}`);
			const rpc = await startScmRpc({ line, ...ws, script: prompts.map((_, i) => `answer ${i + 1}`) });
			let r;
			try {
				for (const p of prompts) {
					const resp = await rpc.send({ type: "prompt", message: p, streamingBehavior: "followUp" });
					assert.equal(resp.success, true, JSON.stringify(resp));
				}
				const last = (e) => e.type === "agent_end" && (e.messages ?? []).some((m) => m.role === "assistant" && messageText(m) === "answer 10");
				await rpc.waitFor(last);
			} finally {
				r = checked(await rpc.close());
			}
			assert.equal(r.captures.length, 10, failInfo(r));
			for (const [k, c] of r.captures.entries()) {
				const seen = convo(c).map((m) => `${m.role}:${messageText(m)}`).filter((t) => /^(user:prompt|assistant:answer) \d+$/.test(t));
				const expected = prompts.slice(0, k + 1).flatMap((p, i) => (i < k ? [`user:${p}`, `assistant:answer ${i + 1}`] : [`user:${p}`]));
				assert.deepEqual(seen, expected, `call ${k + 1}`);
				assert.equal(messageText(convo(c).at(-1)), prompts[k], `call ${k + 1} does not end with its prompt`);
			}
		});

		it("pi's system prompt is stored (a version per change) and reconstructCall(n) is what the model received, byte for byte", opt, async () => {
			const ws = workspace(BASE, { "a.md": `ALPHA\n${filler(3)}` });
			const r = await rpcRun(
				{
					line, ...ws,
					extensions: [PROBE_EXTENSION],
					env: { SCM_PROBE_SYSTEM_NOTE: "1" },
					script: [step(call("read", { path: "a.md" })), "one", "two", step(call("activate", { id: "f1" })), "three"],
				},
				["prompt 1", "prompt 2", "prompt 3"],
			);
			assert.equal(r.captures.length, 5, failInfo(r));
			// The probe makes pi's system prompt differ per user prompt; ours is in it.
			const prompts = r.captures.map((c) => c.systemPrompt);
			assert.equal(new Set(prompts).size, 3);
			for (const p of prompts) assert.match(p, /Context management \(self-context-manager\)/);
			// pi sends the system prompt itself: not in the messages we return.
			for (const c of r.captures) assert.equal(convo(c).some((m) => messageText(m).includes("probe note:")), false);

			const cm = await openStored(ws, r.sessionId);
			try {
				const versions = (await cm.history(cm.systemPromptObjectId)).map((v) => v.doc?.content);
				assert.deepEqual(versions, [...new Set(prompts)], "one stored version per system prompt, in order");
				for (const [n, c] of r.captures.entries()) {
					const rebuilt = await cm.reconstructCall(n);
					const received = [{ role: "system", content: c.systemPrompt }, ...convo(c)];
					// Every string exactly as received (key order aside: the provider's capture is a JSON round trip).
					assert.deepStrictEqual(rebuilt, received, `call ${n}`);
				}
			} finally {
				await cm.close();
			}
		});

		it("ranged and image reads index the file: every file a toolcall names exists in the store", opt, async () => {
			const big = filler(30);
			const ws = workspace(BASE, { "big.txt": big, "pixel.png": PNG });
			const r = checked(
				await runScm({
					line, ...ws,
					script: [step(call("read", { path: "big.txt", offset: 3, limit: 2 }), call("read", { path: "pixel.png" })), "done"],
					prompt: "look",
				}),
			);
			const results = toolResults(r.captures[1]);
			assert.match(results[0].text, /^line 3: /, "the ranged read's own output");
			const cm = await openStored(ws, r.sessionId);
			try {
				const snap = cm.snapshot();
				const toolcalls = snap.metadataPool.filter((e) => e.type === "toolcall");
				const docs = await Promise.all(snap.sessionIndex.map((id) => cm.getObject(id)));
				const reads = docs.filter((d) => d?.type === "toolcall" && d.tool === "read");
				assert.equal(reads.length, 2, JSON.stringify(toolcalls));
				for (const d of reads) {
					assert.equal(d.file_refs?.length, 1, JSON.stringify(d));
					const file = await cm.getObject(d.file_refs[0]);
					assert.ok(file, `${d.args.path}: file_refs names ${d.file_refs[0]}, which does not exist`);
					assert.equal(file.type, "file");
				}
				const [text, image] = await Promise.all(reads.map((d) => cm.getObject(d.file_refs[0])));
				assert.equal(text.content, big, "the ranged read indexed the whole file");
				assert.equal(image.content, null, "an image is indexed metadata-only");
				// Indexed, not made active: the model asked for a slice, not the file.
				assert.deepEqual(snap.activeSet.filter((id) => id === text["xt/id"] || id === image["xt/id"]), []);
			} finally {
				await cm.close();
			}
		});

		it("a file changed on disk after deactivate/activate: activate shows the new text and never points at the old one", opt, async () => {
			const OLD = `OLD-TEXT\n${filler(3)}`;
			const NEW = `NEW-TEXT\n${filler(3, "row")}`;
			const ws = workspace(BASE, { "a.txt": OLD, "new.txt": NEW });
			const r = await rpcRun(
				{
					line, ...ws,
					script: [
						step(call("read", { path: "a.txt" })),
						step(call("deactivate", { id: "f1" })),
						step(call("activate", { id: "f1" })),
						// Rewritten on disk (by a command; the watcher has not necessarily seen it yet).
						step(call("bash", { command: "cp new.txt a.txt" })),
						step(call("activate", { id: "a.txt" })),
						"one",
						"two",
						"three",
					],
				},
				["prompt 1", "prompt 2", "prompt 3"],
			);
			const afterActivate = r.captures[5];
			const act = callTo(afterActivate, "activate", (a) => a.id === "a.txt");
			assert.ok(act, JSON.stringify(toolResults(afterActivate)));
			for (const [k, c] of r.captures.slice(5).entries()) {
				const shown = resultOf(c, act.id).text;
				assert.ok(allText(c).includes(NEW), `call ${k + 6}: the new text is not in the model's context; activate answered ${JSON.stringify(shown)}`);
				if (shown.endsWith("is shown above]")) {
					// A pointer is only honest if what is above is the current text, in full.
					const above = toolResults(c).filter((x) => x.toolCallId !== act.id).map((x) => x.text);
					assert.ok(above.some((t) => t.includes(NEW)), `call ${k + 6}: "${shown}" while the text above is the old version`);
				}
			}
		});

		it("a file printed through bash is a read: indexed with its text, printed again unchanged a pointer, a secret one withheld", opt, async () => {
			const A = `PRINTED-A\n${filler(12)}`;
			const ws = workspace(BASE, { "src/a.txt": A, ".env": "TOKEN=SHELL-SECRET-VALUE\n" });
			const r = checked(
				await runScm({
					line, ...ws,
					script: [
						step(call("bash", { command: "cat src/a.txt" })),
						step(call("bash", { command: "cd src && cat a.txt" })),
						step(call("bash", { command: "cat .env" })),
						"done",
					],
					prompt: "look",
				}),
			);
			const last = r.captures.at(-1);
			const [first, again, env] = toolResults(last);
			assert.equal(first.text, A, "the first print, whole");
			assert.match(again.text, /^\[t\d+: identical to t\d+ above\]$/, "the same text printed again points at the first print");
			assert.match(env.text, /^\[withheld: secret\]/, "a file on the secret list printed through bash is withheld as a read of it is");
			for (const c of r.captures) assert.ok(!allText(c).includes("SHELL-SECRET-VALUE"), `call ${c.call}: the secret reached the model`);
			const cm = await openStored(ws, r.sessionId);
			try {
				const snap = cm.snapshot();
				const entry = snap.metadataPool.find((e) => e.type === "file" && e.path?.endsWith("a.txt"));
				assert.ok(entry, JSON.stringify(snap.metadataPool));
				assert.equal((await cm.getObject(entry.id)).content, A, "indexed with its text, not a discovery stub");
				assert.ok(!snap.activeSet.includes(entry.id), "in the pool, not made active: bash observation updates the index and pool only");
			} finally {
				await cm.close();
			}
		});

		it("every read's output reaches the model in full at least once before it can collapse", opt, async () => {
			const files = Object.fromEntries([1, 2, 3, 4].map((k) => [`f${k}.txt`, `FILE-${k}\n${filler(40, `f${k}`)}`]));
			const ws = workspace(BASE, files);
			const r = checked(
				await runScm({
					line, ...ws,
					env: { SCM_CACHE_HIGH: "400", SCM_CACHE_LOW: "150" },
					script: [
						step(...Object.keys(files).slice(0, 3).map((p) => call("read", { path: p }))),
						step(call("read", { path: "f4.txt" })),
						step(call("bash", { command: "echo done" })),
						"done",
					],
					prompt: "read them",
				}),
			);
			const reads = callsTo(r.captures.at(-1), "read");
			assert.equal(reads.length, 4);
			for (const c of reads) {
				const body = files[c.args.path];
				const seen = r.captures.map((cap) => resultOf(cap, c.id)).filter(Boolean);
				assert.ok(seen.length > 0, `${c.id} never reached the model`);
				assert.equal(refOf(seen[0].text), null, `${c.id} (${c.args.path}) arrived collapsed: ${seen[0].text}`);
				assert.equal(seen[0].text, body, `${c.id} (${c.args.path}) first shown in part`);
			}
		});
	});
}

/** Every call to tool `name` the model saw in a call, in order. */
function callsTo(capture, name) {
	return convo(capture).flatMap((m) =>
		m.role === "assistant" ? (m.content ?? []).filter((b) => b.type === "toolCall" && b.name === name).map((b) => ({ id: b.id, name: b.name, args: b.arguments })) : [],
	);
}
