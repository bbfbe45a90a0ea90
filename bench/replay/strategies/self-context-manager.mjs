// `self-context-manager`: the product's engine through its Node addon — one
// ContextManager per replayed session, on a private embedded store in a
// temporary directory, in the cache layout by default:
//
//   const cm = await ContextManager.open({ sessionId, workspaceRoot: tmp,
//     store: { kind: 'embedded', path: tmp + '/store.sqlite' }, layout: 'cache', watch: false });
//   out = await cm.transformContext(messages);   // before every model call
//   await cm.close();
//
// Options (--opt self-context-manager.KEY=VALUE):
//   layout=cache|spec          default cache
//   store=embedded|memory      embedded (a file in the temp dir, default) or ':memory:'
//   module=PATH                the package to import (default: the repo root; or SCM_ADDON)
//   resumeEvery=N              close the manager and open it again (same store, same session)
//                              before every Nth call: a resume must change nothing the model sees
//   any CachePolicy key        high, low, minCollapseChars, bashCollapseChars, fold, summaryChars,
//                              rewriteCallIds, dropThinking, dedupeReads, honourHostCompaction, deactivateEpoch
//                              e.g. --opt self-context-manager.honourHostCompaction=false
//
// If the addon cannot be imported (not built), init() returns { skip } and the
// harness skips this strategy. Every toolResult the engine returns follows its
// toolCall; the harness counts violations.

import { mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const DEFAULT_MODULE = new URL("../../../index.js", import.meta.url); // repo root package
// The policy keys are defined once, in the package's config (checked against
// the addon's generated types by __test__/policy-keys.test.mjs).
const POLICY_KEYS = new Set(Object.keys(createRequire(import.meta.url)("../../../lib/config.js").CACHE_POLICY_KEYS));

function parseValue(v) {
  if (v === "true") return true;
  if (v === "false") return false;
  const n = Number(v);
  return Number.isFinite(n) && String(v).trim() !== "" ? n : v;
}

export default function createSelfContextManager(options = {}) {
  const { module: modulePath, layout = "cache", store = "embedded", resumeEvery = 0, ...rest } = options;
  const every = Number(resumeEvery) || 0;
  const cachePolicy = {};
  for (const [k, v] of Object.entries(rest)) {
    if (!POLICY_KEYS.has(k)) throw new Error(`self-context-manager: unknown option ${k}`);
    cachePolicy[k] = parseValue(v);
  }
  let cm;
  let dir;
  let openOptions;
  let ContextManager;
  let stats = {};
  const ms = [];
  return {
    name: "self-context-manager",
    description: `the product engine (ContextManager.transformContext via the Node addon), layout ${layout}${every > 0 ? `, resumed every ${every} calls` : ""}${
      Object.keys(cachePolicy).length ? `, ${JSON.stringify(cachePolicy)}` : ""
    }`,
    async init(ctx) {
      const spec = modulePath ?? process.env.SCM_ADDON;
      const url = spec ? pathToFileURL(spec).href : DEFAULT_MODULE.href;
      let mod;
      try {
        mod = await import(url);
      } catch (err) {
        return { skip: `addon not built (${url}: ${String(err?.message ?? err).split("\n")[0]})` };
      }
      ContextManager = mod.ContextManager ?? mod.default?.ContextManager;
      if (typeof ContextManager?.open !== "function") {
        return { skip: `addon not built (${url} does not export ContextManager.open)` };
      }
      dir = await mkdtemp(join(tmpdir(), "scm-replay-"));
      if (every > 0 && store === "memory") return { skip: "resumeEvery needs a store that outlives the manager" };
      openOptions = {
        sessionId: ctx.sessionId ?? "replay",
        workspaceRoot: dir,
        store: { kind: "embedded", path: store === "memory" ? ":memory:" : join(dir, "store.sqlite") },
        layout,
        cachePolicy,
        watch: false,
      };
      cm = await ContextManager.open(openOptions);
      return undefined;
    },
    async transform(messages, index) {
      if (every > 0 && index > 0 && index % every === 0) {
        await cm.close();
        cm = await ContextManager.open(openOptions);
      }
      const t0 = performance.now();
      const out = await cm.transformContext(messages);
      ms.push(performance.now() - t0);
      return out;
    },
    stats() {
      const sorted = [...ms].sort((a, b) => a - b);
      const q = (p) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))].toFixed(2) : "-");
      if (cm && layout === "cache") stats = cm.cacheStats();
      return { ...stats, transformMs: `p50 ${q(0.5)} / p99 ${q(0.99)} / max ${q(1)}` };
    },
    async close() {
      if (cm) await cm.close();
      cm = undefined;
      if (dir) await rm(dir, { recursive: true, force: true });
    },
  };
}
