// The pi package in a real pi agent loop (scripted faux model, embedded store, offline), on both
// pi lines: the exact context the model receives in the default cache layout after read /
// deactivate / activate / pin, epochs (batched collapses, forced here with a small cache policy),
// write / edit, ls / grep discovery, bash, an external edit and /context; one run in the spec layout.
// Every model call of every run is checked to keep one tool result per tool call.
// Run: node --test e2e/   (needs scripts/pi/setup.sh and a built addon)
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PROBE_EXTENSION } from "./harness.mjs";
import {
	PI_LINES, ALL_TOOLS, tempBase, workspace, runScm, startScmRpc, missingTools, failInfo, convo, allText, count, pool, results,
	poolFile, activeFile, again, userVisibleResults, call, step, messageText, header, toolCalls, toolResults, resultOf, callTo, refFor,
	filesListed, fileDeltas, fileListed, assertToolResultsPaired, waitForIndexed,
} from "./fixtures/scm-pi.mjs";

const BASE = tempBase("pi-context");

/** ~100 chars a line: file bodies big enough to collapse (results under 200 chars never do). */
const filler = (n, tag = "line") =>
	Array.from({ length: n }, (_, i) => `${tag} ${i + 1}: the quick brown fox jumps over the lazy dog, then naps by the river bank.\n`).join("");
/** A file whose marker occurs once, followed by ~400 chars of filler. */
const doc = (marker) => `${marker}\n${filler(4)}`;
/** A bash command whose ~400-char output repeats `tag` 40 times (the command itself contains it once). */
const seqCmd = (tag) => `seq -f '${tag} %03g' 1 40`;
const seqOut = (tag) => Array.from({ length: 40 }, (_, i) => `${tag} ${String(i + 1).padStart(3, "0")}\n`).join("");
/** Cache policy via the environment (chars/4 units). */
// Working files off: these tests pin the collapse mechanics (working files have their own tests in the core).
const NO_WORKING = { SCM_CACHE_WORKING_CALLS: "0", SCM_CACHE_WORKING_EDITED_CALLS: "0" };
const cache = (high, low) => ({ SCM_CACHE_HIGH: String(high), SCM_CACHE_LOW: String(low), ...NO_WORKING });

/** A run with the package whose every model call keeps a result for each tool call. */
async function scm(opts) {
	const r = await runScm(opts);
	assert.equal(r.exitCode, 0, failInfo(r));
	for (const c of r.captures) assertToolResultsPaired(c);
	return r;
}
function checkedRpc(r) {
	assert.equal(r.exitCode, 0, failInfo(r));
	for (const c of r.captures) assertToolResultsPaired(c);
	return r;
}
/** Call `later`'s messages start with exactly `earlier`'s (no epoch in between: the prompt cache holds). */
function assertExtends(earlier, later, what) {
	const a = convo(earlier);
	assert.deepEqual(convo(later).slice(0, a.length), a, `${what}: the earlier context is not a prefix`);
}
/** Text of the tool results only (args and chat excluded). */

for (const line of PI_LINES) {
	const missing = missingTools(line);
	const opt = { skip: missing ? `pi ${line} not set up (${missing})` : false };

	describe(`pi ${line}: context (cache layout)`, () => {
		it("read: the file text reaches the model once, inline as the read's result; call ids become t<n>", opt, async () => {
			const text = doc("HELLO-CONTENT");
			const ws = workspace(BASE, { "hello.txt": text });
			const r = await scm({ line, ...ws, script: [step(call("read", { path: "hello.txt" }, "provider-id-1")), "done"], prompt: "read hello.txt" });
			assert.equal(r.captures.length, 2, failInfo(r));
			const [first, second] = r.captures;

			// Call 1: our tools, our system prompt section, the constant header, the prompt.
			for (const t of ["read", "activate", "deactivate", "pin", "unpin"]) assert.ok(first.tools.includes(t), `tool ${t}: ${first.tools}`);
			assert.equal(first.tools.filter((t) => t === "read").length, 1);
			assert.match(first.systemPrompt, /Context management \(self-context-manager\)/);
			assert.match(first.systemPrompt, /\[t12 · 340 lines\]/);
			assert.match(first.systemPrompt, /activate\(id\) shows/);
			assert.doesNotMatch(first.systemPrompt, /METADATA_POOL|ACTIVE_CONTENT|toolcall_ref/);
			assert.ok(header(first), `no header message: ${JSON.stringify(convo(first)[0])}`);
			assert.deepEqual(convo(first).map((m) => m.role), ["user", "user"]);

			// Call 2: the text once, as the read's own result; the provider's call id is now t1.
			assert.equal(count(allText(second), "HELLO-CONTENT"), 1, allText(second));
			assert.deepEqual(toolCalls(second), [{ id: "t1", name: "read", args: { path: "hello.txt" } }]);
			assert.deepEqual(toolResults(second), [{ toolCallId: "t1", toolName: "read", text, isError: false, ref: null }]);
			assert.deepEqual(convo(second).map((m) => m.role), ["user", "user", "assistant", "toolResult"]);
			assert.equal(header(second), header(first), "the header is constant");
			assertExtends(first, second, "call 1 → 2");

			// The user still sees the file in the tool result (with pi's id), and pi's session file keeps it.
			const [seen] = userVisibleResults(r);
			assert.equal(seen.toolCallId, "provider-id-1");
			assert.match(seen.text, /HELLO-CONTENT/);
			assert.match(readFileSync(r.sessionFile, "utf8"), /HELLO-CONTENT/);
		});

		it("deactivate: the text stays until the next epoch, then only a ref with its id; activate (after resume) shows it inline", opt, async () => {
			const notes = doc("NOTES-BODY");
			const other = doc("OTHER-BODY");
			const ws = workspace(BASE, { "notes.md": notes, "other.md": other });
			// high 200 / low 400 (units = chars/4): two reads (~85 each) stay under high; the bash output
			// (~80) pushes past it. Low would keep all three, so only the deactivation collapses t1.
			const env = cache(200, 400);
			const r1 = await scm({
				line, ...ws, env,
				script: [
					step(call("read", { path: "notes.md" }), call("read", { path: "other.md" })),
					step(call("deactivate", { id: "t1" })),
					step(call("bash", { command: seqCmd("ROW") })),
					"deactivated",
				],
				prompt: "go",
			});
			const [, afterRead, afterDeactivate, afterEpoch] = r1.captures;
			assert.equal(resultOf(afterRead, "t1").text, notes);
			// deactivate waits for the next epoch: the prefix (and the text) stay as they were.
			assertExtends(afterRead, afterDeactivate, "after deactivate");
			assert.equal(count(allText(afterDeactivate), "NOTES-BODY"), 1);
			const deact = resultOf(afterDeactivate, "t3");
			assert.equal(deact.toolName, "deactivate");
			assert.match(deact.text, /^deactivated t1: it collapses to a ref at the next collapse; activate\(t1\) shows it again$/);
			// The epoch: t1 is a ref that keeps its id, the other read and the new output stay inline.
			assert.equal(resultOf(afterEpoch, "t1").text, refFor("t1", notes));
			assert.equal(count(allText(afterEpoch), "NOTES-BODY"), 0);
			assert.equal(resultOf(afterEpoch, "t2").text, other);
			assert.equal(resultOf(afterEpoch, "t4").text, seqOut("ROW"));
			assert.deepEqual(toolCalls(afterEpoch).map((c) => c.id), ["t1", "t2", "t3", "t4"]);
			// The epoch lists the files seen since the start.
			const f = fileListed(afterEpoch, "notes.md");
			assert.deepEqual([f?.chars, f?.unread], [notes.length, false], JSON.stringify(filesListed(afterEpoch)));

			// Same session, next prompt: activate by the f-id the model saw. Ids and collapses survive resume.
			const r2 = await scm({ line, ...again(ws), env, sessionId: r1.sessionId, script: [step(call("activate", { id: f.id })), "back"], prompt: "bring it back" });
			const [beforeAct, afterAct] = r2.captures;
			assert.equal(count(allText(beforeAct), "NOTES-BODY"), 0, "resume showed a deactivated text again");
			assert.equal(resultOf(beforeAct, "t1").text, refFor("t1", notes));
			const act = callTo(afterAct, "activate");
			assert.equal(act.id, "t5");
			assert.equal(resultOf(afterAct, act.id).text, `${f.id} notes.md\n${notes}`, "activate shows the content inline as its result");
			assert.equal(count(allText(afterAct), "NOTES-BODY"), 1);
			assert.match(userVisibleResults(r2)[0].text, new RegExp(`^activated ${f.id}: its content is shown as this result$`));
		});

		it("epochs collapse old outputs to refs that keep their ids; a pinned output survives; between epochs the context only grows", opt, async () => {
			const ws = workspace(BASE, {});
			const r = await scm({
				line, ...ws,
				env: cache(150, 120), // each output ~100 units: an epoch once two unpinned outputs are live, keeping the newest
				script: [
					step(call("bash", { command: seqCmd("OUT-1") })),
					step(call("pin", { id: "t1" })),
					step(call("bash", { command: seqCmd("OUT-2") })),
					step(call("bash", { command: seqCmd("OUT-3") })),
					step(call("bash", { command: seqCmd("OUT-4") })),
					"done",
				],
				prompt: "run them",
			});
			const c = r.captures;
			assert.equal(c.length, 6, failInfo(r));
			// The pin of a live output points at it; nothing is repeated.
			assert.equal(resultOf(c[2], "t2").text, "[t1 is shown above]");
			for (const k of [1, 2, 3]) assertExtends(c[k - 1], c[k], `call ${k} → ${k + 1}`);
			assert.equal(resultOf(c[3], "t3").text, seqOut("OUT-2"));
			// Call 5: the first epoch collapses t3; call 6: the second collapses t4.
			assert.equal(resultOf(c[4], "t3").text, refFor("t3", seqOut("OUT-2")));
			assert.equal(resultOf(c[4], "t4").text, seqOut("OUT-3"));
			const last = c[5];
			assert.deepEqual(
				toolResults(last).map((x) => [x.toolCallId, x.ref ? x.text : "live"]),
				[["t1", "live"], ["t2", "live"], ["t3", refFor("t3", seqOut("OUT-2"))], ["t4", refFor("t4", seqOut("OUT-3"))], ["t5", "live"]],
			);
			assert.equal(resultOf(last, "t1").text, seqOut("OUT-1"), "the pinned output collapsed");
			assert.equal(resultOf(last, "t5").text, seqOut("OUT-4"));
			// Short commands are never collapsed: the calls keep their arguments and ids.
			assert.deepEqual(toolCalls(last).map((x) => [x.id, x.name, x.args.command ?? x.args.id]), [
				["t1", "bash", seqCmd("OUT-1")], ["t2", "pin", "t1"], ["t3", "bash", seqCmd("OUT-2")], ["t4", "bash", seqCmd("OUT-3")], ["t5", "bash", seqCmd("OUT-4")],
			]);
		});

		it("write and edit: the new version is what activate shows; their bodies collapse to refs after an epoch", opt, async () => {
			const ws = workspace(BASE, {});
			const v1 = `status: draft\n${filler(3)}`;
			// Edit bodies collapse from 200 chars on (old + new): two lines (~170 chars) replaced.
			const lines = filler(2);
			const newLines = lines.replaceAll("quick brown fox", "slow grey wolf").replaceAll("naps", "sleeps");
			const v2 = v1.replace("status: draft", "status: final").replace(lines, newLines);
			const edits = [{ oldText: "status: draft", newText: "status: final" }, { oldText: lines.trimEnd(), newText: newLines.trimEnd() }];
			const r = await scm({
				line, ...ws,
				env: cache(40, 10),
				script: [
					step(call("write", { path: "src/app.txt", content: v1 })),
					step(call("edit", { path: "src/app.txt", edits })),
					step(call("activate", { id: "f1" })),
					"done",
				],
				prompt: "write then edit",
			});
			assert.ok(userVisibleResults(r).every((x) => !x.isError), JSON.stringify(userVisibleResults(r)));
			assert.equal(readFileSync(join(ws.cwd, "src/app.txt"), "utf8"), v2);
			const [, afterWrite, afterEdit, afterActivate] = r.captures;
			// The write's body is in its arguments (the model wrote it), once; the file is f1.
			assert.equal(callTo(afterWrite, "write").args.content, v1);
			assert.equal(count(allText(afterWrite), "status: draft"), 1);
			assert.deepEqual(filesListed(afterWrite).map((f) => [f.id, f.path, f.chars]), [["f1", "src/app.txt", v1.length]]);
			// After the edit's epoch the write body is a ref; the path stays.
			assert.deepEqual(callTo(afterEdit, "write").args, { path: "src/app.txt", content: refFor("t1", v1) });
			assert.deepEqual(callTo(afterEdit, "edit").args.edits, edits);
			// activate f1: the edited version, inline as the activate's result; the edit bodies are refs now.
			assert.equal(resultOf(afterActivate, "t3").text, `f1 src/app.txt\n${v2}`);
			assert.deepEqual(callTo(afterActivate, "edit").args.edits, edits.map((e) => ({ oldText: refFor("t2", e.oldText), newText: refFor("t2", e.newText) })));
			assert.equal(count(allText(afterActivate), "status: draft"), 0, "the old version is still shown");
			assert.equal(count(allText(afterActivate), "status: final"), 1);
			// One file, listed once.
			assert.deepEqual(filesListed(afterActivate).map((f) => f.path), ["src/app.txt"]);
		});

		it("ls and grep: discovered files are listed [unread] in a FILES delta; activating a stub reads it inline", opt, async () => {
			const ws = workspace(BASE, { "docs/a.md": "alpha NEEDLE\n", "docs/b.md": "BRAVO-BODY\n", "docs/c.md": "charlie NEEDLE\n", "big.txt": doc("BIG") });
			const r = await scm({
				line, ...ws,
				env: cache(1, 1), // an epoch on every call with live output: deltas come with epochs
				extraArgs: ["--tools", ALL_TOOLS],
				script: [
					step(call("ls", { path: "docs" }), call("read", { path: "big.txt" })),
					step(call("grep", { pattern: "NEEDLE", path: "docs" })),
					// by path: a fixed script can't read the f-id off the delta (the result head shows it below)
					step(call("activate", { id: "docs/b.md" })),
					"done",
				],
				prompt: "look around",
			});
			const [, afterLs, afterGrep, afterActivate] = r.captures;
			const deltas = fileDeltas(afterLs);
			assert.equal(deltas.length, 1, JSON.stringify(deltas));
			for (const p of ["docs/a.md", "docs/b.md", "docs/c.md"]) {
				const f = fileListed(afterLs, p);
				assert.ok(f?.id, `${p} not listed: ${deltas[0]}`);
				assert.equal(f.unread, true, f.line);
				assert.equal(f.line, `${f.id} ${p} ([unread])`);
			}
			assert.deepEqual([fileListed(afterLs, "big.txt").unread, fileListed(afterLs, "big.txt").chars], [false, doc("BIG").length]);
			assert.equal(count(allText(afterLs), "BRAVO-BODY"), 0, "discovery must not read");
			// The delta stays where it was; grep finds nothing new, so no new delta and no duplicates.
			assert.deepEqual(fileDeltas(afterGrep), deltas);
			assert.equal(new Set(filesListed(afterGrep).map((f) => f.path)).size, 4);
			// activate on a stub: read, shown inline with the id from the delta.
			const b = fileListed(afterLs, "docs/b.md");
			assert.equal(resultOf(afterActivate, "t4").text, `${b.id} docs/b.md\nBRAVO-BODY\n`);
			assert.equal(count(allText(afterActivate), "BRAVO-BODY"), 1);
		});

		it("bash: output inline while live, then a ref; files it names are listed [unread]; a long command collapses to its first line + ref", opt, async () => {
			const csv = `x,y\n${Array.from({ length: 40 }, (_, i) => `${i},${i * 2}`).join("\n")}\n`;
			const ws = workspace(BASE, { "data.csv": csv, "README.md": "readme\n" });
			const long = `echo LONG-START && ${"true && ".repeat(40)}echo LONG-END`;
			const r = await scm({
				line, ...ws,
				env: cache(50, 10),
				script: [
					step(call("bash", { command: "cat data.csv && wc -l data.csv" })),
					step(call("bash", { command: long })),
					step(call("bash", { command: "echo done" })),
					"done",
				],
				prompt: "count",
			});
			const [, c2, c3, c4] = r.captures;
			const out = resultOf(c2, "t1").text;
			assert.ok(out.startsWith(csv) && /41 data\.csv/.test(out), out);
			const f = fileListed(c2, "data.csv");
			assert.equal(f?.unread, true, JSON.stringify(filesListed(c2)));
			assert.equal(fileListed(c2, "README.md"), undefined, "only named files are discovered");
			// The next epoch collapses the output; the call keeps its command.
			assert.equal(resultOf(c3, "t1").text, refFor("t1", out));
			assert.equal(callTo(c3, "bash").args.command, "cat data.csv && wc -l data.csv");
			assert.equal(callTo(c3, "bash", (a) => a.command === long)?.args.command, long, "a live long command is shown whole");
			// Then the long command: its first line cut to 79 chars + "…", and a ref.
			const collapsed = toolCalls(c4)[1];
			assert.equal(collapsed.id, "t2");
			assert.equal(collapsed.args.command, `${long.slice(0, 79)}… … [t2 · 1 lines]`);
			assert.equal(count(allText(c4), "LONG-END"), 1, "the output of t2 (short) stays");
		});

		it("a user's !cmd run: the files its command and output name are listed [unread], as a bash call's are", opt, async () => {
			const ws = workspace(BASE, { "docs/guide.md": "guide\n", "docs/notes.md": "notes\n", "README.md": "readme\n" });
			// The FILES list comes with the next epoch: a bash call's output makes one.
			const rpc = await startScmRpc({ line, ...ws, env: cache(50, 10), script: [step(call("bash", { command: seqCmd("ROW") })), "ok"] });
			let r;
			try {
				// `!ls docs` in the TUI; RPC's `bash` runs it the same way (a bashExecution message).
				const run = await rpc.send({ type: "bash", command: "ls docs" });
				assert.equal(run.success, true, JSON.stringify(run));
				await rpc.prompt("what is in docs?");
			} finally {
				r = checkedRpc(await rpc.close());
			}
			const c = r.captures.at(-1);
			assert.match(allText(c), /guide\.md/, "the run reaches the model");
			for (const p of ["docs/guide.md", "docs/notes.md"]) assert.equal(fileListed(c, p)?.unread, true, JSON.stringify(filesListed(c)));
			assert.equal(fileListed(c, "README.md"), undefined, "only named files are discovered");
		});

		// Polled (SCM_WATCH_POLL=always: no inotify at all, as for a change another machine makes on a network
		// filesystem): the store only learns of the change through the poller (waitForIndexed would time out).
		for (const [what, env] of [
			["the watcher's version", {}],
			["the poller's version (polling only, as on a network filesystem)", { SCM_WATCH_POLL: "always", SCM_WATCH_POLL_MS: "50" }],
		]) it(`an external edit between prompts: activating the file shows ${what}`, opt, async () => {
			const v1 = doc("ALPHA-1");
			const v2 = doc("ALPHA-2");
			const ws = workspace(BASE, { "a.md": v1 });
			const rpc = await startScmRpc({
				line, ...ws,
				env: { ...cache(50, 10), ...env },
				script: [step(call("read", { path: "a.md" })), step(call("bash", { command: seqCmd("ROW") })), "one", step(call("activate", { id: "f1" })), "two"],
			});
			let r;
			try {
				await rpc.prompt("first");
				writeFileSync(join(ws.cwd, "a.md"), v2);
				await waitForIndexed(ws.cwd, { "a.md": v2 });
				await rpc.prompt("second");
			} finally {
				r = checkedRpc(await rpc.close());
			}
			const last = r.captures.at(-1);
			assert.equal(resultOf(last, "t1").text, refFor("t1", v1), "the read collapsed at the bash epoch");
			assert.equal(resultOf(last, "t3").text, `f1 a.md\n${v2}`);
			// The old text only as removed lines of the CHANGED notice (issue 10), never as current.
			assert.equal(count(allText(last), "ALPHA-1"), count(allText(last), "-ALPHA-1"));
		});

		// A live read counts as "shown above" only while it shows the file's current version.
		it("after the agent's own edit, activate shows the edited version, not a pointer to the live read of the old one", opt, async () => {
			const ws = workspace(BASE, { "a.md": "ALPHA-1\n" });
			const r = await scm({
				line, ...ws,
				script: [
					step(call("read", { path: "a.md" })),
					step(call("edit", { path: "a.md", edits: [{ oldText: "ALPHA-1", newText: "ALPHA-2" }] })),
					step(call("activate", { id: "f1" })),
					step(call("activate", { id: "f1" })),
					"done",
				],
				prompt: "go",
			});
			const last = r.captures.at(-1);
			assert.equal(resultOf(last, "t1").text, "ALPHA-1\n", "the read keeps what it showed");
			assert.equal(resultOf(last, "t3").text, "f1 a.md\nALPHA-2\n");
			// Unchanged since t3 showed it: a pointer, not a second copy.
			assert.equal(resultOf(last, "t4").text, "[f1 is shown above]");
		});

		it("an external edit while the old read is still live: activate shows the new version, not a pointer to the stale one", opt, async () => {
			const ws = workspace(BASE, { "a.md": "ALPHA-1\n" });
			const rpc = await startScmRpc({ line, ...ws, script: [step(call("read", { path: "a.md" })), "one", step(call("activate", { id: "f1" })), "two"] });
			let r;
			try {
				await rpc.prompt("first");
				writeFileSync(join(ws.cwd, "a.md"), "ALPHA-2\n");
				await waitForIndexed(ws.cwd, { "a.md": "ALPHA-2\n" });
				await rpc.prompt("second");
			} finally {
				r = checkedRpc(await rpc.close());
			}
			assert.equal(resultOf(r.captures.at(-1), "t2").text, "f1 a.md\nALPHA-2\n");
		});

		it("/context lists the objects, pins, totals and the cache layout's counters; the status line shows a gauge", opt, async () => {
			const text = doc("ALPHA-TEXT");
			const ws = workspace(BASE, { "a.md": text });
			const rpc = await startScmRpc({ line, ...ws, script: [step(call("read", { path: "a.md" })), step(call("pin", { id: "f1" })), "one"] });
			let r, resp;
			try {
				await rpc.prompt("first");
				// A handled command starts no run (0.73 answers without a disposition): wait for the report itself.
				resp = await rpc.send({ type: "prompt", message: "/context" });
				await rpc.waitFor((x) => x.type === "extension_ui_request" && x.method === "notify" && (x.message ?? "").startsWith("Active ("));
			} finally {
				r = checkedRpc(await rpc.close());
			}
			assert.equal(resp.success, true);
			assert.equal(r.captures.length, 3, "/context must not call the model");
			// pin of a live read points at it.
			assert.equal(resultOf(r.captures[2], "t2").text, "[f1 is shown above]");
			const report = r.records.find((x) => x.type === "extension_ui_request" && x.method === "notify" && x.message.startsWith("Active (")).message;
			// The ids the model sees: f1, not a hash prefix.
			assert.match(report, new RegExp(`^Active \\(1\\):\\n  📌 f1 file a\\.md ${text.length} chars\\n`));
			assert.match(report, /\nPool: \d+ objects — 1 files \(0 unread, 0 deleted\)/);
			assert.match(report, /\nPinned \(1\): a\.md\n/);
			assert.match(report, /last model call ~\d+ tokens \(pi alone: ~\d+\)/);
			// The workspace is local: watched by the platform's watcher, not polled.
			assert.match(report, /\nWatcher: 1 directory\n/);
			assert.match(report, /\nCache layout: 0 collapses, 0 folds; 0 outputs and 0 write\/edit\/bash bodies collapsed to refs; live output ~\d+ tokens$/);
			const gauges = r.records.filter((x) => x.type === "extension_ui_request" && x.method === "setStatus" && x.statusKey === "scm" && x.statusText);
			assert.equal(gauges.length, 3, "one gauge update per model call");
			assert.match(gauges.at(-1).statusText, /^ctx ~\d+(\.\d)?k? tok \(pi ~\d+(\.\d)?k?\)$/);
		});

		it("the package does not switch on tools the user has off (ls/find/grep are off by default)", opt, async () => {
			const r = await scm({ line, ...workspace(BASE, {}), script: ["hi"], prompt: "hi" });
			const tools = r.captures[0].tools;
			for (const t of ["ls", "find", "grep"]) assert.ok(!tools.includes(t), `${t} switched on: ${tools}`);
			const withList = await scm({ line, ...workspace(BASE, {}), extraArgs: ["--tools", "read,bash,activate"], script: ["hi"], prompt: "hi" });
			assert.deepEqual([...withList.captures[0].tools].sort(), ["activate", "bash", "read"]);
		});
	});

	describe(`pi ${line}: context (spec layout, SCM_LAYOUT=spec)`, () => {
		it("read → METADATA_POOL entry, a toolcall_ref result and one ACTIVE_CONTENT block; deactivate → gone, still in the pool", opt, async () => {
			const ws = workspace(BASE, { "hello.txt": "HELLO-CONTENT\n", "other.md": "OTHER-BODY\n" });
			const r = await scm({
				line, ...ws,
				env: { SCM_LAYOUT: "spec" },
				script: [step(call("read", { path: "hello.txt" }), call("read", { path: "other.md" })), step(call("deactivate", { id: "hello.txt" })), "done"],
				prompt: "read hello.txt",
			});
			const [first, second, third] = r.captures;
			assert.match(first.systemPrompt, /METADATA_POOL/);
			assert.match(first.systemPrompt, /ACTIVE_CONTENT/);
			assert.equal(header(first), null, "the cache layout's header in the spec layout");
			assert.deepEqual(pool(first), []);

			// Call 2: exactly one copy of the text, inside the file's active block; results are refs.
			assert.equal(count(allText(second), "HELLO-CONTENT"), 1, allText(second));
			assert.equal(activeFile(second, "hello.txt")?.body, "HELLO-CONTENT\n");
			const [res] = results(second);
			assert.equal(res.toolName, "read");
			assert.deepEqual([res.ref?.tool, res.ref?.status], ["read", "ok"], res.text);
			assert.match(res.ref.id, /^toolcall:/);
			// The file is listed (read, not [unread]); a read's toolcall is not (the file is what is shown).
			assert.equal(poolFile(second, "hello.txt").unread, false);
			assert.deepEqual(pool(second).map((e) => e.type), ["file", "file"]);
			// Cache-friendly order: pool first, chat, active blocks last.
			const roles = convo(second).map((m) => (messageText(m).startsWith("METADATA_POOL") ? "pool" : messageText(m).startsWith("ACTIVE_CONTENT") ? "active" : m.role));
			assert.deepEqual(roles, ["pool", "user", "assistant", "toolResult", "toolResult", "active", "active"]);

			// Call 3: deactivated at once, still in the pool; the other file stays active.
			assert.equal(activeFile(third, "hello.txt"), undefined);
			assert.equal(count(allText(third), "HELLO-CONTENT"), 0);
			assert.ok(poolFile(third, "hello.txt"));
			assert.equal(activeFile(third, "other.md")?.body, "OTHER-BODY\n");
			assert.match(userVisibleResults(r).at(-1).text, /^deactivated \S+: its metadata stays in the pool$/);
		});
	});
}

// A stream stopped after the model asked for tools (the user aborts; a recorded session has the same
// with a `terminated` error, which both pi lines here retry instead of keeping): pi does not run them,
// keeps the message, and its provider conversion drops it with its calls. A stand-in result for one of
// them would reach the provider without its call (Anthropic refuses such a request). Both layouts.
for (const line of PI_LINES) {
	const missing = missingTools(line);
	for (const layout of ["cache", "spec"]) {
		it(`pi ${line} (${layout} layout): a call aborted after asking for tools gets no results for them; the next prompt goes on`, { skip: missing ? `pi ${line} not set up (${missing})` : false }, async () => {
			const ws = workspace(BASE, { "hello.txt": "HELLO-CUT\n" });
			const cut = { toolCalls: [call("read", { path: "hello.txt" }, "cut-1"), call("bash", { command: "true" }, "cut-2")], stopReason: "aborted" };
			const rpc = await startScmRpc({ line, ...ws, env: { SCM_LAYOUT: layout }, script: [cut, "after the cut"] });
			let r;
			try {
				await rpc.prompt("first");
				await rpc.prompt("second");
			} finally {
				r = await rpc.close();
			}
			assert.equal(r.exitCode, 0, failInfo(r));
			const last = r.captures.at(-1);
			assert.ok(r.captures.length >= 2, failInfo(r));
			const dropped = new Set(
				convo(last)
					.filter((m) => m.role === "assistant" && ["error", "aborted"].includes(m.stopReason))
					.flatMap((m) => (m.content ?? []).filter((b) => b.type === "toolCall").map((b) => b.id)),
			);
			assert.equal(dropped.size, 2, `the aborted message with its two calls: ${JSON.stringify(convo(last))}`);
			const stray = convo(last).filter((m) => m.role === "toolResult" && dropped.has(m.toolCallId));
			assert.deepEqual(stray, [], "results for calls the provider never sees");
			assert.ok(convo(last).some((m) => m.role === "user" && messageText(m).includes("second")));
		});
	}
}

for (const line of PI_LINES) {
	const missing = missingTools(line);
	it(`pi ${line}: a second extension registering "read" is refused by pi with an error naming this package`, { skip: missing ? `pi ${line} not set up` : false }, async () => {
		// Documents pi's own behaviour for the README's troubleshooting section: tool names are unique
		// across extensions; the later one fails to load (and -p exits 1).
		const ws = workspace(BASE, { "hello.txt": "HELLO\n" });
		const r = await runScm({ line, ...ws, extensions: [PROBE_EXTENSION], env: { SCM_PROBE_OVERRIDE_READ: "1" }, script: ["done"], prompt: "go" });
		assert.match(r.stderr, /Failed to load extension ".*probe-extension\.ts": Tool "read" conflicts with .*pi\/index\.js/);
	});
}

for (const line of PI_LINES) {
	const missing = missingTools(line);
	describe(`pi ${line}: configuration`, { skip: missing ? `pi ${line} not set up` : false }, () => {
		it("settings.json (selfContextManager.cachePolicy, .layout) configure the layout; SCM_CACHE_* / SCM_LAYOUT win", async () => {
			const script = [1, 2, 3].map((n) => step(call("bash", { command: seqCmd(`OUT-${n}`) }))).concat(["done"]);
			const shown = (r) => [1, 2, 3].map((n) => (resultOf(r.captures.at(-1), `t${n}`)?.ref ? "ref" : "live"));
			const small = { selfContextManager: { cachePolicy: { high: 150, low: 120 } } };
			const viaSettings = await scm({ line, ...workspace(BASE, {}), settings: small, script, prompt: "go" });
			assert.deepEqual(shown(viaSettings), ["ref", "ref", "live"], "cachePolicy from settings");
			const envWins = await scm({ line, ...workspace(BASE, {}), settings: small, env: { SCM_CACHE_HIGH: "10000" }, script, prompt: "go" });
			assert.deepEqual(shown(envWins), ["live", "live", "live"], "SCM_CACHE_HIGH overrides settings");
			const defaults = await scm({ line, ...workspace(BASE, {}), script, prompt: "go" });
			assert.deepEqual(shown(defaults), ["live", "live", "live"], "default high 10000");

			const spec = { selfContextManager: { layout: "spec" } };
			const viaLayout = await scm({ line, ...workspace(BASE, {}), settings: spec, script: ["hi"], prompt: "hi" });
			assert.deepEqual(pool(viaLayout.captures[0]), [], "layout spec from settings");
			const layoutEnv = await scm({ line, ...workspace(BASE, {}), settings: spec, env: { SCM_LAYOUT: "cache" }, script: ["hi"], prompt: "hi" });
			assert.ok(header(layoutEnv.captures[0]), "SCM_LAYOUT overrides settings");
			assert.equal(pool(layoutEnv.captures[0]), null);
		});

		it("a configuration error or SCM_DISABLE=1 leaves pi as it is, with a notice for the error", async () => {
			const ws = workspace(BASE, { "a.md": "ALPHA\n" });
			const script = [step(call("read", { path: "a.md" })), "done"];
			for (const [env, message] of [
				[{ SCM_STORE: "postgres" }, /configuration error: SCM_STORE must be "embedded" or "xtdb"/],
				[{ SCM_LAYOUT: "tail" }, /configuration error: SCM_LAYOUT must be "cache" or "spec", got "tail"/],
				[{ SCM_CACHE_HIGH: "-1" }, /configuration error: SCM_CACHE_HIGH must be a non-negative integer/],
				[{ SCM_WATCH_POLL: "often" }, /configuration error: SCM_WATCH_POLL \(selfContextManager\.watchPoll\) must be "auto", "always" or "never", got "often"/],
			]) {
				const bad = await scm({ line, ...again(ws), env, script, prompt: "go" });
				assert.match(bad.stderr, message);
				assert.equal(header(bad.captures[0]), null);
				assert.equal(pool(bad.captures[0]), null);
				assert.ok(!bad.captures[0].tools.includes("activate"), "tools registered despite the error");
				assert.equal(messageText(convo(bad.captures[1]).at(-1)), "ALPHA\n", "pi's own read result");
			}
			const badSettings = await scm({ line, ...workspace(BASE, { "a.md": "ALPHA\n" }), settings: { selfContextManager: { cachePolicy: { high: "50" } } }, script, prompt: "go" });
			assert.match(badSettings.stderr, /configuration error: selfContextManager\.cachePolicy\.high must be a non-negative integer, got "50"/);
			assert.equal(header(badSettings.captures[0]), null);
			const off = await scm({ line, ...again(ws), env: { SCM_DISABLE: "1" }, script, prompt: "go" });
			assert.equal(header(off.captures[1]), null);
			assert.equal(pool(off.captures[1]), null);
			assert.deepEqual(off.captures[0].tools, ["read", "bash", "edit", "write"]);
			assert.equal(off.stderr.includes("self-context-manager"), false, off.stderr);
		});
	});
}
