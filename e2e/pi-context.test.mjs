// The pi package in a real pi agent loop (scripted faux model, embedded store, offline), on both
// pi lines: what the model receives on every call after read / activate / deactivate / pin,
// auto-collapse, write / edit, ls / grep discovery and bash.
// Run: node --test e2e/   (needs scripts/pi/setup.sh and a built addon)
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { PROBE_EXTENSION } from "./harness.mjs";
import { join } from "node:path";
import {
	PI_LINES, ALL_TOOLS, tempBase, workspace, runScm, missingTools, failInfo, convo, allText, count, pool, active, results,
	poolFile, activeFile, again, userVisibleResults, call, step, messageText,
} from "./fixtures/scm-pi.mjs";

const BASE = tempBase("pi-context");

for (const line of PI_LINES) {
	const missing = missingTools(line);
	const opt = { skip: missing ? `pi ${line} not set up (${missing})` : false };

	describe(`pi ${line}: context`, () => {
		it("read: the file text reaches the model once, in an active block; the tool result is a toolcall_ref", opt, async () => {
			const ws = workspace(BASE, { "hello.txt": "HELLO-CONTENT\n" });
			const r = await runScm({ line, ...ws, script: [step(call("read", { path: "hello.txt" })), "done"], prompt: "read hello.txt" });
			assert.equal(r.exitCode, 0, failInfo(r));
			assert.equal(r.captures.length, 2, failInfo(r));
			const [first, second] = r.captures;

			// Call 1: our tools and system prompt section; an empty pool, the user's prompt.
			for (const t of ["read", "activate", "deactivate", "pin", "unpin"]) assert.ok(first.tools.includes(t), `tool ${t}: ${first.tools}`);
			assert.equal(first.tools.filter((t) => t === "read").length, 1);
			assert.match(first.systemPrompt, /METADATA_POOL/);
			assert.match(first.systemPrompt, /ACTIVE_CONTENT/);
			assert.deepEqual(pool(first), []);

			// Call 2: exactly one copy of the text, inside the file's active block.
			assert.equal(count(allText(second), "HELLO-CONTENT"), 1, allText(second));
			const block = activeFile(second, "hello.txt");
			assert.ok(block, `no active block for hello.txt: ${JSON.stringify(active(second))}`);
			assert.equal(block.body, "HELLO-CONTENT\n");
			const [res] = results(second);
			assert.equal(res.toolName, "read");
			assert.ok(res.ref, `tool result is not a toolcall_ref: ${res.text}`);
			assert.deepEqual([res.ref.tool, res.ref.status], ["read", "ok"]);
			// The ref names a toolcall object in the pool; the file is in the pool too, not [unread].
			assert.ok(pool(second).some((e) => e.id === res.ref.id && e.type === "toolcall"));
			assert.equal(poolFile(second, "hello.txt").unread, false);
			// Cache-friendly order: pool first, chat, active blocks last.
			const roles = convo(second).map((m) => (messageText(m).startsWith("METADATA_POOL") ? "pool" : messageText(m).startsWith("ACTIVE_CONTENT") ? "active" : m.role));
			assert.deepEqual(roles, ["pool", "user", "assistant", "toolResult", "active"]);

			// The user still sees the file in the tool result, and pi's session file keeps it.
			const [seen] = userVisibleResults(r);
			assert.match(seen.text, /HELLO-CONTENT/);
			const stored = readFileSync(r.sessionFile, "utf8");
			assert.match(stored, /HELLO-CONTENT/);
		});

		it("deactivate: gone from the next call but still in the pool; activate (by id prefix): back", opt, async () => {
			const ws = workspace(BASE, { "notes.md": "NOTES-BODY\n", "other.md": "OTHER-BODY\n" });
			// Call 3 deactivates by path; call 5 activates by the id prefix the test reads from call 4.
			const r1 = await runScm({
				line, ...ws,
				script: [
					step(call("read", { path: "notes.md" }), call("read", { path: "other.md" })),
					step(call("deactivate", { id: "notes.md" })),
					"deactivated",
				],
				prompt: "go",
			});
			assert.equal(r1.exitCode, 0, failInfo(r1));
			const [, afterRead, afterDeactivate] = r1.captures;
			assert.ok(activeFile(afterRead, "notes.md"));
			assert.equal(activeFile(afterDeactivate, "notes.md"), undefined, "deactivated file still active");
			assert.equal(count(allText(afterDeactivate), "NOTES-BODY"), 0);
			assert.ok(poolFile(afterDeactivate, "notes.md"), "deactivated file left the pool");
			assert.ok(activeFile(afterDeactivate, "other.md"), "the other file stays active");
			const deact = results(afterDeactivate).at(-1);
			assert.equal(deact.ref.status, "ok");
			// The user-visible result says plainly what changed.
			assert.match(userVisibleResults(r1).at(-1).text, /notes\.md|deactivat/i);

			// Same session, next prompt: activate by a 12-char id prefix as shown in the pool.
			const prefix = poolFile(afterDeactivate, "notes.md").id.slice(0, 12);
			const r2 = await runScm({ line, ...again(ws), sessionId: r1.sessionId, script: [step(call("activate", { id: prefix })), "back"], prompt: "bring it back" });
			assert.equal(r2.exitCode, 0, failInfo(r2));
			const [beforeAct, afterAct] = r2.captures;
			assert.equal(activeFile(beforeAct, "notes.md"), undefined, "resume re-activated a deactivated file");
			assert.equal(activeFile(afterAct, "notes.md")?.body, "NOTES-BODY\n");
			assert.equal(count(allText(afterAct), "NOTES-BODY"), 1);
			assert.doesNotMatch(userVisibleResults(r2)[0].text, /already active/, "activate must say it activated");
		});

		it("auto-collapse drops old tool outputs from the tail but keeps their refs; a pinned output survives", opt, async () => {
			const ws = workspace(BASE, {});
			// printf keeps each output text out of its own command line: OUT-n appears only in outputs.
			const bash = (n) => call("bash", { command: `printf 'OUT-%s\\n' ${n}` }, `b${n}`);
			const r = await runScm({
				line, ...ws,
				env: { SCM_POLICY_PER_TURN: "2" },
				script: [step(bash(1)), step(call("pin", { id: "b1" })), step(bash(2)), step(bash(3)), step(bash(4)), "done"],
				prompt: "run them",
			});
			assert.equal(r.exitCode, 0, failInfo(r));
			const last = r.captures.at(-1);
			const text = allText(last);
			// per_turn 2: the two most recent outputs stay, the pinned one too; OUT-2 collapsed.
			assert.equal(count(text, "OUT-1"), 1, "pinned output collapsed");
			assert.equal(count(text, "OUT-2"), 0, "old output not collapsed");
			assert.equal(count(text, "OUT-3"), 1);
			assert.equal(count(text, "OUT-4"), 1);
			// Every bash call still has its result, as a ref, and every output is still in the pool.
			const refs = results(last).filter((x) => x.toolName === "bash");
			assert.deepEqual(refs.map((x) => x.toolCallId), ["b1", "b2", "b3", "b4"]);
			assert.ok(refs.every((x) => x.ref && x.ref.status === "ok"), JSON.stringify(refs));
			const ids = new Set(pool(last).map((e) => e.id));
			assert.ok(refs.every((x) => ids.has(x.ref.id)));
			// The collapsed one was active earlier (it reached the model once, as an output).
			assert.equal(count(allText(r.captures[3]), "OUT-2"), 1);
			// Every tool call in what the model got has exactly one result.
			for (const c of r.captures) {
				const calls = convo(c).flatMap((m) => (m.role === "assistant" ? m.content.filter((b) => b.type === "toolCall").map((b) => b.id) : []));
				assert.deepEqual(results(c).map((x) => x.toolCallId), calls);
			}
		});

		it("write and edit: each makes a new version, shown once; the old text is gone", opt, async () => {
			const ws = workspace(BASE, {});
			const r = await runScm({
				line, ...ws,
				script: [
					step(call("write", { path: "src/app.txt", content: "VERSION-ONE\n" })),
					step(call("edit", { path: "src/app.txt", edits: [{ oldText: "VERSION-ONE", newText: "VERSION-TWO" }] })),
					"done",
				],
				prompt: "write then edit",
			});
			assert.equal(r.exitCode, 0, failInfo(r));
			assert.ok(userVisibleResults(r).every((x) => !x.isError), JSON.stringify(userVisibleResults(r)));
			const [, afterWrite, afterEdit] = r.captures;
			assert.equal(activeFile(afterWrite, "src/app.txt")?.body, "VERSION-ONE\n");
			// The write's own arguments carry the text once (the model wrote it); the file block once more.
			const block = activeFile(afterEdit, "src/app.txt");
			assert.equal(block?.body, "VERSION-TWO\n");
			assert.equal(pool(afterEdit).filter((e) => e.type === "file").length, 1, "one object per file");
			assert.ok(results(afterEdit).every((x) => x.ref), "write/edit results are refs");
		});

		it("ls and grep: discovered files are [unread] stubs; activating a stub reads it", opt, async () => {
			const ws = workspace(BASE, { "docs/a.md": "alpha NEEDLE\n", "docs/b.md": "BRAVO-BODY\n", "docs/c.md": "charlie NEEDLE\n" });
			const r = await runScm({
				line, ...ws,
				extraArgs: ["--tools", ALL_TOOLS],
				script: [
					step(call("ls", { path: "docs" })),
					step(call("grep", { pattern: "NEEDLE", path: "docs" })),
					step(call("activate", { id: "docs/b.md" })),
					"done",
				],
				prompt: "look around",
			});
			assert.equal(r.exitCode, 0, failInfo(r));
			const [, afterLs, afterGrep, afterActivate] = r.captures;
			for (const f of ["docs/a.md", "docs/b.md", "docs/c.md"]) {
				const e = poolFile(afterLs, f);
				assert.ok(e, `${f} not discovered by ls: ${JSON.stringify(pool(afterLs))}`);
				assert.equal(e.unread, true, e.line);
			}
			assert.equal(count(allText(afterLs), "BRAVO-BODY"), 0, "discovery must not read");
			// grep adds no duplicates; its output is a toolcall object (active), its result a ref.
			assert.equal(pool(afterGrep).filter((e) => e.type === "file").length, 3);
			assert.ok(results(afterGrep).every((x) => x.ref));
			// activate on a stub: read and upgraded.
			const b = poolFile(afterActivate, "docs/b.md");
			assert.equal(b.unread, false, b.line);
			assert.equal(activeFile(afterActivate, "docs/b.md")?.body, "BRAVO-BODY\n");
			assert.equal(count(allText(afterActivate), "BRAVO-BODY"), 1);
		});

		it("bash: the output is a toolcall object; files it names are discovered", opt, async () => {
			const ws = workspace(BASE, { "data.csv": "x,y\n1,2\n", "README.md": "readme\n" });
			const r = await runScm({ line, ...ws, script: [step(call("bash", { command: "wc -l data.csv" }, "c1")), "done"], prompt: "count" });
			assert.equal(r.exitCode, 0, failInfo(r));
			const last = r.captures.at(-1);
			const [res] = results(last);
			assert.deepEqual([res.toolName, res.ref?.tool, res.ref?.status], ["bash", "bash", "ok"]);
			const obj = pool(last).find((e) => e.id === res.ref.id);
			assert.equal(obj?.type, "toolcall");
			const out = active(last).find((b) => b.id === res.ref.id);
			assert.match(out?.body ?? "", /2 data\.csv/);
			const csv = poolFile(last, "data.csv");
			assert.ok(csv, `data.csv not discovered: ${JSON.stringify(pool(last))}`);
			assert.equal(csv.unread, true);
			assert.equal(poolFile(last, "README.md"), undefined, "only named files are discovered");
		});

		it("the package does not switch on tools the user has off (ls/find/grep are off by default)", opt, async () => {
			const ws = workspace(BASE, {});
			const r = await runScm({ line, ...ws, script: ["hi"], prompt: "hi" });
			assert.equal(r.exitCode, 0, failInfo(r));
			const tools = r.captures[0].tools;
			for (const t of ["ls", "find", "grep"]) assert.ok(!tools.includes(t), `${t} switched on: ${tools}`);
			const withList = await runScm({ line, ...workspace(BASE, {}), extraArgs: ["--tools", "read,bash,activate"], script: ["hi"], prompt: "hi" });
			assert.equal(withList.exitCode, 0, failInfo(withList));
			assert.deepEqual([...withList.captures[0].tools].sort(), ["activate", "bash", "read"]);
		});
	});
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
		it("pi settings (selfContextManager in settings.json) configure the policy; SCM_* environment wins", async () => {
			const bash = (n) => call("bash", { command: `printf 'OUT-%s\\n' ${n}` }, `b${n}`);
			const script = [step(bash(1)), step(bash(2)), step(bash(3)), "done"];
			const viaSettings = await runScm({ line, ...workspace(BASE, {}), settings: { selfContextManager: { policy: { perTurn: 1 } } }, script, prompt: "go" });
			assert.equal(viaSettings.exitCode, 0, failInfo(viaSettings));
			const last = allText(viaSettings.captures.at(-1));
			assert.deepEqual([1, 2, 3].map((n) => count(last, `OUT-${n}`)), [0, 0, 1], "perTurn 1 from settings");
			const envWins = await runScm({ line, ...workspace(BASE, {}), settings: { selfContextManager: { policy: { perTurn: 1 } } }, env: { SCM_POLICY_PER_TURN: "3" }, script, prompt: "go" });
			assert.deepEqual([1, 2, 3].map((n) => count(allText(envWins.captures.at(-1)), `OUT-${n}`)), [1, 1, 1], "SCM_POLICY_PER_TURN overrides settings");
		});

		it("a configuration error or SCM_DISABLE=1 leaves pi as it is, with a notice for the error", async () => {
			const ws = workspace(BASE, { "a.md": "ALPHA\n" });
			const script = [step(call("read", { path: "a.md" })), "done"];
			const bad = await runScm({ line, ...ws, env: { SCM_STORE: "postgres" }, script, prompt: "go" });
			assert.equal(bad.exitCode, 0, failInfo(bad));
			assert.match(bad.stderr, /configuration error: SCM_STORE must be "embedded" or "xtdb"/);
			assert.equal(pool(bad.captures[0]), null);
			assert.ok(!bad.captures[0].tools.includes("activate"), "tools registered despite the error");
			assert.equal(messageText(convo(bad.captures[1]).at(-1)), "ALPHA\n", "pi's own read result");
			const off = await runScm({ line, ...again(ws), env: { SCM_DISABLE: "1" }, script, prompt: "go" });
			assert.equal(off.exitCode, 0, failInfo(off));
			assert.equal(pool(off.captures[1]), null);
			assert.deepEqual(off.captures[0].tools, ["read", "bash", "edit", "write"]);
			assert.equal(off.stderr.includes("self-context-manager"), false, off.stderr);
		});
	});
}
