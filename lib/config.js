'use strict';
// Configuration shared by the pi package (pi/index.js) and the command-line tool (lib/cli/): which store,
// which layout and policy, from the environment and pi's settings.json.

const { readFileSync } = require('node:fs');
const { homedir } = require('node:os');
const { join, resolve } = require('node:path');


/** pi's global settings folder: pi's own answer when given, else PI_CODING_AGENT_DIR or ~/.pi/agent. */
function defaultAgentDir() {
  return process.env.PI_CODING_AGENT_DIR || join(homedir(), '.pi', 'agent');
}

function readSettings(cwd, agentDir) {
  const files = [join(agentDir ?? defaultAgentDir(), 'settings.json')];
  files.push(join(cwd, ".pi", "settings.json"));
  let out = {};
  for (const f of files) {
    try {
      const s = JSON.parse(readFileSync(f, "utf8"))?.selfContextManager;
      if (s && typeof s === "object") out = { ...out, ...s, policy: { ...out.policy, ...s.policy }, cachePolicy: { ...out.cachePolicy, ...s.cachePolicy } };
    } catch {}
  }
  return out;
}

/** The cache layout's policy keys (ContextManager.open cachePolicy) and their kinds. */
const CACHE_POLICY_KEYS = {
  high: "int",
  low: "int",
  fold: "int",
  minCollapseChars: "int",
  bashCollapseChars: "int",
  summaryChars: "int",
  deactivateEpoch: "int",
  workingCalls: "int",
  workingEditedCalls: "int",
  workingUnits: "int",
  workingCopyUnits: "int",
  scaleAbove: "int",
  rewriteCallIds: "bool",
  dropThinking: "bool",
  dedupeReads: "bool",
  honourHostCompaction: "bool",
};

const envInt = (name) => {
  const v = process.env[name];
  if (v == null || v === "") return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got ${JSON.stringify(v)}`);
  return n;
};
const envBool = (name) => {
  const v = process.env[name];
  if (v == null || v === "") return undefined;
  return !/^(0|false|no|off)$/i.test(v);
};

/**
 * The package's configuration for a workspace: environment first, then "selfContextManager" in pi's
 * settings.json (project .pi/settings.json over the global one). `options.agentDir`: pi's settings folder
 * (default PI_CODING_AGENT_DIR or ~/.pi/agent); `options.store`: a store that wins over both (the CLI's --store).
 * Throws an Error with code INVALID_ARGUMENT on a bad value.
 */
function loadConfig(cwd, options = {}) {
  try {
    return load(cwd, options);
  } catch (e) {
    e.code ??= 'INVALID_ARGUMENT';
    throw e;
  }
}

function load(cwd, options) {
  const s = readSettings(cwd, options.agentDir);
  const env = process.env;
  const kind = env.SCM_STORE || s.store?.kind || (env.SCM_XTDB_URL || s.store?.url ? "xtdb" : "embedded");
  let store;
  if (options.store) {
    store =
      options.store.kind === 'embedded'
        ? { kind: 'embedded', path: resolve(cwd, options.store.path) }
        : { ...options.store, timeoutMs: envInt('SCM_XTDB_TIMEOUT_MS') ?? s.store?.timeoutMs };
  } else if (kind === "xtdb") {
    const url = env.SCM_XTDB_URL || s.store?.url;
    if (!url) throw new Error("SCM_STORE=xtdb needs SCM_XTDB_URL (e.g. http://localhost:3000)");
    store = { kind: "xtdb", url, timeoutMs: envInt("SCM_XTDB_TIMEOUT_MS") ?? s.store?.timeoutMs };
  } else if (kind === "embedded") {
    const p = env.SCM_STORE_PATH || s.store?.path;
    store = { kind: "embedded", ...(p ? { path: resolve(cwd, p) } : {}) };
  } else throw new Error(`SCM_STORE must be "embedded" or "xtdb", got ${JSON.stringify(kind)}`);
  // "cache" (default): tool output inline, collapsed in batches (epochs) to refs, cache-friendly.
  // "spec": METADATA_POOL + toolcall_ref + ACTIVE_CONTENT blocks at the end.
  const layout = env.SCM_LAYOUT || s.layout || "cache";
  if (layout !== "cache" && layout !== "spec") throw new Error(`SCM_LAYOUT must be "cache" or "spec", got ${JSON.stringify(layout)}`);
  // Cache layout thresholds in chars/4 units (unset keys keep the engine's defaults: high 10000, low 2000, fold 4000).
  const cachePolicy = {
    ...s.cachePolicy,
    high: envInt("SCM_CACHE_HIGH") ?? s.cachePolicy?.high,
    low: envInt("SCM_CACHE_LOW") ?? s.cachePolicy?.low,
    fold: envInt("SCM_CACHE_FOLD") ?? s.cachePolicy?.fold,
    workingCalls: envInt("SCM_CACHE_WORKING_CALLS") ?? s.cachePolicy?.workingCalls,
    workingEditedCalls: envInt("SCM_CACHE_WORKING_EDITED_CALLS") ?? s.cachePolicy?.workingEditedCalls,
    workingUnits: envInt("SCM_CACHE_WORKING_UNITS") ?? s.cachePolicy?.workingUnits,
    workingCopyUnits: envInt("SCM_CACHE_WORKING_COPY_UNITS") ?? s.cachePolicy?.workingCopyUnits,
    scaleAbove: envInt("SCM_CACHE_SCALE_ABOVE") ?? s.cachePolicy?.scaleAbove,
  };
  for (const [k, v] of Object.entries(cachePolicy)) {
    if (v === undefined) continue;
    const kind = CACHE_POLICY_KEYS[k];
    if (!kind) throw new Error(`selfContextManager.cachePolicy: unknown key ${JSON.stringify(k)} (known: ${Object.keys(CACHE_POLICY_KEYS).join(", ")})`);
    if (kind === "int" ? !(Number.isInteger(v) && v >= 0) : typeof v !== "boolean")
      throw new Error(`selfContextManager.cachePolicy.${k} must be ${kind === "int" ? "a non-negative integer" : "true or false"}, got ${JSON.stringify(v)}`);
  }
  // Spec layout collapse window.
  const policy = {
    perTurn: envInt("SCM_POLICY_PER_TURN") ?? s.policy?.perTurn,
    turnsBack: envInt("SCM_POLICY_TURNS_BACK") ?? s.policy?.turnsBack,
    collapseFiles: envBool("SCM_POLICY_COLLAPSE_FILES") ?? s.policy?.collapseFiles,
  };
  let mounts = s.mounts;
  if (env.SCM_MOUNTS) {
    try {
      mounts = JSON.parse(env.SCM_MOUNTS);
    } catch (e) {
      throw new Error(`SCM_MOUNTS must be a JSON array of { agentPrefix, canonicalPrefix, filesystemId, hostPrefix? }: ${e.message}`);
    }
  }
  // Sandboxes (SSOT §5.1–§5.2): the filesystem unmapped paths belong to, and whether it is this machine's. With
  // defaultIsLocal false, a path no mount maps is neither read nor watched on the host.
  const defaultFilesystemId = env.SCM_DEFAULT_FILESYSTEM_ID || s.defaultFilesystemId;
  if (defaultFilesystemId !== undefined && (typeof defaultFilesystemId !== 'string' || defaultFilesystemId === '')) {
    throw new Error(`selfContextManager.defaultFilesystemId must be a non-empty string, got ${JSON.stringify(defaultFilesystemId)}`);
  }
  const defaultIsLocal = envBool('SCM_DEFAULT_IS_LOCAL') ?? s.defaultIsLocal;
  if (defaultIsLocal !== undefined && typeof defaultIsLocal !== 'boolean') {
    throw new Error(`selfContextManager.defaultIsLocal must be true or false, got ${JSON.stringify(defaultIsLocal)}`);
  }
  // Note folders (issue 12): every .md under them is indexed as a note at session start and watched.
  // Relative paths are relative to the workspace (pi's cwd). SCM_NOTE_FOLDERS: comma-separated.
  const noteFolders = env.SCM_NOTE_FOLDERS
    ? env.SCM_NOTE_FOLDERS.split(',').map((p) => p.trim()).filter((p) => p !== '')
    : s.noteFolders;
  if (noteFolders !== undefined && (!Array.isArray(noteFolders) || noteFolders.some((p) => typeof p !== 'string' || p.trim() === ''))) {
    throw new Error(`selfContextManager.noteFolders must be an array of non-blank paths, got ${JSON.stringify(noteFolders)}`);
  }
  // When the watcher polls directories ("auto": network filesystems and directories the platform's watcher refuses;
  // "always"; "never") and how often. Checked here too (the core checks its API's callers), so that a bad setting
  // is a configuration error when pi starts, not a failed open.
  const watchPoll = env.SCM_WATCH_POLL || s.watchPoll;
  if (watchPoll !== undefined && !["auto", "always", "never"].includes(watchPoll)) {
    throw new Error(`SCM_WATCH_POLL (selfContextManager.watchPoll) must be "auto", "always" or "never", got ${JSON.stringify(watchPoll)}`);
  }
  const watchPollMs = envInt("SCM_WATCH_POLL_MS") ?? s.watchPollMs;
  if (watchPollMs !== undefined && !(Number.isInteger(watchPollMs) && watchPollMs >= 10 && watchPollMs <= 3_600_000)) {
    throw new Error(`SCM_WATCH_POLL_MS (selfContextManager.watchPollMs) must be 10 to 3600000 (milliseconds), got ${JSON.stringify(watchPollMs)}`);
  }
  return {
    defaultFilesystemId,
    noteFolders,
    defaultIsLocal,
    disabled: envBool("SCM_DISABLE") ?? s.disabled === true,
    store,
    layout,
    cachePolicy,
    policy,
    mounts,
    watch: envBool("SCM_WATCH") ?? s.watch ?? true,
    watchPoll,
    watchPollMs,
    maxContentBytes: envInt("SCM_MAX_CONTENT_BYTES") ?? s.maxContentBytes,
    // "cancel" (default): pi's compaction is cancelled while the manager owns the context.
    compaction: env.SCM_COMPACTION || s.compaction || "cancel",
    retryMs: envInt("SCM_RETRY_MS") ?? 30000,
    // Secrets (.env, keys …) and files outside the workspace are stored metadata-only unless opted in.
    secretPatterns: s.secretPatterns,
    readSecrets: envBool("SCM_READ_SECRETS") ?? s.readSecrets,
    readOutsideWorkspace: envBool("SCM_READ_OUTSIDE_WORKSPACE") ?? s.readOutsideWorkspace,
    // Context commits: a turn-boundary checkpoint after every N-th completed agent run, and one at session
    // end (0: neither; /ctx checkpoint and compactions still commit).
    checkpointEvery: envInt("SCM_CHECKPOINT_EVERY") ?? s.checkpointEvery ?? 1,
  };
}

/** `--store` on the command line: an http(s) URL is an XTDB node, anything else an embedded store's file. */
function storeFromArg(arg) {
  if (/^https?:\/\//i.test(arg)) return { kind: 'xtdb', url: arg };
  return { kind: 'embedded', path: arg };
}

module.exports = { loadConfig, storeFromArg, CACHE_POLICY_KEYS };
