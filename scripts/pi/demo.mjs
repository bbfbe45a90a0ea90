#!/usr/bin/env node
// The main job, offline: a real pi session (scripted faux model, no network, no API key) with the
// self-context-manager package loaded, on a small temp workspace with the embedded store. For every
// model call it prints what the model saw — the header, live tool output, collapsed refs like
// [t3 · 42 lines], FILES lists — and its size next to what pi alone would have sent for the same call.
//
//   bash scripts/pi/setup.sh && node scripts/pi/demo.mjs [--line 0.73|1.5|1.6] [--keep] [--messages] [--full]
//
// Prints one row per model call (what came in, model saw vs pi alone, what collapsed) and the terms it
// uses; --messages lists every message of every call, --full prints their text; --keep keeps the temp
// workspace.
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
const messages = argv.includes("--messages");

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
	// The product collapses live tool output past 10,000 tokens (chars/4), keeping the newest 2,000:
	// a real session gets there in a few dozen calls. This 8-call demo lowers both so the
	// collapse is visible; everything else is the shipped default (cache layout).
	env: { SCM_CACHE_HIGH: "400", SCM_CACHE_LOW: "150" },
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

console.log(`pi ${line} · ${r.captures.length} model calls · workspace ${cwd}`);
console.log("(demo thresholds: collapse when live output > 400 tokens, keep the newest 150; defaults 10,000 / 2,000)\n");
const REF = /^\[(t\d+) · (\d+) lines?\]$/;
const describeMessage = (m) => {
	const t = messageText(m);
	if (m.role === "user") {
		if (t.startsWith("Context manager:")) return "header  (explains ids and refs; constant)";
		if (t.startsWith("FILES")) return `files   ${short(t.split("\n").slice(1).join(" | "), 90)}`;
		return `user    ${short(JSON.stringify(t), 90)}`;
	}
	if (m.role === "assistant") {
		const calls = (m.content ?? []).filter((b) => b.type === "toolCall").map((b) => `${b.id}=${b.name}(${short(JSON.stringify(b.arguments), 50)})`);
		return `assist  ${[t ? short(JSON.stringify(t), 40) : "", ...calls].filter(Boolean).join(" ")}`;
	}
	if (m.role === "toolResult") {
		const ref = REF.exec(t.trim());
		return ref ? `result  ${m.toolCallId} collapsed → ${t.trim()}` : `result  ${m.toolCallId} live, ${t.length} chars: ${short(JSON.stringify(t), 60)}`;
	}
	return `${m.role} ${short(t, 80)}`;
};

// One row per model call: what came in since the previous call (pi's own tool results), what the model saw
// vs what pi alone would have sent, and which tool outputs collapsed to refs at this call.
const rows = [];
let collapsedBefore = new Set();
let headerTok = 0;
r.captures.forEach((c, i) => {
	const msgs = c.messages.filter((m) => m.role !== "system");
	const rawMsgs = raw[i] ?? [];
	const prevRaw = raw[i - 1] ?? [];
	const newResults = rawMsgs.slice(prevRaw.length).filter((m) => m.role === "toolResult");
	const refs = new Map();
	for (const m of msgs) {
		const ref = m.role === "toolResult" && REF.exec(messageText(m).trim());
		if (ref) refs.set(ref[1], ref[0]);
	}
	const head = msgs.find((m) => m.role === "user" && messageText(m).startsWith("Context manager:"));
	if (head) headerTok = tok(textOfMessage(head).length);
	const collapsedNow = [...refs.keys()].filter((k) => !collapsedBefore.has(k));
	collapsedBefore = new Set(refs.keys());
	const mc = chars(msgs);
	const rc = chars(rawMsgs);
	rows.push({
		call: i,
		after: i === 0 ? "the prompt" : newResults.map((m) => m.toolName).join(", ") || "(text)",
		saw: tok(mc),
		alone: tok(rc),
		delta: rc ? Math.round((100 * (mc - rc)) / rc) : 0,
		collapsed: collapsedNow.map((k) => refs.get(k)).join(" "),
	});
	if (messages || full) {
		console.log(`── call ${i}`);
		for (const m of msgs) console.log(`   ${describeMessage(m)}`);
		if (full) for (const m of msgs) console.log(`     [${m.role}] ${textOfMessage(m)}`);
		console.log("");
	}
});
const pad = (v, n, right) => (right ? String(v).padStart(n) : String(v).padEnd(n));
console.log(`${pad("CALL", 4, true)}  ${pad("AFTER", 16)}  ${pad("MODEL SAW", 9, true)}  ${pad("PI ALONE", 8, true)}  ${pad("DIFF", 6, true)}  COLLAPSED AT THIS CALL`);
for (const w of rows) {
	console.log(`${pad(w.call, 4, true)}  ${pad(short(w.after, 16), 16)}  ${pad(`${w.saw} tok`, 9, true)}  ${pad(`${w.alone} tok`, 8, true)}  ${pad(`${w.delta >= 0 ? "+" : ""}${w.delta}%`, 6, true)}  ${w.collapsed}`);
}
const sumManaged = rows.reduce((n, w) => n + w.saw, 0);
const sumRaw = rows.reduce((n, w) => n + w.alone, 0);
const pct = Math.round((100 * (sumManaged - sumRaw)) / sumRaw);
console.log(`${pad("all", 4, true)}  ${pad("", 16)}  ${pad(`${sumManaged} tok`, 9, true)}  ${pad(`${sumRaw} tok`, 8, true)}  ${pad(`${pct >= 0 ? "+" : ""}${pct}%`, 6, true)}`);
const firstBelow = rows.find((w) => w.saw < w.alone);
console.log(`
Why the first calls cost more than pi alone: every call starts with the product's header (≈ ${headerTok} tok,
the same text each time, so a provider's prompt cache serves it after the first call) and, once files are
known, a FILES list; while the conversation is small that outweighs what the product saves.
${
	firstBelow ? `From call ${firstBelow.call} on the model sees less than pi would send` : "This short run never collapses enough to pay it back"
}: tool outputs past the threshold collapse to refs, and what the agent deactivates leaves the context.

Terms (all defined in docs/design.md, "Glossary"):
  tok            an estimate: characters of message text / 4; the system prompt, the same for both, is left out
  MODEL SAW      the messages this package gave the model for that call
  PI ALONE       what pi would have sent without the package (recorded by an extension loaded before it)
  AFTER          the tool results that arrived since the previous call (what made pi call the model again)
  header         the package's first message: explains ids and refs (constant)
  t1, t2, f1     ids the model sees: t = a tool call and its output, f = a file
  [t3 · 42 lines]  a ref: a collapsed tool output; the model can activate t3 to see it whole again
  collapse       replacing older live tool output with refs once it exceeds the threshold (batched: an epoch)
  FILES          the list of files the session knows (path and size), after the conversation
  CALL           model calls numbered from 0, as the command-line tool numbers them (\`self-context-manager call\`)
--messages lists every message of every call, --full prints their text too.`);
const test = r.events.filter((e) => e.type === "tool_execution_end" && e.toolName === "bash").map((e) => messageText(e.result ?? {}).trim());
console.log(`bash outputs the user saw: ${test.map((t) => JSON.stringify(short(t, 40))).join(", ")}`);

if (!keep) rmSync(base, { recursive: true, force: true });
else console.log(`kept: ${base}`);
