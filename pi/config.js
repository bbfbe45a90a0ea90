// Configuration of the pi package: environment first, then "selfContextManager" in pi's settings.json. The rules
// (and the cache-policy keys, checked in __test__/policy-keys.test.mjs) are lib/config.js's, shared with the
// command-line tool; this file only adds pi's settings folder.
import { createRequire } from "node:module";
import * as agent from "@mariozechner/pi-coding-agent";

const require = createRequire(import.meta.url);
const config = require("../lib/config.js");

export function loadConfig(cwd) {
	let agentDir;
	try {
		agentDir = typeof agent.getAgentDir === "function" ? agent.getAgentDir() : undefined;
	} catch {}
	return config.loadConfig(cwd, { agentDir });
}

/**
 * The options of ContextManager.open from the configuration, for session `sessionId` in `cwd`. Every key is
 * passed as lib/config.js produced it (cachePolicy, policy, …): nothing here names a policy key.
 */
export function openOptions(cfg, cwd, sessionId) {
	return {
		sessionId,
		workspaceRoot: cwd,
		store: cfg.store,
		layout: cfg.layout,
		cachePolicy: cfg.cachePolicy,
		policy: cfg.policy,
		mounts: cfg.mounts,
		defaultFilesystemId: cfg.defaultFilesystemId,
		defaultIsLocal: cfg.defaultIsLocal,
		watch: cfg.watch,
		watchPoll: cfg.watchPoll,
		watchPollMs: cfg.watchPollMs,
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
}
