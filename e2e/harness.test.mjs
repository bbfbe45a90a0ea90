// Offline end-to-end checks of the harness against real pi on both release lines.
// Run: node --test e2e/   (needs scripts/pi/setup.sh; skips with a message otherwise)
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileLines, runPi, startPiRpc, missingTools, readSession, messageText, PROBE_EXTENSION } from "./harness.mjs";

// All run dirs (and pi's own temp files) go under one dir, removed at the end unless SCM_E2E_KEEP=1.
const BASE = mkdtempSync(join(tmpdir(), "scm-e2e-"));
process.env.TMPDIR = BASE;
after(() => { if (process.env.SCM_E2E_KEEP !== "1") rmSync(BASE, { recursive: true, force: true }); });

const text = (m) => messageText(m);
const lastMessage = (capture) => capture.messages[capture.messages.length - 1];
const failInfo = (r) => `exit=${r.exitCode} timedOut=${r.timedOut} stderr=${r.stderr.slice(-1500)} runDir=${r.runDir} (SCM_E2E_KEEP=1 keeps it)`;

// A long pi 0.73 run writes more events than one string holds: the harness
// reads them a line at a time, lines longer than its read buffer and
// characters split across two reads included.
it("fileLines gives every line of a file, whatever its length", () => {
	const file = join(BASE, "lines.jsonl");
	const lines = ["", "a", "é".repeat(9_000_000), JSON.stringify({ x: "ü" }), "z".repeat(17_000_000), "last"];
	writeFileSync(file, lines.join("\n") + "\n");
	assert.deepEqual([...fileLines(file)].map((l) => l.length), lines.map((l) => l.length));
	assert.ok([...fileLines(file)].every((l, i) => l === lines[i]));
});

for (const line of ["0.73", "1.5", "1.6"]) {
	const missing = missingTools(line);
	const opt = { skip: missing ? `pi ${line} not set up (${missing})` : false };
	describe(`pi ${line}`, () => {
		it("scripted read tool call, then text: 2 model calls, the second sees the tool result", opt, async () => {
			const r = await runPi({
				line,
				script: [{ toolCalls: [{ name: "read", args: { path: "hello.txt" } }] }, "done"],
				prompt: "read hello.txt",
				...withFile("hello.txt", "HELLO-CONTENT\n"),
			});
			assert.equal(r.exitCode, 0, failInfo(r));
			assert.equal(r.captures.length, 2, failInfo(r));
			const [first, second] = r.captures;
			assert.ok(first.tools.includes("read"), `tools: ${first.tools}`);
			assert.ok(first.systemPrompt.length > 100, "system prompt captured");
			assert.deepEqual(first.messages.filter((m) => m.role !== "system").map((m) => m.role), ["user"]);
			const result = second.messages.find((m) => m.role === "toolResult");
			assert.ok(result, "second call has a toolResult");
			assert.equal(result.toolName, "read");
			assert.match(text(result), /HELLO-CONTENT/);
			assert.ok(r.events.some((e) => e.type === "tool_execution_end" && e.toolName === "read"));
			assert.equal(text(r.events.filter((e) => e.type === "message_end").at(-1).message), "done");
			// system prompt placement differs per line
			if (line === "0.73") assert.deepEqual(first.contextKeys.sort(), ["messages", "systemPrompt", "tools"]);
			else {
				assert.deepEqual(first.contextKeys, ["messages"]);
				assert.equal(first.messages[0].role, "system");
			}
		});

		it("context hook: a marker appended by the probe reaches the model on every call", opt, async () => {
			const marker = `MARKER-${line}-${Date.now()}`;
			const r = await runPi({
				line,
				extensions: [PROBE_EXTENSION],
				env: { SCM_PROBE_MARKER: marker },
				script: [{ toolCalls: [{ name: "read", args: { path: "hello.txt" } }] }, "ok"],
				prompt: "go",
				...withFile("hello.txt", "x\n"),
			});
			assert.equal(r.exitCode, 0, failInfo(r));
			assert.equal(r.captures.length, 2, failInfo(r));
			for (const c of r.captures) assert.equal(text(lastMessage(c)), marker);
			const ctx = r.probe.filter((p) => p.ev === "context");
			assert.equal(ctx.length, 2);
			assert.ok(ctx.every((p) => !p.roles.includes("system")), "context hook never sees system messages");
			const withSystem = r.probe.filter((p) => p.ev === "context_with_system");
			if (line !== "0.73") {
				assert.equal(withSystem.length, 2);
				assert.equal(withSystem[0].roles[0], "system");
				assert.equal(withSystem[0].roles.at(-1), "user", "context_with_system runs after context and sees the marker");
			} else assert.equal(withSystem.length, 0);
			const start = r.probe.find((p) => p.ev === "session_start");
			assert.equal(start.reason, "startup");
			assert.equal(start.sessionId, r.sessionId);
		});

		it("overriding built-in read by delegating to createReadToolDefinition(ctx.cwd)", opt, async () => {
			const r = await runPi({
				line,
				extensions: [PROBE_EXTENSION],
				env: { SCM_PROBE_OVERRIDE_READ: "1", SCM_PROBE_EXTRA_TOOL: "1" },
				script: [{ toolCalls: [{ name: "read", args: { path: "hello.txt" } }] }, "ok"],
				prompt: "go",
				...withFile("hello.txt", "ORIGINAL\n"),
			});
			assert.equal(r.exitCode, 0, failInfo(r));
			const result = r.captures[1].messages.find((m) => m.role === "toolResult");
			assert.equal(text(result), "[probe-read] ORIGINAL\n");
			const calls = r.probe.filter((p) => p.ev === "read_override");
			assert.equal(calls.length, 1);
			assert.equal(calls[0].cwd, r.cwd);
			assert.equal(r.captures[0].tools.filter((t) => t === "read").length, 1, "override replaces, not duplicates");
			// defaultActive: false is honoured by 1.x only
			assert.equal(r.captures[0].tools.includes("probe_echo"), line === "0.73");
			// the spread keeps promptSnippet: the tool still shows up in the system prompt's tool list
			assert.match(r.captures[0].systemPrompt, /- read: Read file contents/);
		});

		it("resume by session id: the second process sees the first exchange; one header in the file", opt, async () => {
			const first = await runPi({ line, script: ["one"], prompt: "first" });
			assert.equal(first.exitCode, 0, failInfo(first));
			const again = await runPi({ line, cwd: first.cwd, agentDir: first.agentDir, sessionId: first.sessionId, script: ["two"], prompt: "second" });
			assert.equal(again.exitCode, 0, failInfo(again));
			assert.equal(again.sessionId, first.sessionId);
			const roles = again.captures[0].messages.filter((m) => m.role !== "system").map((m) => `${m.role}:${text(m)}`);
			assert.deepEqual(roles, ["user:first", "assistant:one", "user:second"]);
			const entries = readSession(again.sessionFile);
			assert.equal(entries.filter((e) => e.type === "session").length, 1);
			assert.equal(entries[0].id, first.sessionId);
		});

		it("rpc: fork re-runs session_start(reason fork) (twice before 1.6); extension compaction replaces the LLM summary", opt, async () => {
			const rpc = await startPiRpc({
				line,
				extensions: [PROBE_EXTENSION],
				env: { SCM_PROBE_COMPACT: "1" },
				settings: { compaction: { keepRecentTokens: 1 } },
				script: ["one", "two", "three", "after-fork"],
			});
			let r;
			try {
				await rpc.prompt("first");
				await rpc.prompt("second");
				const compact = await rpc.send({ type: "compact" });
				assert.ok(compact.success, JSON.stringify(compact));
				assert.equal(compact.data.summary, "probe summary");
				await rpc.prompt("third");
				const forkable = await rpc.send({ type: "get_fork_messages" });
				const second = forkable.data.messages.find((m) => m.text === "second");
				const fork = await rpc.send({ type: "fork", entryId: second.entryId });
				assert.equal(fork.data.cancelled, false);
				assert.equal(fork.data.text, "second");
				await rpc.prompt("after fork");
			} finally {
				r = await rpc.close();
			}
			assert.equal(r.exitCode, 0, failInfo(r));
			assert.equal(r.probe.filter((p) => p.ev === "session_before_compact").length, 1);
			const afterCompact = r.captures[2];
			assert.match(text(afterCompact.messages.find((m) => m.role === "user")), /probe summary/);
			const starts = r.probe.filter((p) => p.ev === "session_start");
			// 0.73 and 1.5 run session_start(fork) twice for one fork; 1.6 once. The package handles both.
			assert.deepEqual(starts.map((s) => s.reason), line === "1.6" ? ["startup", "fork"] : ["startup", "fork", "fork"]);
			assert.notEqual(starts[1].sessionId, starts[0].sessionId);
			assert.equal(starts[1].parentSession, starts[0].sessionFile);
			const last = r.captures.at(-1).messages.filter((m) => m.role !== "system").map((m) => text(m));
			assert.deepEqual(last, ["first", "one", "after fork"]);
		});
	});
}

/** Options that give the run a fresh run dir whose cwd already contains one file. */
function withFile(name, content) {
	const runDir = mkdtempSync(join(BASE, "run-"));
	const cwd = join(runDir, "cwd");
	mkdirSync(cwd, { recursive: true });
	writeFileSync(join(cwd, name), content);
	return { runDir, cwd };
}
