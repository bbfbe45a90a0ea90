// self-context-manager as a pi extension: wires pi's hooks and tools to the native addon.
// Everything that decides what the model sees lives in the Rust core, and so do the words a layout shows the model
// (prompts.js fetches them); this file only translates pi events into ContextManager calls and back. Its parts:
// config.js (settings → open options), prompts.js (what the model is told), helpers.js (pi's paths, text and token
// estimates), report.js (/context). Loaded by pi's jiti loader on pi 0.73 (@mariozechner/*) and 1.x (which maps
// @mariozechner/* to its own packages).
import { createRequire } from "node:module";
import { mkdirSync, writeFileSync } from "node:fs";
import crypto from "node:crypto";
import { join } from "node:path";
import * as agent from "@mariozechner/pi-coding-agent";
import { Type } from "@mariozechner/pi-ai";
import { loadConfig, openOptions } from "./config.js";
import { agentPath, describe, estimate, fmtK, listedDir, llmMessages, sessionIdOfFile, textOf, transcriptEstimator } from "./helpers.js";
import { idParameter, layoutWords, memoryToolTexts, readTexts, withSystemSection } from "./prompts.js";
import { formatContext } from "./report.js";

export { loadConfig } from "./config.js";
export { formatContext } from "./report.js";

const require = createRequire(import.meta.url);
let addon = null;
let addonError = null;
try {
	addon = require("../index.js");
} catch (e) {
	addonError = e;
}

const STATUS_KEY = "scm";

// ---------------------------------------------------------------------------

/** The notice of a package that cannot run: printed once per session start, nothing else registered. */
function inert(pi, message) {
	pi.on("session_start", (_e, ctx) => {
		try {
			ctx.ui?.notify?.(`self-context-manager: ${message}`, "error");
		} catch {}
		if (!ctx.hasUI) process.stderr.write(`[self-context-manager] ${message}\n`);
	});
}

export default function selfContextManager(pi) {
	// Settings are read once per load; pi runs in (and re-imports the module for) its cwd.
	let cfg;
	try {
		cfg = loadConfig(process.cwd());
	} catch (e) {
		return inert(pi, `configuration error: ${e.message}; pi runs without context management`);
	}
	if (cfg.disabled) return;
	if (addonError) return inert(pi, `the native addon failed to load (${describe(addonError)}); pi runs without context management. See the README's troubleshooting section.`);
	// What the model is told in this layout (the core's words; see prompts.js).
	const words = layoutWords(addon, cfg.layout);

	// One extension instance per loaded session runtime (pi re-imports the module on /new, /fork,
	// /resume, /reload); session_start may fire twice for one session (RPC fork before pi 1.6): opening is idempotent.
	const S = {
		cm: null,
		sessionId: null,
		opening: null,
		failedAt: 0,
		lastError: null,
		notified: new Set(),
		degraded: false,
		last: null, // { tokens, rawTokens, messages } of the last assembled context
		systemPrompt: null, // { cm, text } last handed to that manager (storeSystemPrompt)
		estimateTranscript: transcriptEstimator(), // chars/4-style estimate of pi's own transcript, incremental
		runs: 0, // completed agent runs (for checkpointEvery)
		userBash: new Set(), // the user's `!cmd` runs already observed, by timestamp and command (pi clones the messages for every context event)
	};

	function notifyOnce(ctx, key, message, level = "warning") {
		if (S.notified.has(key)) return;
		S.notified.add(key);
		try {
			ctx?.ui?.notify?.(`self-context-manager: ${message}`, level);
		} catch {}
		if (!ctx?.hasUI) process.stderr.write(`[self-context-manager] ${message}\n`);
	}

	/** The session's manager, opened on first need; null while unavailable (pi then behaves as without us). */
	async function manager(ctx) {
		const id = ctx.sessionManager.getSessionId();
		if (S.cm && S.sessionId === id) return S.cm;
		if (S.opening && S.sessionId === id) return S.opening;
		if (S.cm) await closeManager(ctx);
		// Don't hammer an unreachable store: one attempt per retry interval.
		if (S.sessionId === id && S.lastError && Date.now() - S.failedAt < cfg.retryMs) return null;
		S.sessionId = id;
		S.opening = openManager(ctx, cfg, id).then(
			(cm) => {
				S.cm = cm;
				S.lastError = null;
				if (S.notified.delete("open")) notifyOnce(ctx, "reopened", "store reachable again; context management resumed", "info");
				S.notified.delete("reopened");
				return cm;
			},
			(e) => {
				S.lastError = e;
				S.failedAt = Date.now();
				notifyOnce(ctx, "open", `could not open the context store (${describe(e)}); pi runs with its own context until it is reachable`);
				return null;
			},
		);
		try {
			return await S.opening;
		} finally {
			S.opening = null;
		}
	}

	async function openManager(ctx, cfg, sessionId) {
		const sm = ctx.sessionManager;
		const options = openOptions(cfg, ctx.cwd, sessionId);
		// A fork starts from the parent's state at the fork point: the engine seeds the new session
		// from the parent's record for the copied transcript (ignored by engines without fork support).
		// A session made by /ctx fork starts from that context commit.
		const fromCommit = sm.getHeader?.()?.scmFromCommit;
		if (typeof fromCommit === "string") {
			options.fromCommit = fromCommit;
			return addon.ContextManager.open(options);
		}
		const parentFile = sm.getHeader?.()?.parentSession;
		const parentId = sessionIdOfFile(parentFile);
		if (parentId && parentId !== sessionId) {
			let messages = [];
			try {
				// As the context hook will see them: pi 1.x keeps its system message in the session, not in the hook.
				messages = llmMessages(sm.buildSessionContext().messages).filter((m) => m.role !== "system");
			} catch {}
			options.forkOf = { sessionId: parentId, messages };
			return addon.ContextManager.open(options);
		}
		const cm = await addon.ContextManager.open(options);
		await followBranch(ctx, cm);
		return cm;
	}

	/**
	 * A resumed session follows pi's branch. pi may have gone on without the package (run without it, or a second
	 * pi on the same session) to a branch the store never saw; the engine would append that branch to the stored
	 * one and the model would see both. It moves to the commit the branch maps to (or the session's root), as
	 * after /tree; a no-op when the branch continues the stored session (every ordinary resume).
	 */
	async function followBranch(ctx, cm) {
		const messages = branchMessages(ctx);
		if (!messages?.length) return;
		try {
			await cm.rewind(messages);
		} catch (e) {
			notifyOnce(ctx, `rewind:${e.code ?? "?"}`, `the context could not follow pi's branch at resume (${describe(e)})`);
		}
	}

	async function closeManager(ctx) {
		const cm = S.cm;
		S.cm = null;
		if (!cm) return;
		try {
			await cm.close();
		} catch (e) {
			notifyOnce(ctx, "close", `closing the session failed (${describe(e)}); writes not yet stored are replayed from pi's session file on resume`);
		}
	}

	/** Keeps the user's result; failures of our side effect never fail the tool. */
	async function observe(ctx, what, fn) {
		const cm = await manager(ctx);
		if (!cm) return null;
		try {
			return await fn(cm);
		} catch (e) {
			notifyOnce(ctx, `observe:${e.code ?? "?"}`, `${what} was not indexed (${describe(e)})`);
			return null;
		}
	}

	function unavailable() {
		return `self-context-manager is not available right now (${describe(S.lastError ?? "store not open")}); the context is pi's own until it is back`;
	}

	/**
	 * Hands the engine the current branch's messages without a model call. The engine otherwise sees
	 * them only in the next `context` call, so the final answer of a run would never be stored if the
	 * user then navigates /tree, forks, switches or quits. pi's whole context as the hook would get
	 * it (the engine's cursor takes only what is new): the session's projection, system messages
	 * dropped (pi 1.x keeps its own in the session, not in the hook). A trailing error answer is left
	 * out: pi drops it from its context when it retries, and the next `context` call ingests it if not.
	 */
	async function observeBranch(ctx) {
		const cm = S.cm;
		if (!cm || S.sessionId !== ctx.sessionManager.getSessionId()) return;
		const messages = branchMessages(ctx);
		if (!messages) return;
		try {
			await cm.observeMessages(messages);
		} catch (e) {
			notifyOnce(ctx, `observe:${e.code ?? "?"}`, `the conversation was not stored (${describe(e)}); it is stored with the next model call`);
		}
	}

	/** The current branch's messages as the `context` hook would get them (see observeBranch); null if pi fails. */
	function branchMessages(ctx) {
		let messages;
		try {
			messages = llmMessages(ctx.sessionManager.buildSessionContext().messages).filter((m) => m.role !== "system");
		} catch {
			return null;
		}
		const last = messages.at(-1);
		if (last?.role === "assistant" && last.stopReason === "error") messages = messages.slice(0, -1);
		return messages;
	}

	/**
	 * /tree moved pi's leaf: the engine moves to the context commit the new branch maps to (the rule is the core's,
	 * `rewind`), so the model sees exactly this branch (and pi's branch summary, which follows it), never the one left.
	 */
	async function rewindBranch(ctx) {
		const cm = S.cm;
		if (!cm || S.sessionId !== ctx.sessionManager.getSessionId()) return;
		const messages = branchMessages(ctx);
		if (!messages) return;
		try {
			await cm.rewind(messages);
		} catch (e) {
			notifyOnce(ctx, `rewind:${e.code ?? "?"}`, `the context did not follow /tree (${describe(e)}); the model still sees the branch that was left`);
		}
	}

	/** A context commit of what the engine holds (after observeBranch); failures only notify. */
	async function checkpoint(ctx, options) {
		const cm = S.cm;
		if (!cm || S.sessionId !== ctx.sessionManager.getSessionId()) return null;
		try {
			return await cm.checkpoint(options);
		} catch (e) {
			notifyOnce(ctx, `checkpoint:${e.code ?? "?"}`, `the context commit failed (${describe(e)})`);
			return null;
		}
	}

	// --- lifecycle ---------------------------------------------------------------------------------

	pi.on("session_start", async (_e, ctx) => {
		await manager(ctx);
	});

	// Lifecycle work runs one handler at a time: pi 0.73 hands agent_end to extensions from its event
	// queue, so a print-mode exit can start session_shutdown while agent_end's commit is in flight
	// (the run's commit then came out as session_end, now and then).
	let lifecycle = Promise.resolve();
	const inOrder = (fn) => {
		const run = lifecycle.then(fn, fn);
		lifecycle = run.catch(() => {});
		return run;
	};

	// The run's final answer, stored before anything can leave the branch it is on.
	pi.on("agent_end", (_e, ctx) =>
		inOrder(async () => {
			await observeBranch(ctx);
			S.runs += 1;
			if (cfg.checkpointEvery > 0 && S.runs % cfg.checkpointEvery === 0) await checkpoint(ctx, { trigger: "turn_boundary" });
		}),
	);
	// Also where the branch is left or the session ends (messages added since, e.g. by a failed
	// agent_end write or a user `!cmd`); a no-op when nothing is new.
	for (const ev of ["session_before_tree", "session_before_fork", "session_before_switch"]) pi.on(ev, (_e, ctx) => inOrder(async () => void (await observeBranch(ctx))));
	pi.on("session_tree", (_e, ctx) => inOrder(async () => void (await rewindBranch(ctx))));

	pi.on("session_shutdown", (_e, ctx) =>
		inOrder(async () => {
			await observeBranch(ctx);
			if (cfg.checkpointEvery > 0) await checkpoint(ctx, { trigger: "session_end" });
			await closeManager(ctx);
			try {
				ctx.ui?.setStatus?.(STATUS_KEY, undefined);
			} catch {}
		}),
	);

	// --- what the model sees ----------------------------------------------------------------------

	pi.on("before_agent_start", async (e, ctx) => {
		if (!(await manager(ctx))) return;
		return withSystemSection(e, words);
	});

	pi.on("context", async (e, ctx) => {
		const cm = await manager(ctx);
		if (!cm) return;
		const raw = llmMessages(e.messages);
		await observeUserBash(ctx, e.messages);
		let out;
		try {
			storeSystemPrompt(cm, ctx);
			out = await cm.transformContext(raw);
		} catch (err) {
			S.lastError = err;
			S.degraded = true;
			notifyOnce(ctx, `context:${err.code ?? "?"}`, `assembling the context failed (${describe(err)}); this call uses pi's own context`);
			return;
		}
		// The store could not take the write: the context was assembled from memory all the same; the
		// write stays queued and goes with the next call once the store is back.
		const queued = cm.lastError;
		if (queued) {
			S.degraded = true;
			notifyOnce(ctx, `flush:${queued.code ?? "?"}`, `store write delayed (${describe(queued)}); the context stays managed from memory and is stored once the store is back`);
		} else if (S.degraded) {
			// Tell the user once that the outage is over, and re-arm the failure notices.
			S.degraded = false;
			for (const k of Array.from(S.notified)) if (k.startsWith("context:") || k.startsWith("flush:") || k.startsWith("observe:")) S.notified.delete(k);
			notifyOnce(ctx, "recovered", "the context store works again; context management resumed", "info");
			S.notified.delete("recovered");
		}
		S.lastError = null;
		const messages = out.filter((m) => m.role !== "system");
		S.last = { tokens: estimate(messages), rawTokens: S.estimateTranscript(raw), messages: messages.length };
		try {
			ctx.ui?.setStatus?.(STATUS_KEY, `ctx ~${fmtK(S.last.tokens)} tok (pi ~${fmtK(S.last.rawTokens)})`);
		} catch {}
		return { messages };
	});

	/**
	 * The user's `!cmd` runs reach the model as bashExecution messages: the files their command and output name
	 * are discovered as a `bash` tool call's are (what counts is the core's `observeBash`). `!!cmd` runs, kept out
	 * of the model's context, are not.
	 */
	async function observeUserBash(ctx, messages) {
		for (const m of messages ?? []) {
			if (m?.role !== "bashExecution" || m.excludeFromContext) continue;
			const key = `${m.timestamp}\0${m.command}`;
			if (S.userBash.has(key)) continue;
			S.userBash.add(key);
			if (typeof m.command === "string") await observe(ctx, "!cmd output", (cm) => cm.observeBash(m.command, typeof m.output === "string" ? m.output : ""));
		}
	}

	/**
	 * pi sends its system prompt itself (emitSystemMessage: false); the session stores it, as a new version whenever
	 * it changes, so reconstructCall(n) is what the model received. Handed over only when it differs from the last.
	 */
	function storeSystemPrompt(cm, ctx) {
		let prompt;
		try {
			prompt = ctx.getSystemPrompt?.();
		} catch {
			return;
		}
		if (typeof prompt !== "string" || (S.systemPrompt?.cm === cm && S.systemPrompt.text === prompt)) return;
		cm.setSystemPrompt(prompt);
		S.systemPrompt = { cm, text: prompt };
	}

	// pi's compaction would summarise and replace the history the engine renders; the engine
	// already bounds the context (pool lines + active set), so it is cancelled while we own it.
	pi.on("session_before_compact", async (_e, ctx) => {
		// Allowed: the pre-compaction messages go to the engine now, and are committed before the
		// compaction commit (session_compact).
		if (cfg.compaction === "allow") return void (await observeBranch(ctx));
		if (!S.cm || S.lastError) return;
		notifyOnce(ctx, "compact", "pi's compaction is cancelled: the context is managed (see /context; deactivate objects to shrink it)", "info");
		return { cancel: true };
	});

	// A host compaction: the new messages before it, then a compaction commit holding pi's summary.
	pi.on("session_compact", async (_e, ctx) => {
		let summary;
		try {
			summary = llmMessages(ctx.sessionManager.buildSessionContext().messages).filter((m) => m.role === "compactionSummary");
		} catch {
			return;
		}
		if (summary.length) await checkpoint(ctx, { trigger: "compaction", compaction: summary });
	});

	// --- observed tools: write/edit index the new version; ls/find/grep/bash discover files ----------
	// Observed through tool_result rather than re-registered, so the user's tool set (which may leave
	// ls/find/grep off) and other extensions' overrides of these tools stay as they are.

	pi.on("tool_result", async (e, ctx) => {
		const input = e.input ?? {};
		const out = textOf(e.content);
		switch (e.toolName) {
			case "write":
			case "edit":
				if (!e.isError && input.path)
					await observe(ctx, `${e.toolName} ${input.path}`, (cm) => (e.toolName === "write" ? cm.observeWrite(agentPath(input.path)) : cm.observeEdit(agentPath(input.path))));
				break;
			case "ls":
				if (!e.isError) await observe(ctx, "ls output", (cm) => cm.observeLs(out, listedDir(ctx.cwd, input.path)));
				break;
			case "find":
				if (!e.isError) await observe(ctx, "find output", (cm) => cm.observeFind(out, listedDir(ctx.cwd, input.path)));
				break;
			case "grep":
				if (!e.isError) await observe(ctx, "grep output", (cm) => cm.observeGrep(out, listedDir(ctx.cwd, input.path)));
				break;
			case "bash":
				if (typeof input.command === "string") await observe(ctx, "bash output", (cm) => cm.observeBash(input.command, out));
				break;
		}
	});

	// --- a ref is not file text: a call that would write one the model was shown is refused -------------
	// (The model copying `[t12 · 40 lines]` into a write's content would replace the file by the ref.) Only a
	// manager already open answers: a tool call never waits for the store, and without one pi runs it as is.
	pi.on("tool_call", (e, ctx) => {
		const cm = S.cm;
		if (!cm || S.sessionId !== ctx.sessionManager.getSessionId()) return undefined;
		try {
			const found = cm.checkToolCall(e.toolName, e.input);
			return found ? { block: true, reason: found.message } : undefined;
		} catch (err) {
			notifyOnce(ctx, `check:${err.code ?? "?"}`, `could not check a ${e.toolName} call for refs (${describe(err)}); it runs as is`);
			return undefined;
		}
	});

	// --- tools ---------------------------------------------------------------------------------------

	// pi refuses a second extension that registers one of these names ("Tool "read" conflicts with …").
	const register = (def) => pi.registerTool(def);

	const builtinRead = agent.createReadToolDefinition(process.cwd());
	register({
		...builtinRead,
		...readTexts(words, builtinRead),
		executionMode: "sequential",
		async execute(toolCallId, params, signal, onUpdate, ctx) {
			// The user sees exactly what pi's read shows (offsets, limits, images, truncation notes).
			const result = await agent.createReadToolDefinition(ctx.cwd).execute(toolCallId, params, signal, onUpdate, ctx);
			const whole = params.offset == null && params.limit == null;
			const image = (result.content ?? []).some((b) => b.type === "image");
			// The engine owns whole text files; slices and images stay ordinary tool outputs, their file indexed
			// (the read's toolcall names it) but not made active.
			const path = agentPath(params.path);
			const scm = await observe(ctx, `read ${params.path}`, (cm) => (whole && !image ? cm.read(path) : cm.observePartialRead(path)));
			return { ...result, details: { ...result.details, scm } };
		},
	});

	const idParam = idParameter(Type, words);
	for (const t of words.tools) {
		const name = t.name;
		register({
			name,
			label: t.label,
			description: t.description,
			promptSnippet: t.snippet,
			parameters: idParam,
			executionMode: "sequential",
			async execute(_toolCallId, params, _signal, _onUpdate, ctx) {
				const cm = await manager(ctx);
				if (!cm) throw new Error(unavailable());
				// As typed: the core reads pi's "@path"/"~/path" and names the object as the model did in its result.
				const target = params.id;
				let r;
				if (typeof cm.setOpSync === "function") {
					// The set change is immediate; a failing store write is retried by the next flush.
					r = cm.setOpSync(name, target);
					try {
						await cm.flush();
					} catch (e) {
						notifyOnce(ctx, `flush:${e.code ?? "?"}`, `store write delayed (${describe(e)}); it is retried on the next step`);
					}
				} else r = await cm[name](target);
				// An id of another session (a search hit) is in the store, not in this session: the async operation
				// brings it in first (issue 12).
				if (!r.ok && r.code === "UNKNOWN_OBJECT" && typeof cm.setOpSync === "function") r = await cm[name](target);
				if (!r.ok) throw new Error(r.message);
				return { content: [{ type: "text", text: r.text }], details: r };
			},
		});
	}

	// --- memory across sessions (issue 12): the whole store, on request --------------------------------

	// What each memory tool does; its texts and parameters are prompts.js's.
	const memoryRuns = {
		search: (cm, p) => cm.search(p.query, { types: p.types, limit: p.limit }),
		expand: (cm, p) => cm.expand(agentPath(p.id), { types: p.types, path: p.path, positions: p.positions, metadata: p.metadata }),
		backlinks: (cm, p) => cm.backlinks(agentPath(p.id)),
		versions: (cm, p) => cm.versions(agentPath(p.id)),
		show_version: (cm, p) => cm.showVersion(agentPath(p.id), p.version),
		diff: (cm, p) => cm.diff(agentPath(p.id), p.from, p.to ?? "latest"),
	};
	const memoryTools = memoryToolTexts(Type, words.idDescription).map((t) => ({ ...t, run: memoryRuns[t.name] }));
	for (const t of memoryTools) {
		register({
			name: t.name,
			label: t.label,
			description: t.description,
			promptSnippet: t.snippet,
			parameters: t.parameters,
			executionMode: "sequential",
			async execute(_toolCallId, params, _signal, _onUpdate, ctx) {
				const cm = await manager(ctx);
				if (!cm) throw new Error(unavailable());
				if (typeof cm[t.name === "show_version" ? "showVersion" : t.name] !== "function") throw new Error(`${t.name} needs the ContextManager facade`);
				const r = await t.run(cm, params);
				return { content: [{ type: "text", text: r.text }], details: r };
			},
		});
	}

	pi.registerCommand("search", {
		description: "Search every session's files and tool outputs in the store: /search words…",
		handler: async (args, ctx) => {
			const cm = await manager(ctx);
			if (!cm || typeof cm.search !== "function") {
				ctx.ui.notify(unavailable(), "warning");
				return;
			}
			const q = String(args ?? "").trim();
			if (!q) {
				ctx.ui.notify("usage: /search words…", "warning");
				return;
			}
			try {
				ctx.ui.notify((await cm.search(q, { limit: 20 })).text, "info");
			} catch (e) {
				ctx.ui.notify(describe(e), "warning");
			}
		},
	});

	// --- user-facing --------------------------------------------------------------------------------

	// Context commits: the chain of this session (see README "Context commits").
	pi.registerCommand("ctx", {
		description: "Context commits: /ctx log [n] · /ctx show <id> · /ctx checkpoint [summary] · /ctx fork <id> · /ctx call [n]",
		handler: async (args, ctx) => {
			const cm = await manager(ctx);
			if (!cm) {
				ctx.ui.notify(unavailable(), "warning");
				return;
			}
			const [sub = "log", ...rest] = String(args ?? "").trim().split(/\s+/).filter(Boolean);
			try {
				ctx.ui.notify(await ctxCommand(ctx, cm, sub, rest), "info");
			} catch (e) {
				ctx.ui.notify(`/ctx ${sub}: ${describe(e)}`, "error");
			}
		},
	});

	async function ctxCommand(ctx, cm, sub, rest) {
		const line = (c) => `${c.id}  ${c.createdAt}  ${c.commitType.padEnd(10)} ${String(c.messageCount).padStart(4)} msg  ${c.trigger}${c.summary ? `  — ${c.summary}` : ""}`;
		switch (sub) {
			case "log": {
				const tip = cm.commitTip;
				if (!tip) return "no context commits in this session yet (/ctx checkpoint makes one)";
				const depth = Number.parseInt(rest[0] ?? "20", 10);
				return (await cm.commits.history(tip, { depth: Number.isInteger(depth) && depth > 0 ? depth : 20 })).map(line).join("\n");
			}
			case "show":
				if (!rest[0]) throw new Error("usage: /ctx show <ctx id>");
				return JSON.stringify(await cm.commits.show(rest[0]), null, 2);
			case "checkpoint": {
				await observeBranch(ctx);
				const c = await cm.checkpoint({ trigger: "explicit", summary: rest.join(" ") || undefined });
				return `committed ${line(c)}`;
			}
			case "fork": {
				// A new pi session file holding the commit's conversation; its header names the commit, so the
				// engine opens that session as a branch from it (fromCommit) when pi switches to it.
				const id = rest[0];
				if (!id) throw new Error("usage: /ctx fork <ctx id>");
				const m = await cm.commits.materialize(id, { format: "pi-jsonl", stop: "root" });
				const lines = m.jsonl.trimEnd().split("\n");
				const header = { ...JSON.parse(lines[0]), id: crypto.randomUUID(), timestamp: new Date().toISOString(), cwd: ctx.cwd, scmFromCommit: id };
				const dir = ctx.sessionManager.getSessionDir();
				const file = join(dir, `${header.timestamp.replace(/[:.]/g, "-")}_${header.id}.jsonl`);
				mkdirSync(dir, { recursive: true });
				writeFileSync(file, `${[JSON.stringify(header), ...lines.slice(1)].join("\n")}\n`);
				if (typeof ctx.switchSession === "function") {
					const r = await ctx.switchSession(file);
					if (!r?.cancelled) return `forked ${id} into ${file}`;
				}
				return `wrote ${file}: open it with /resume to continue from ${id}`;
			}
			case "call": {
				// Accountability: the commit a model call followed (default: the last call).
				const calls = cm.stats().modelCallCount;
				if (calls === 0) return "no model call in this session yet";
				const n = rest[0] === undefined ? calls - 1 : Number.parseInt(rest[0], 10);
				if (!Number.isInteger(n) || n < 0) throw new Error("usage: /ctx call [n] (model calls are numbered from 0)");
				const id = await cm.callCommit(n);
				return id ? `model call ${n} followed ${line(await cm.commits.show(id))}` : `model call ${n} came before this session's first commit`;
			}
			default:
				throw new Error(`unknown subcommand ${JSON.stringify(sub)} (log, show, checkpoint, fork, call)`);
		}
	}

	pi.registerCommand("context", {
		description: "Show the managed context: active objects with sizes, the metadata pool, pinned objects, totals",
		handler: async (_args, ctx) => {
			const cm = await manager(ctx);
			if (!cm) {
				ctx.ui.notify(unavailable(), "warning");
				return;
			}
			const cache = cfg.layout === "cache" && typeof cm.cacheStats === "function" ? cm.cacheStats() : null;
			// The ids the model sees (t12, f3), where it has them.
			const aliases = typeof cm.objects === "function" ? new Map(cm.objects().filter((o) => o.alias).map((o) => [o.id, o.alias])) : null;
			const report = formatContext(cm.snapshot(), S.last, ctx.cwd, cache, aliases, cm.stats());
			// Print mode (-p) has no UI: notify would be a no-op there.
			if (ctx.hasUI) ctx.ui.notify(report, "info");
			else process.stderr.write(`${report}\n`);
		},
	});
}

