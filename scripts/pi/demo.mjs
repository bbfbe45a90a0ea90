#!/usr/bin/env node
// The main job, offline: a real pi session (scripted faux model, no network, no API key) with the
// self-context-manager package loaded, on a small temp workspace with the embedded store. For every
// model call it prints what the model saw — roles, pool lines, toolcall_refs, active blocks — and its
// size next to what pi alone would have sent for the same call.
//
//   bash scripts/pi/setup.sh && node scripts/pi/demo.mjs [--line 0.73|1.5] [--keep] [--full]
//
// --full prints every message of every call in full; --keep keeps the temp workspace.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { runPi, missingTools, messageText } from "../../e2e/harness.mjs";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const argv = process.argv.slice(2);
const line = argv.includes("--line") ? argv[argv.indexOf("--line") + 1] : "0.73";
const keep = argv.includes("--keep");
const full = argv.includes("--full");

const missing = missingTools(line);
if (missing) {
	console.error(`demo: pi ${line} is not installed (${missing}). Run: bash scripts/pi/setup.sh`);
	process.exit(2);
}

// --- a small project with a bug --------------------------------------------------------------------
const base = mkdtempSync(join(tmpdir(), "scm-demo-"));
const cwd = join(base, "project");
const files = {
	"src/math.js": [
		"// Arithmetic helpers used by the invoice code.",
		...Array.from({ length: 40 }, (_, i) => `export function scale${i}(x) { return x * ${i + 1}; } // helper ${i}`),
		"export function add(a, b) {",
		"  return a - b; // BUG",
		"}",
		"",
	].join("\n"),
	"src/format.js": Array.from({ length: 60 }, (_, i) => `export const label${i} = (v) => \`item ${i}: \${v.toFixed(2)}\`;`).join("\n") + "\n",
	"src/invoice.js": "import { add } from './math.js';\nexport const total = (lines) => lines.reduce((s, l) => add(s, l.amount), 0);\n",
	"test.mjs": "import { total } from './src/invoice.js';\nconst t = total([{ amount: 2 }, { amount: 3 }]);\nconsole.log(t === 5 ? 'ok total=5' : `FAIL total=${t}`);\n",
	"README.md": "# invoices\nRun `node test.mjs`.\n",
};
for (const [p, c] of Object.entries(files)) {
	mkdirSync(dirname(join(cwd, p)), { recursive: true });
	writeFileSync(join(cwd, p), c);
}
writeFileSync(join(cwd, "package.json"), '{ "type": "module" }\n');

// --- what the scripted model does --------------------------------------------------------------------
const tc = (name, args, id) => ({ name, args, id });
const script = [
	{ text: "Let me run the tests first.", toolCalls: [tc("bash", { command: "node test.mjs; ls src" }, "c1")] },
	{ toolCalls: [tc("read", { path: "src/invoice.js" }, "c2")] },
	{ toolCalls: [tc("read", { path: "src/math.js" }, "c3"), tc("read", { path: "src/format.js" }, "c4")] },
	{ text: "format.js is unrelated.", toolCalls: [tc("deactivate", { id: "src/format.js" }, "c5")] },
	{ toolCalls: [tc("edit", { path: "src/math.js", edits: [{ oldText: "return a - b; // BUG", newText: "return a + b;" }] }, "c6")] },
	{ toolCalls: [tc("bash", { command: "node test.mjs" }, "c7")] },
	{ toolCalls: [tc("deactivate", { id: "src/invoice.js" }, "c8")] },
	"Fixed: add() subtracted instead of adding. The test passes.",
];

// A recorder loaded before the package: its `context` handler sees pi's own messages, i.e. what the
// model would get without the package (handlers run in load order).
const recorder = join(base, "raw-recorder.ts");
writeFileSync(
	recorder,
	`import { appendFileSync } from "node:fs";
import * as agent from "@mariozechner/pi-coding-agent";
export default function (pi: any) {
	pi.on("context", (e: any) => { appendFileSync(${JSON.stringify(join(base, "raw.jsonl"))}, JSON.stringify(agent.convertToLlm(e.messages)) + "\\n"); });
}
`,
);

const r = await runPi({
	line,
	cwd,
	runDir: join(base, "run"),
	extensions: [recorder, join(REPO, "pi/index.js")],
	script,
	prompt: "The invoice total is wrong. Find and fix the bug.",
	timeoutMs: 120000,
});
if (r.exitCode !== 0 || r.captures.length === 0) {
	console.error(`demo: pi exited ${r.exitCode}\n${r.stderr.slice(-3000)}`);
	process.exit(1);
}
const { readFileSync } = await import("node:fs");
const raw = readFileSync(join(base, "raw.jsonl"), "utf8").trim().split("\n").map((s) => JSON.parse(s));

// --- report ----------------------------------------------------------------------------------------
const textOfMessage = (m) => {
	const t = messageText(m);
	const calls = m.role === "assistant" ? (m.content ?? []).filter((b) => b.type === "toolCall").map((b) => `${b.name}(${JSON.stringify(b.arguments)})`) : [];
	return [t, ...calls].filter(Boolean).join(" ");
};
const chars = (msgs) => msgs.reduce((n, m) => n + textOfMessage(m).length, 0);
const tok = (c) => Math.ceil(c / 4);
const short = (s, n = 60) => (s.length > n ? s.slice(0, n - 1) + "…" : s);
const shortId = (id) => (id.startsWith("toolcall:") ? `toolcall:…:${id.split(":").slice(2).join(":").slice(-10)}` : id.slice(0, 10));
const kind = (m) => {
	const t = m.role === "user" ? messageText(m) : "";
	return t.startsWith("METADATA_POOL") ? "pool" : t.startsWith("ACTIVE_CONTENT") ? "active" : m.role;
};

console.log(`pi ${line} · ${r.captures.length} model calls · workspace ${cwd}\n`);
let sumManaged = 0;
let sumRaw = 0;
r.captures.forEach((c, i) => {
	const msgs = c.messages.filter((m) => m.role !== "system");
	const rawMsgs = raw[i] ?? [];
	const mc = chars(msgs);
	const rc = chars(rawMsgs);
	sumManaged += mc;
	sumRaw += rc;
	const roles = [];
	for (const m of msgs) {
		const k = kind(m);
		const lastR = roles.at(-1);
		if (lastR && lastR.k === k) lastR.n++;
		else roles.push({ k, n: 1 });
	}
	console.log(`── call ${c.call} ─ roles: ${roles.map((x) => (x.n > 1 ? `${x.k}×${x.n}` : x.k)).join(" ")}`);
	const poolMsg = msgs.find((m) => kind(m) === "pool");
	const poolLines = poolMsg ? messageText(poolMsg).split("\n").slice(1).filter((l) => l.startsWith("- id=")) : [];
	console.log(`   pool (${poolLines.length}):`);
	for (const l of poolLines) {
		const id = /^- id=(\S+)/.exec(l)[1];
		console.log(`     ${shortId(id)} ${short(l.slice(l.indexOf(" ", 2) + 1), 90)}`);
	}
	const refs = msgs.filter((m) => m.role === "toolResult").map((m) => /tool=(\S+) status=(\S+)/.exec(messageText(m))).filter(Boolean).map((x) => `${x[1]}:${x[2]}`);
	if (refs.length) console.log(`   toolcall_refs (${refs.length}): ${refs.join(" ")}`);
	for (const m of msgs.filter((x) => kind(x) === "active")) {
		const t = messageText(m);
		const id = /^ACTIVE_CONTENT id=(\S+)/.exec(t)[1];
		console.log(`   active ${shortId(id)}: ${t.length - t.indexOf("\n") - 1} chars — ${short(JSON.stringify(t.slice(t.indexOf("\n") + 1)), 70)}`);
	}
	if (full) for (const m of msgs) console.log(`     [${kind(m)}] ${textOfMessage(m)}`);
	const pct = rc ? Math.round((100 * (mc - rc)) / rc) : 0;
	console.log(`   model saw ${mc} chars ≈ ${tok(mc)} tok · pi alone ${rc} chars ≈ ${tok(rc)} tok (${pct >= 0 ? "+" : ""}${pct}%)\n`);
});
const pct = Math.round((100 * (sumManaged - sumRaw)) / sumRaw);
console.log(`total over ${r.captures.length} calls: model saw ≈ ${tok(sumManaged)} tok · pi alone ≈ ${tok(sumRaw)} tok (${pct >= 0 ? "+" : ""}${pct}%)`);
console.log("(chars/4 estimates of message text; the system prompt, the same for both, is not counted)");
const test = r.events.filter((e) => e.type === "tool_execution_end" && e.toolName === "bash").map((e) => messageText(e.result ?? {}).trim());
console.log(`bash outputs the user saw: ${test.map((t) => JSON.stringify(short(t, 40))).join(", ")}`);

if (!keep) rmSync(base, { recursive: true, force: true });
else console.log(`kept: ${base}`);
