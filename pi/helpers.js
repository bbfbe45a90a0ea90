// Small helpers of the pi package (adapter only: paths as pi's tools take them, text of results, token estimates).
import { existsSync, openSync, readSync, closeSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import * as agent from "@mariozechner/pi-coding-agent";

/** pi's tools accept "@path" and "~/path"; the engine resolves against the workspace root. */
export function agentPath(p) {
	let s = String(p ?? "");
	if (s.startsWith("@")) s = s.slice(1);
	if (s === "~") return homedir();
	if (s.startsWith("~/")) return join(homedir(), s.slice(2));
	return s;
}

/** Directory a discovery tool listed: its path argument (a file's parent for grep on one file). */
export function listedDir(cwd, p) {
	const abs = resolve(cwd, agentPath(p || "."));
	try {
		return statSync(abs).isDirectory() ? abs : dirname(abs);
	} catch {
		return abs;
	}
}

export const textOf = (content) =>
	typeof content === "string" ? content : (content ?? []).filter((b) => b?.type === "text").map((b) => b.text).join("\n");

export function estimate(messages) {
	let t = 0;
	for (const m of messages) {
		try {
			t += typeof agent.estimateTokens === "function" ? agent.estimateTokens(m) : Math.ceil(JSON.stringify(m.content ?? "").length / 4);
		} catch {
			t += Math.ceil(JSON.stringify(m.content ?? "").length / 4);
		}
	}
	return t;
}

/**
 * estimate() of pi's transcript for the status line, kept up to date from the new messages only: the transcript
 * grows between model calls, and re-estimating all of it on every call would cost O(history) per call. Starts
 * over when the array does not continue the last one (compaction, /tree, resume).
 */
export function transcriptEstimator() {
	const key = (m) => `${m?.role}\u0000${m?.timestamp}`;
	let counted = 0;
	let total = 0;
	let lastKey = null;
	return (messages) => {
		if (counted === 0 || counted > messages.length || key(messages[counted - 1]) !== lastKey) {
			counted = 0;
			total = 0;
		}
		total += estimate(messages.slice(counted));
		counted = messages.length;
		lastKey = counted ? key(messages[counted - 1]) : null;
		return total;
	};
}

export const fmtK = (n) => (n >= 10000 ? `${Math.round(n / 1000)}k` : n >= 1000 ? `${(n / 1000).toFixed(1)}k` : String(n));

/** The session id in a session file's header line (the fork's parent). */
export function sessionIdOfFile(file) {
	if (!file || !existsSync(file)) return undefined;
	const fd = openSync(file, "r");
	try {
		const buf = Buffer.alloc(4096);
		const n = readSync(fd, buf, 0, buf.length, 0);
		const first = buf.subarray(0, n).toString("utf8").split("\n")[0];
		return JSON.parse(first)?.id;
	} catch {
		return undefined;
	} finally {
		closeSync(fd);
	}
}

/** The transcript as plain pi-ai messages (bashExecution, custom, summaries → user messages). */
export function llmMessages(messages) {
	try {
		return typeof agent.convertToLlm === "function" ? agent.convertToLlm(messages) : messages;
	} catch {
		return messages;
	}
}

export const describe = (e) => (e?.code ? `${e.code}: ${e.message}` : String(e?.message ?? e));
