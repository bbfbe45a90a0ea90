// self-context-manager as a pi extension: wires pi's hooks and tools to the native addon.
// Everything that decides what the model sees lives in the Rust core; this file only
// translates pi events into ContextManager calls and back. Loaded by pi's jiti loader on
// pi 0.73 (@mariozechner/*) and 1.x (which maps @mariozechner/* to its own packages).
import { createRequire } from "node:module";
import { existsSync, openSync, readSync, closeSync, statSync, mkdirSync, writeFileSync } from "node:fs";
import crypto from "node:crypto";
import { homedir } from "node:os";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import * as agent from "@mariozechner/pi-coding-agent";
import { Type } from "@mariozechner/pi-ai";

const require = createRequire(import.meta.url);
const config = require("../lib/config.js");
let addon = null;
let addonError = null;
try {
	addon = require("../index.js");
} catch (e) {
	addonError = e;
}

const STATUS_KEY = "scm";
const CONTEXT_TOOLS = ["activate", "deactivate", "pin", "unpin"];

// What the model is told, per layout (SCM_LAYOUT / settings "layout"). In the cache layout the engine
// also sends a one-line header message; these texts stay short and say the same in the model's terms.
const SYSTEM_SECTION = {
	cache: `Context management (self-context-manager):
- Every tool call has an id t1, t2, … (shown as the call's id) and every file an id f1, f2, …. Tool output stays where it happened; now and then older outputs and write/edit bodies are collapsed together to refs like [t12 · 340 lines]. The ids keep working.
- FILES messages list files as they become known: "f3 src/app.ts (1200 chars)", or "[unread]" for a file only seen in ls/find/grep/bash output.
- A CHANGED message shows, as a diff, a file you have in view that changed outside your own edits (on disk, by another agent). The files you are working on stay visible; activate(f3) always shows a file's current text.
- activate(id) shows something again as its own result: t12 that call's output, f3 the file's current text (an [unread] file is read first). pin(id) does the same and keeps it from collapsing until unpin(id). deactivate(id) lets what you no longer need collapse at the next collapse. read(path) reads a file as usual.
- search(query) finds files, notes and tool outputs of every earlier session (activate(id) loads a hit); versions/show_version/diff show older versions of a file on request.
- Notes are Markdown files: [[name]] and [text](path) links, #tags and frontmatter are understood. A note you activate lists what it links to as "- link id=…" lines (metadata only); expand(id) loads them, backlinks(id) lists notes linking to an object.`,
	spec: `Context management (self-context-manager):
- Files you read and tool outputs are objects. The METADATA_POOL message lists every object of this session with its id, one line each; a file marked [unread] was only discovered (by ls/find/grep/bash) and has not been read.
- The active set is shown as ACTIVE_CONTENT blocks at the end of the context: the current content of each active object, once. Tool results in the chat are only references (toolcall_ref id=…); the content is in the ACTIVE_CONTENT blocks while the object is active.
- read(path) loads a file into the active set. activate(id) brings back any object from the pool (an [unread] file is read first); deactivate(id) collapses it to its pool line; pin(id) keeps it active until unpin(id). Ids are as shown in the pool (a unique prefix works) or a file path.
- Older tool outputs collapse automatically; deactivate what you no longer need to keep the context small.
- search(query) finds files, notes and tool outputs of every earlier session; activate(id) loads a hit. versions/show_version/diff show older versions on request.
- Notes are Markdown files: [[name]] and [text](path) links, #tags and frontmatter are understood. An active note lists what it links to as "- link id=…" lines (metadata only); expand(id) loads them, backlinks(id) lists notes linking to an object.`,
};

// ---------------------------------------------------------------------------
// Configuration: environment first, then "selfContextManager" in pi's settings.json (lib/config.js, shared
// with the command-line tool).

export function loadConfig(cwd) {
	let agentDir;
	try {
		agentDir = typeof agent.getAgentDir === "function" ? agent.getAgentDir() : undefined;
	} catch {}
	return config.loadConfig(cwd, { agentDir });
}

// ---------------------------------------------------------------------------
// Small helpers (adapter only: paths as pi's tools take them, text of results, token estimates)

/** pi's tools accept "@path" and "~/path"; the engine resolves against the workspace root. */
function agentPath(p) {
	let s = String(p ?? "");
	if (s.startsWith("@")) s = s.slice(1);
	if (s === "~") return homedir();
	if (s.startsWith("~/")) return join(homedir(), s.slice(2));
	return s;
}

/** Directory a discovery tool listed: its path argument (a file's parent for grep on one file). */
function listedDir(cwd, p) {
	const abs = resolve(cwd, agentPath(p || "."));
	try {
		return statSync(abs).isDirectory() ? abs : dirname(abs);
	} catch {
		return abs;
	}
}

const textOf = (content) =>
	typeof content === "string" ? content : (content ?? []).filter((b) => b?.type === "text").map((b) => b.text).join("\n");

function estimate(messages) {
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
function transcriptEstimator() {
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

const fmtK = (n) => (n >= 10000 ? `${Math.round(n / 1000)}k` : n >= 1000 ? `${(n / 1000).toFixed(1)}k` : String(n));

/** The session id in a session file's header line (the fork's parent). */
function sessionIdOfFile(file) {
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
function llmMessages(messages) {
	try {
		return typeof agent.convertToLlm === "function" ? agent.convertToLlm(messages) : messages;
	} catch {
		return messages;
	}
}

const describe = (e) => (e?.code ? `${e.code}: ${e.message}` : String(e?.message ?? e));

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

	// One extension instance per loaded session runtime (pi re-imports the module on /new, /fork,
	// /resume, /reload); session_start may fire twice for one session (RPC fork): opening is idempotent.
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
		const options = {
			sessionId,
			workspaceRoot: ctx.cwd,
			store: cfg.store,
			layout: cfg.layout,
			cachePolicy: cfg.cachePolicy,
			policy: cfg.policy,
			mounts: cfg.mounts,
			defaultFilesystemId: cfg.defaultFilesystemId,
			defaultIsLocal: cfg.defaultIsLocal,
			watch: cfg.watch,
			maxContentBytes: cfg.maxContentBytes,
			secretPatterns: cfg.secretPatterns,
			readSecrets: cfg.readSecrets,
			readOutsideWorkspace: cfg.readOutsideWorkspace,
			noteFolders: cfg.noteFolders,
			// pi supplies its own system prompt on both lines.
			emitSystemMessage: false,
			// Provenance of the session's context commits.
			template: `pi/${agent.VERSION ?? "unknown"}`,
		};
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
		}
		return addon.ContextManager.open(options);
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

	// The run's final answer, stored before anything can leave the branch it is on.
	pi.on("agent_end", async (_e, ctx) => {
		await observeBranch(ctx);
		S.runs += 1;
		if (cfg.checkpointEvery > 0 && S.runs % cfg.checkpointEvery === 0) await checkpoint(ctx, { trigger: "turn_boundary" });
	});
	// Also where the branch is left or the session ends (messages added since, e.g. by a failed
	// agent_end write or a user `!cmd`); a no-op when nothing is new.
	for (const ev of ["session_before_tree", "session_before_fork", "session_before_switch"]) pi.on(ev, async (_e, ctx) => void (await observeBranch(ctx)));
	pi.on("session_tree", async (_e, ctx) => void (await rewindBranch(ctx)));

	pi.on("session_shutdown", async (_e, ctx) => {
		await observeBranch(ctx);
		if (cfg.checkpointEvery > 0) await checkpoint(ctx, { trigger: "session_end" });
		await closeManager(ctx);
		try {
			ctx.ui?.setStatus?.(STATUS_KEY, undefined);
		} catch {}
	});

	// --- what the model sees ----------------------------------------------------------------------

	pi.on("before_agent_start", async (e, ctx) => {
		if (!(await manager(ctx))) return;
		const sections = e.systemPromptOptions?.sections;
		if (sections && typeof sections === "object") {
			// 1.x: a named section keeps the rest of the structured system prompt (and its cache) intact.
			sections["context-management"] = SYSTEM_SECTION[cfg.layout];
			return;
		}
		return { systemPrompt: `${e.systemPrompt}\n\n${SYSTEM_SECTION[cfg.layout]}` };
	});

	pi.on("context", async (e, ctx) => {
		const cm = await manager(ctx);
		if (!cm) return;
		const raw = llmMessages(e.messages);
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

	// --- tools ---------------------------------------------------------------------------------------

	// pi refuses a second extension that registers one of these names ("Tool "read" conflicts with …").
	const register = (def) => pi.registerTool(def);

	const builtinRead = agent.createReadToolDefinition(process.cwd());
	const readTexts = {
		cache: {
			description: `${builtinRead.description} The text is this call's result; later it may be collapsed to a ref like [t12 · 340 lines] (activate the file's f-id to see its current text again).`,
			promptSnippet: builtinRead.promptSnippet,
			promptGuidelines: builtinRead.promptGuidelines,
		},
		spec: {
			description: `${builtinRead.description} The file's content is shown to you as an ACTIVE_CONTENT block at the end of the context (once, kept current) rather than in this tool's result.`,
			promptSnippet: "Read a file into the active context (shown as an ACTIVE_CONTENT block)",
			promptGuidelines: [
				...(builtinRead.promptGuidelines ?? []),
				"A file you read stays active (its current content at the end of the context) until you deactivate it; do not read it again to see it, and use activate(id) for files already in the METADATA_POOL.",
			],
		},
	}[cfg.layout];
	register({
		...builtinRead,
		...readTexts,
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

	const idDescription = {
		cache: "t12 (a tool call) or f3 (a file) as shown in the context, or a file path",
		spec: "An object id as shown in the METADATA_POOL (a unique prefix is enough), or a file path",
	}[cfg.layout];
	const idParam = Type.Object({ id: Type.String({ description: idDescription }) });
	const contextTools = {
		cache: {
			activate: {
				label: "Activate",
				description: "Show something again as this call's result: a tool call's output (t12) or a file's current text (f3 or a path; an [unread] file is read first). It collapses again later like any output unless pinned.",
				snippet: "Show a collapsed output (t12) or a file's current text (f3) again",
			},
			deactivate: {
				label: "Deactivate",
				description: "Free an output or file text you no longer need: at the next collapse it becomes a ref like [t12 · 340 lines]. activate(id) shows it again at any time.",
				snippet: "Let an output or file text you no longer need collapse",
			},
			pin: {
				label: "Pin",
				description: "Show something like activate and keep it from collapsing until unpin(id); for a file, its newest read or written text.",
				snippet: "Keep an output or file from collapsing",
			},
			unpin: {
				label: "Unpin",
				description: "Remove a pin: the object may collapse again at a later collapse.",
				snippet: "Let a pinned object collapse again",
			},
		},
		spec: {
			activate: {
				label: "Activate",
				description: "Load an object's current content into the active context (shown as an ACTIVE_CONTENT block from the next step on). An [unread] file is read first.",
				snippet: "Bring an object from the METADATA_POOL into the active context",
			},
			deactivate: {
				label: "Deactivate",
				description: "Collapse an active object to its one-line METADATA_POOL entry; its content leaves the context from the next step on. It can be activated again at any time.",
				snippet: "Remove an object's content from the active context (it stays in the pool)",
			},
			pin: {
				label: "Pin",
				description: "Activate an object and keep it active: pinned objects are exempt from automatic collapse until unpinned.",
				snippet: "Keep an object active (exempt from automatic collapse)",
			},
			unpin: {
				label: "Unpin",
				description: "Remove an object's pin; it stays active but may collapse automatically again.",
				snippet: "Let a pinned object collapse automatically again",
			},
		},
	}[cfg.layout];
	for (const name of CONTEXT_TOOLS) {
		const t = contextTools[name];
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
				const target = agentPath(params.id);
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
				const text = cfg.layout === "cache" ? cacheOpMessage(name, params.id, r.message) : r.message;
				return { content: [{ type: "text", text }], details: r };
			},
		});
	}

	// --- memory across sessions (issue 12): the whole store, on request --------------------------------

	const memoryTools = [
		{
			name: "search",
			label: "Search",
			description:
				"Full-text search over every file and tool output of every session in this project's store (notes, earlier sessions' results). Returns one line per hit (id, path or tool, session, snippet), best first; activate(id) loads one.",
			snippet: "Find notes, files and tool outputs from any session by words they contain",
			parameters: Type.Object({
				query: Type.String({ description: "Words that must all occur (word* for a prefix)" }),
				types: Type.Optional(Type.Array(Type.String(), { description: "file and/or toolcall" })),
				limit: Type.Optional(Type.Number({ description: "Most hits (default 10)" })),
			}),
			run: (cm, p) => cm.search(p.query, { types: p.types, limit: p.limit }),
		},
		{
			name: "expand",
			label: "Expand",
			description:
				"Load what a note (or any object with links) links to: all of its links, or a selection. Use after seeing its \"- link id=…\" lines when you need those files' content; one call instead of an activate per link. A link pinned to a version ([[b@v3]], line \"pinned=v3\") shows that version in the result instead.",
			snippet: "Load the files a note links to",
			parameters: Type.Object({
				id: Type.String({ description: idDescription }),
				types: Type.Optional(Type.Array(Type.String(), { description: "Only these target types: file, toolcall, note" })),
				path: Type.Optional(Type.String({ description: "Only targets whose path matches, e.g. *.md or notes/*" })),
				positions: Type.Optional(Type.Array(Type.Number(), { description: "Only these links, 1-based in the order of the link lines" })),
			}),
			run: (cm, p) => cm.expand(agentPath(p.id), { types: p.types, path: p.path, positions: p.positions }),
		},
		{
			name: "backlinks",
			label: "Backlinks",
			description: "List the notes that link to an object (any session), with where the links sit. Use to find what refers to a file or note before changing it.",
			snippet: "Find the notes that link to a file or note",
			parameters: Type.Object({ id: Type.String({ description: idDescription }) }),
			run: (cm, p) => cm.backlinks(agentPath(p.id)),
		},
		{
			name: "versions",
			label: "Versions",
			description: "List an object's stored versions (number, time, size, hash), oldest first. Use when you need to know how a file changed; show_version and diff read them.",
			snippet: "List the stored versions of a file or output",
			parameters: Type.Object({ id: Type.String({ description: idDescription }) }),
			run: (cm, p) => cm.versions(agentPath(p.id)),
		},
		{
			name: "show_version",
			label: "Show version",
			description: "Show one older version of an object as this result (not added to the context). version: its number from versions, tx:<id>, latest, or a time.",
			snippet: "Show an older version of a file or output",
			parameters: Type.Object({ id: Type.String({ description: idDescription }), version: Type.String({ description: "3, tx:812, latest or an ISO time" }) }),
			run: (cm, p) => cm.showVersion(agentPath(p.id), p.version),
		},
		{
			name: "diff",
			label: "Diff",
			description: "Unified diff between versions of an object (to defaults to latest). Cheaper than showing both versions.",
			snippet: "Show what changed between versions of a file or output",
			parameters: Type.Object({
				id: Type.String({ description: idDescription }),
				from: Type.String({ description: "A version: 3, tx:812 or a time" }),
				to: Type.Optional(Type.String({ description: "Default latest" })),
			}),
			run: (cm, p) => cm.diff(agentPath(p.id), p.from, p.to ?? "latest"),
		},
	];
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
			const report = formatContext(cm.snapshot(), S.last, ctx.cwd, cache, aliases);
			// Print mode (-p) has no UI: notify would be a no-op there.
			if (ctx.hasUI) ctx.ui.notify(report, "info");
			else process.stderr.write(`${report}\n`);
		},
	});
}

/**
 * The result text of a set operation in the cache layout, in the ids the model used. The engine's
 * messages speak of object ids and the active set; activate/pin results are replaced by the content
 * in what the model sees, so this text matters for deactivate/unpin and for the user.
 */
export function cacheOpMessage(op, target, message) {
	const t = String(target);
	const deleted = /\(the file is deleted[^)]*\)/.exec(message)?.[0];
	const note = deleted ? ` ${deleted}` : "";
	switch (op) {
		case "activate":
			// The engine renders the content (or a pointer to where it is live) as this result either way.
			return `activated ${t}: its content is shown as this result${note}`;
		case "pin":
			return /already pinned/.test(message) ? `${t} is already pinned` : `pinned ${t}: shown and kept from collapsing until unpin(${t})`;
		case "deactivate":
			if (/was not active/.test(message)) return `${t} is not shown (already collapsed)`;
			return `deactivated${/and unpinned/.test(message) ? " and unpinned" : ""} ${t}: it collapses to a ref at the next collapse; activate(${t}) shows it again`;
		case "unpin":
			return /was not pinned/.test(message) ? `${t} was not pinned` : `unpinned ${t}: it may collapse again`;
		default:
			return message;
	}
}

/** The /context report (user-facing only; the model never sees it). */
export function formatContext(snap, last, cwd, cache = null, aliases = null) {
	const byId = new Map(snap.metadataPool.map((e) => [e.id, e]));
	const show = (p) => {
		if (!cwd || !p || !isAbsolute(p)) return p;
		const r = relative(cwd, p);
		return r && !r.startsWith(`..${sep}`) && r !== ".." && !isAbsolute(r) ? r : p;
	};
	const name = (e) => (e?.type === "file" ? show(e.path) : e?.tool ? `${e.tool}${e.args ? ` ${e.args}` : ""}` : e?.type ?? "?");
	const size = (e) => (e?.char_count != null ? `${e.char_count} chars` : "");
	const short = (id) => aliases?.get(id) ?? (id.length > 16 ? id.slice(0, 12) : id);
	const pinned = new Set(snap.pinnedSet);
	const lines = [];
	let activeChars = 0;
	lines.push(`Active (${snap.activeSet.length}):`);
	for (const id of snap.activeSet) {
		const e = byId.get(id);
		activeChars += e?.char_count ?? 0;
		lines.push(`  ${pinned.has(id) ? "📌" : "•"} ${short(id)} ${e?.type ?? ""} ${name(e)} ${size(e)}`.trimEnd());
	}
	const files = snap.metadataPool.filter((e) => e.type === "file");
	const stubs = files.filter((e) => e.state === "stub").length;
	const deleted = files.filter((e) => e.state === "deleted").length;
	const toolcalls = snap.metadataPool.length - files.length;
	lines.push(`Pool: ${snap.metadataPool.length} objects — ${files.length} files (${stubs} unread, ${deleted} deleted), ${toolcalls} tool outputs`);
	lines.push(`Pinned (${snap.pinnedSet.length}): ${snap.pinnedSet.map((id) => name(byId.get(id))).join(", ") || "none"}`);
	const totals = [`session index ${snap.sessionIndex.length}`, `active file text ${activeChars} chars`];
	if (last) totals.push(`last model call ~${last.tokens} tokens (pi alone: ~${last.rawTokens})`);
	lines.push(`Totals: ${totals.join(", ")}`);
	if (cache)
		lines.push(
			`Cache layout: ${cache.epochs} collapses, ${cache.folds + cache.hostFolds} folds; ${cache.collapsedResults} outputs and ${cache.collapsedArgs} write/edit/bash bodies collapsed to refs; live output ~${cache.liveUnits} tokens`,
		);
	return lines.join("\n");
}
