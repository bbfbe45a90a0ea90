// Offline end-to-end harness: runs the real pi CLI (0.73.1, 1.5.2 or 1.6.0 from <repo>/.tools, see scripts/pi/setup.sh)
// as a subprocess against the scripted faux provider in e2e/fixtures/faux-provider.ts.
//
//   const r = await runPi({ line: "1.5", script: [...], prompt: "hi", extensions: [myExt] });
//   r.events    JSON events from --mode json (stdout, written to a file, not a pipe)
//   r.captures  one record per model call: { call, step, systemPrompt, tools, messages, contextKeys }
//   r.probe     records appended by e2e/fixtures/probe-extension.ts (if loaded)
//
//   const rpc = await startPiRpc({ line: "0.73", script: [...] }); await rpc.prompt("hi"); ... await rpc.close();
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, openSync, closeSync, readFileSync, readdirSync, readSync, writeFileSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
export const REPO = resolve(HERE, "..");
export const TOOLS = process.env.SCM_TOOLS_DIR || join(REPO, ".tools");
export const FAUX_EXTENSION = join(HERE, "fixtures", "faux-provider.ts");
export const PROBE_EXTENSION = join(HERE, "fixtures", "probe-extension.ts");
export const FAUX_MODEL = "faux-1";

export const LINES = {
	"0.73": {
		version: "0.73.1",
		node: process.execPath, // system Node 20 is enough (pi 0.73 wants >= 20.6)
		cli: join(TOOLS, "pi-0.73/node_modules/@mariozechner/pi-coding-agent/dist/cli.js"),
		sdk: join(TOOLS, "pi-0.73/node_modules/@mariozechner/pi-coding-agent/dist/index.js"),
	},
	"1.5": {
		version: "1.5.2",
		node: join(TOOLS, "node22/bin/node"), // pi 1.x needs Node >= 22.19
		cli: join(TOOLS, "pi-1.5/package/dist/bundle/cli.js"),
		sdk: join(TOOLS, "pi-1.5/package/dist/bundle/index.js"),
	},
	// The newest 1.x (what `pi update --self` installs today): same layout as 1.5.
	"1.6": {
		version: "1.6.0",
		node: join(TOOLS, "node22/bin/node"),
		cli: join(TOOLS, "pi-1.6/package/dist/bundle/cli.js"),
		sdk: join(TOOLS, "pi-1.6/package/dist/bundle/index.js"),
	},
};

/** null when the line is installed, else a human-readable reason (for test skips). */
export function missingTools(line) {
	const l = LINES[line];
	if (!l) return `unknown pi line ${line}`;
	for (const f of [l.node, l.cli]) if (!existsSync(f)) return `${f} missing: run scripts/pi/setup.sh`;
	return null;
}

/** Each line of a file, read in chunks: a long pi 0.73 run's events file is
 * larger than V8's longest string. */
export function* fileLines(file) {
	const fd = openSync(file, "r");
	const chunk = Buffer.alloc(1 << 24);
	let carry = [];
	try {
		for (let n; (n = readSync(fd, chunk, 0, chunk.length, null)) > 0; ) {
			let start = 0;
			for (let i; (i = chunk.indexOf(10, start)) >= 0 && i < n; start = i + 1) {
				carry.push(chunk.subarray(start, i));
				yield Buffer.concat(carry).toString("utf8");
				carry = [];
			}
			carry.push(Buffer.from(chunk.subarray(start, n)));
		}
		if (carry.some((b) => b.length)) yield Buffer.concat(carry).toString("utf8");
	} finally {
		closeSync(fd);
	}
}

function readJsonl(file) {
	if (!existsSync(file)) return [];
	const out = [];
	for (const s of fileLines(file)) {
		if (!s.trim()) continue;
		try { out.push(JSON.parse(s)); } catch { out.push({ unparsed: s }); }
	}
	return out;
}

/** pi's default session dir for a cwd (same encoding on both lines). */
export function sessionDirFor(agentDir, cwd) {
	return join(agentDir, "sessions", `--${cwd.replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`);
}

/** Session file `<ts>_<id>.jsonl` for an id, searched under agentDir/sessions. */
export function findSessionFile(agentDir, sessionId) {
	const root = join(agentDir, "sessions");
	if (!sessionId || !existsSync(root)) return undefined;
	for (const d of readdirSync(root)) {
		const dir = join(root, d);
		for (const f of readdirSync(dir)) if (f.endsWith(`_${sessionId}.jsonl`)) return join(dir, f);
	}
	return undefined;
}

export const readSession = (file) => readJsonl(file);

/** Shared option handling for runPi/startPiRpc: dirs, env, argv. */
function prepare(opts, mode) {
	const line = opts.line ?? "1.5";
	const l = LINES[line];
	const why = missingTools(line);
	if (why) throw new Error(why);
	const runDir = opts.runDir ?? mkdtempSync(join(tmpdir(), `scm-pi-${line}-`));
	mkdirSync(runDir, { recursive: true });
	const cwd = resolve(opts.cwd ?? join(runDir, "cwd"));
	const agentDir = resolve(opts.agentDir ?? join(runDir, "agent"));
	mkdirSync(cwd, { recursive: true });
	mkdirSync(agentDir, { recursive: true });
	// settings: merged into <agentDir>/settings.json, e.g. { compaction: { keepRecentTokens: 1 } }
	if (opts.settings) {
		const f = join(agentDir, "settings.json");
		const cur = existsSync(f) ? JSON.parse(readFileSync(f, "utf8")) : {};
		writeFileSync(f, JSON.stringify({ ...cur, ...opts.settings }, null, 2));
	}

	let scriptFile = typeof opts.script === "string" ? opts.script : join(runDir, "script.json");
	if (typeof opts.script !== "string") writeFileSync(scriptFile, JSON.stringify(opts.script ?? []));
	const files = {
		runDir,
		script: scriptFile,
		capture: join(runDir, "capture.jsonl"),
		probe: join(runDir, "probe.jsonl"),
		events: join(runDir, "events.jsonl"),
		stderr: join(runDir, "stderr.txt"),
	};

	const args = [l.cli, "--mode", mode];
	if (mode === "json") args.push("-p");
	args.push("-ne", "-ns", "-nc");

	// Session selection. Exactly one of: noSession, fork, session, continue, sessionId (default: a fresh UUID).
	let sessionId = opts.sessionId;
	let prewritten;
	if (opts.noSession) args.push("--no-session");
	else if (opts.fork) {
		args.push("--fork", opts.fork);
		if (sessionId && line !== "0.73") args.push("--session-id", sessionId); // 1.x: id of the new fork
	} else if (opts.session) args.push("--session", opts.session);
	else if (opts.continue) args.push("-c");
	else {
		sessionId ??= randomUUID();
		if (line === "0.73") {
			// 0.73 has no --session-id ("Error: Unknown option: --session-id"). Emulate it:
			// reuse <ts>_<id>.jsonl if present, else pre-write a header-only file with that id and open it
			// with --session <path>. pi keeps the header's id, but on its first flush (first assistant
			// message) it appends all entries again, header included: collect() drops that second header.
			let file = findSessionFile(agentDir, sessionId);
			if (!file) {
				const dir = sessionDirFor(agentDir, cwd);
				mkdirSync(dir, { recursive: true });
				const ts = new Date().toISOString();
				file = join(dir, `${ts.replace(/[:.]/g, "-")}_${sessionId}.jsonl`);
				writeFileSync(file, JSON.stringify({ type: "session", version: 3, id: sessionId, timestamp: ts, cwd }) + "\n");
				prewritten = file;
			}
			args.push("--session", file);
		} else args.push("--session-id", sessionId);
	}

	args.push("--provider", "faux", "--model", opts.model ?? FAUX_MODEL, "-e", FAUX_EXTENSION);
	for (const e of opts.extensions ?? []) args.push("-e", resolve(e));
	args.push(...(opts.extraArgs ?? []));

	const env = {
		...process.env,
		PI_OFFLINE: "1",
		PI_TELEMETRY: "0",
		PI_CODING_AGENT_DIR: agentDir,
		SCM_FAUX_SCRIPT: files.script,
		SCM_FAUX_CAPTURE: files.capture,
		SCM_PROBE_LOG: files.probe,
		...(opts.model ? { SCM_FAUX_MODEL: opts.model } : {}),
		...opts.env,
	};
	// Keep the parent's own pi settings out of the child.
	delete env.PI_CODING_AGENT_SESSION_DIR;
	return { line, l, args, env, cwd, agentDir, files, sessionId, prewritten };
}

function dropDuplicateHeader(file) {
	if (!file || !existsSync(file)) return;
	const lines = readFileSync(file, "utf8").split("\n");
	const second = lines.findIndex((s, i) => i > 0 && s.startsWith('{"type":"session"'));
	if (second > 0) { lines.splice(second, 1); writeFileSync(file, lines.join("\n")); }
}

function collect(p, extra) {
	dropDuplicateHeader(p.prewritten);
	const events = readJsonl(p.files.events);
	const header = events.find((e) => e.type === "session");
	const sessionId = header?.id ?? p.sessionId;
	return {
		line: p.line,
		cwd: p.cwd,
		agentDir: p.agentDir,
		runDir: p.files.runDir,
		args: p.args.slice(1),
		sessionId,
		sessionFile: findSessionFile(p.agentDir, sessionId),
		events,
		captures: readJsonl(p.files.capture),
		probe: readJsonl(p.files.probe),
		stderr: existsSync(p.files.stderr) ? readFileSync(p.files.stderr, "utf8") : "",
		...extra,
	};
}

function killGroup(child, sig = "SIGKILL") {
	try { process.kill(-child.pid, sig); } catch { try { child.kill(sig); } catch {} }
}

/**
 * One-shot run: pi -p --mode json "<prompt>". Resolves (never rejects on pi failure) with
 * { events, captures, probe, exitCode, signal, timedOut, stderr, sessionId, sessionFile, cwd, agentDir, runDir, args }.
 * Options: line ('0.73'|'1.5'|'1.6'), cwd, agentDir, runDir, sessionId | session | continue | fork | noSession,
 * extensions [paths], script (array or path), prompt, extraArgs, env, model, settings (merged into
 * <agentDir>/settings.json), timeoutMs (default 60000).
 */
export function runPi(opts = {}) {
	const p = prepare(opts, "json");
	if (opts.prompt !== undefined) p.args.push(opts.prompt);
	const out = openSync(p.files.events, "w");
	const err = openSync(p.files.stderr, "w");
	const started = Date.now();
	return new Promise((resolvePromise) => {
		// stdout/stderr go to files: pi dies when a stdout pipe closes under it, and files can't fill up.
		const child = spawn(p.l.node, p.args, { cwd: p.cwd, env: p.env, stdio: ["ignore", out, err], detached: true });
		let timedOut = false;
		const timer = setTimeout(() => { timedOut = true; killGroup(child); }, opts.timeoutMs ?? 60000);
		const finish = (exitCode, signal) => {
			clearTimeout(timer);
			closeSync(out); closeSync(err);
			resolvePromise(collect(p, { exitCode, signal, timedOut, ms: Date.now() - started }));
		};
		child.on("error", (e) => { writeFileSync(p.files.stderr, String(e), { flag: "a" }); finish(null, null); });
		child.on("exit", finish);
	});
}

/**
 * Long-lived `pi --mode rpc`. Returns a client:
 *   send(cmd)            -> Promise<response record> (id added automatically)
 *   prompt(text)         -> send prompt, then wait for the run to finish (agent_settled on 1.x, agent_end on 0.73)
 *   waitFor(pred, ms)    -> first record (past or future) matching pred
 *   records              all stdout records so far
 *   close()              closes stdin, waits for exit (then SIGKILL), resolves like runPi (+ records)
 * Same options as runPi (no prompt). stdout must be a pipe here; it is read continuously.
 */
export async function startPiRpc(opts = {}) {
	const p = prepare(opts, "rpc");
	const err = openSync(p.files.stderr, "w");
	const child = spawn(p.l.node, p.args, { cwd: p.cwd, env: p.env, stdio: ["pipe", "pipe", err], detached: true });
	const records = [];
	const waiters = [];
	let buf = "";
	let exited = null;
	const exitPromise = new Promise((r) => child.on("exit", (code, signal) => { exited = { exitCode: code, signal }; r(exited); }));
	child.stdout.setEncoding("utf8");
	child.stdout.on("data", (chunk) => {
		buf += chunk;
		let i;
		// Split on LF only (U+2028/2029 may occur inside JSON strings).
		while ((i = buf.indexOf("\n")) >= 0) {
			const lineText = buf.slice(0, i).replace(/\r$/, "");
			buf = buf.slice(i + 1);
			if (!lineText.trim()) continue;
			let rec;
			try { rec = JSON.parse(lineText); } catch { rec = { unparsed: lineText }; }
			records.push(rec);
			for (const w of waiters.slice()) if (w.pred(rec)) { waiters.splice(waiters.indexOf(w), 1); clearTimeout(w.timer); w.resolve(rec); }
		}
	});
	const deadline = opts.timeoutMs ?? 60000;
	const hardTimer = setTimeout(() => killGroup(child), deadline * 3);

	function waitFor(pred, ms = deadline, from = 0) {
		const hit = records.slice(from).find(pred);
		if (hit) return Promise.resolve(hit);
		return new Promise((res, rej) => {
			const w = { pred, resolve: res };
			w.timer = setTimeout(() => {
				waiters.splice(waiters.indexOf(w), 1);
				rej(new Error(`rpc wait timed out after ${ms}ms; stderr: ${readFileSync(p.files.stderr, "utf8").slice(-2000)}`));
			}, ms);
			waiters.push(w);
			exitPromise.then(() => { if (waiters.includes(w)) { clearTimeout(w.timer); waiters.splice(waiters.indexOf(w), 1); rej(new Error(`pi exited (${JSON.stringify(exited)}) while waiting; stderr: ${readFileSync(p.files.stderr, "utf8").slice(-2000)}`)); } });
		});
	}
	let nextId = 1;
	async function send(cmd, ms) {
		const id = cmd.id ?? `scm-${nextId++}`;
		const from = records.length;
		child.stdin.write(JSON.stringify({ ...cmd, id }) + "\n");
		return waitFor((r) => r.type === "response" && r.id === id, ms, from);
	}
	async function prompt(message, ms) {
		const from = records.length;
		const resp = await send({ type: "prompt", message }, ms);
		if (!resp.success) return resp;
		if (resp.data?.disposition === "handled") return resp;
		// 1.x ends a run with agent_settled (after retries/compaction); 0.73 has no agent_settled.
		const endType = p.line === "0.73" ? "agent_end" : "agent_settled";
		await waitFor((r) => r.type === endType, ms, from);
		return resp;
	}
	async function close(ms = 15000) {
		try { child.stdin.end(); } catch {}
		const t = setTimeout(() => killGroup(child), ms);
		await exitPromise;
		clearTimeout(t); clearTimeout(hardTimer);
		closeSync(err);
		// A record at a time: on pi 0.73 every agent_end carries the whole
		// session, and a long session's records joined pass V8's string limit.
		const events = openSync(p.files.events, "w");
		try {
			for (const r of records) writeSync(events, JSON.stringify(r) + "\n");
		} finally {
			closeSync(events);
		}
		const r = collect(p, { ...exited, records });
		r.sessionFile = r.sessionFile ?? findSessionFile(p.agentDir, p.sessionId);
		return r;
	}
	return { child, records, send, prompt, waitFor, close, files: p.files, line: p.line, sessionId: p.sessionId, cwd: p.cwd, agentDir: p.agentDir };
}

/** Convenience: text of a capture's last message (string or text blocks). */
export function messageText(m) {
	if (!m) return "";
	if (typeof m.content === "string") return m.content;
	return (m.content ?? []).filter((b) => b.type === "text").map((b) => b.text).join("\n");
}
