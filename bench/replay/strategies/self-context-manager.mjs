// `self-context-manager`: the product's engine, through its Node addon.
//
// SLOT TO BE WIRED BY THE LEAD. The contract the addon must meet:
//
//   import { ContextManager } from "<repo root>/index.js";   // napi-rs loader (CJS or ESM)
//   const cm = new ContextManager(options);                  // options: from --opt self-context-manager.KEY=VALUE
//   const out = cm.transformContext(messages);               // sync or Promise
//   cm.close?.() / cm.dispose?.()                            // optional, at session end
//
// `messages` is exactly what pi's `context` hook receives before a model call:
// an array of pi AgentMessages (roles user / assistant / toolResult /
// bashExecution / custom / compactionSummary / branchSummary, shapes as in pi-ai),
// frozen (do not mutate; return new objects). One ContextManager is created per
// replayed session and sees every call of that session in order, each time
// with the full transcript (growing by the newest assistant turn and tool
// results; after a pi compaction the transcript restarts with the summary).
// `out` must be what the model should see: an array of AgentMessages (or
// `{ messages }`, or a JSON string of either). The harness then applies pi's
// own convertToLlm + pi-ai transformMessages, serialises and counts tokens.
// Every toolResult returned must follow its matching toolCall (the harness
// reports orphaned results per strategy; pi-ai only patches orphaned calls).
//
// If the addon cannot be imported (not built yet), init() returns
// { skip: "addon not built: ..." } and the harness skips this strategy.
// The module path can be overridden with --opt self-context-manager.module=PATH
// or SCM_ADDON=PATH.

import { pathToFileURL } from "node:url";

const DEFAULT_MODULE = new URL("../../../index.js", import.meta.url); // repo root package

function normalizeOutput(out) {
  if (typeof out === "string") out = JSON.parse(out);
  if (out && !Array.isArray(out) && Array.isArray(out.messages)) out = out.messages;
  if (!Array.isArray(out)) throw new Error("transformContext must return an array of messages");
  return out;
}

export default function createSelfContextManager(options = {}) {
  const { module: modulePath, ...cmOptions } = options;
  let cm;
  return {
    name: "self-context-manager",
    description: "the product engine (ContextManager.transformContext via the Node addon)",
    async init() {
      const spec = modulePath ?? process.env.SCM_ADDON;
      const url = spec ? pathToFileURL(spec).href : DEFAULT_MODULE.href;
      let mod;
      try {
        mod = await import(url);
      } catch (err) {
        return { skip: `addon not built (${url}: ${String(err?.message ?? err).split("\n")[0]})` };
      }
      const ContextManager = mod.ContextManager ?? mod.default?.ContextManager;
      if (typeof ContextManager !== "function") {
        return { skip: `addon not built (${url} does not export ContextManager)` };
      }
      cm = Object.keys(cmOptions).length ? new ContextManager(cmOptions) : new ContextManager();
      if (typeof cm.transformContext !== "function") {
        return { skip: "ContextManager has no transformContext(messages)" };
      }
      return undefined;
    },
    async transform(messages) {
      return normalizeOutput(await cm.transformContext(messages));
    },
    async close() {
      if (cm && typeof cm.close === "function") await cm.close();
      else if (cm && typeof cm.dispose === "function") await cm.dispose();
      cm = undefined;
    },
  };
}
