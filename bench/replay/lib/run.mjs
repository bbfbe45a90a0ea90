// Replay engine: feeds each recorded call's context through every strategy,
// counts tokens of what the model receives, and computes prompt-cache reuse
// (longest common token prefix with the same strategy's previous call) and
// effective cost (uncached + 0.1 x cached).

import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { basename } from "node:path";
import { addInto, messageBreakdown } from "./breakdown.mjs";
import { toProviderMessages } from "./llm.mjs";
import { SYSTEM_PROMPT, TOOLS } from "./prompt.mjs";
import { loadSession } from "./session.mjs";
import { anchorVisibility, contextIndex, PRICE_MODELS, priceCall, sessionEdits } from "./sufficiency.mjs";
import { CACHE_READ_FACTOR, callCost, callSegments, lcpSegments, segmentsLength, systemSegment, toolsSegment, Tokenizer } from "./tokens.mjs";

export const DEFAULT_PREAMBLE = Object.freeze({ system: SYSTEM_PROMPT, tools: TOOLS });

/** Load a strategy factory from strategies/<name>.mjs (or an explicit file path). */
export async function loadStrategyFactory(name) {
  const url = /[\\/]|\.m?js$/.test(name) ? new URL(name, `file://${process.cwd()}/`) : new URL(`../strategies/${name}.mjs`, import.meta.url);
  const mod = await import(url.href);
  const factory = mod.default ?? mod.create;
  if (typeof factory !== "function") throw new Error(`strategy ${name}: default export must be a factory function`);
  return factory;
}

function orphanedResults(providerMessages) {
  const calls = new Set();
  let orphans = 0;
  for (const m of providerMessages) {
    if (m.role === "assistant") for (const b of m.content ?? []) if (b.type === "toolCall") calls.add(b.id);
    if (m.role === "toolResult" && !calls.has(m.toolCallId)) orphans++;
  }
  return orphans;
}

/**
 * Replay one session through the given strategies.
 * @param {object} p
 * @param {string} p.file            session path (for labels)
 * @param {string} [p.text]          JSONL text (read from file if absent)
 * @param {{name:string, factory:Function, options?:object}[]} p.strategies
 * @param {Tokenizer} [p.tok]
 * @param {{system:string, tools:object[]}} [p.preamble]
 * @returns {Promise<object>} { session, rows, skipped, reconstruction, breakdown, stats, timings }
 */
export async function replaySession({ file, label: givenLabel, text, strategies, tok = new Tokenizer(), preamble = DEFAULT_PREAMBLE, log = () => {}, maxCalls }) {
  const t0 = performance.now();
  text ??= await readFile(file, "utf8");
  const session = loadSession(text);
  if (maxCalls > 0 && session.calls.length > maxCalls) {
    // Truncation: the session as it was after its first maxCalls model calls.
    session.calls = session.calls.slice(0, maxCalls);
    session.compactionCalls = session.compactionCalls.filter((c) => c < maxCalls);
  }
  const label = givenLabel ?? basename(file ?? "session");
  const tLoad = performance.now() - t0;

  const countTokens = (agentMessages) => segmentsLength(callSegments(tok, preamble, toProviderMessages(agentMessages)));
  const preambleTokens = tok.count(systemSegment(preamble.system)) + tok.count(toolsSegment(preamble.tools));

  const rows = [];
  const skipped = [];
  const stats = {};
  const timings = { load: tLoad };
  const perCallRaw = [];
  const breakdownSum = {};
  const breakdownUnique = {};
  const uniqueSeen = new WeakSet();
  // Successful recorded edits by call (anchor lines, re-read penalty), and each
  // call's gap to the previous request (for the cache-expiry price model).
  const editsByCall = sessionEdits(session, (t) => tok.count(t));
  const gaps = session.calls.map((c, i) => (i > 0 && c.time !== null && session.calls[i - 1].time !== null ? c.time - session.calls[i - 1].time : null));
  const editRows = [];
  let visibilityMs = 0;

  for (const { name, factory, options } of strategies) {
    const ts = performance.now();
    const strat = factory(options ?? {});
    const sname = strat.name ?? name;
    const ctx = {
      sessionFile: file,
      sessionId: session.header?.id,
      header: session.header,
      callCount: session.calls.length,
      preamble,
      tokenizer: tok,
      countTokens,
      toProviderMessages,
      log,
    };
    const init = await strat.init?.(ctx);
    if (init && init.skip) {
      skipped.push({ strategy: sname, reason: init.skip });
      log(`  ${sname}: skipped — ${init.skip}`);
      await strat.close?.();
      continue;
    }
    let prev = null;
    let orphanCalls = 0;
    for (const call of session.calls) {
      const info = { usage: call.usage, model: call.model, stopReason: call.stopReason, entryId: call.entryId, compactionsBefore: call.compactionsBefore };
      const out = await strat.transform(call.messages, call.index, info);
      if (!Array.isArray(out)) throw new Error(`strategy ${sname} returned a non-array at call ${call.index}`);
      const provider = toProviderMessages(out);
      const segs = callSegments(tok, preamble, provider);
      const total = segmentsLength(segs);
      const cached = lcpSegments(prev, segs);
      prev = segs;
      if (orphanedResults(provider)) orphanCalls++;
      const c = callCost(total, cached);
      // Edit-anchor visibility: only calls that made a successful edit are checked,
      // against the call's provider messages (plain text and line sets memoised per message).
      let edits = 0;
      let supported = 0;
      let penalty = 0;
      const callEdits = editsByCall.get(call.index);
      if (callEdits) {
        const tv = performance.now();
        const context = contextIndex(provider);
        for (const ed of callEdits) {
          const v = anchorVisibility(ed.lines, context);
          edits++;
          if (v.supported) supported++;
          else penalty += ed.penalty;
          editRows.push({ session: label, call: call.index, strategy: sname, toolCallId: ed.id, path: ed.path, ...v, penalty: v.supported ? 0 : ed.penalty, penaltySource: ed.penaltySource });
        }
        visibilityMs += performance.now() - tv;
      }
      const prices = {};
      let expired = false;
      for (const pm of PRICE_MODELS) {
        const p = priceCall(pm, total, cached, gaps[call.index], penalty);
        prices[pm.key] = p.effective;
        prices[`${pm.key}Penalised`] = p.penalised;
        expired ||= p.expired;
      }
      // What the provider received, hashed: refactors of the engine must keep it byte-identical
      // (payloads.csv; token counts alone would miss a changed word of the same length).
      const payload = createHash("sha256").update(JSON.stringify(provider)).digest("hex");
      rows.push({ session: label, call: call.index, strategy: sname, messages: provider.length, ...c, edits, supported, penalty, expired, prices, payload });
      if (sname === "raw") {
        perCallRaw.push(total);
        addInto(breakdownSum, { "system prompt + tools": preambleTokens });
        for (const m of provider) {
          const r = messageBreakdown(tok, m);
          addInto(breakdownSum, r);
          if (!uniqueSeen.has(m)) {
            uniqueSeen.add(m);
            addInto(breakdownUnique, r);
          }
        }
      }
    }
    stats[sname] = { ...strat.stats?.(), callsWithOrphanedToolResults: orphanCalls, description: strat.description ?? "" };
    await strat.close?.();
    timings[sname] = performance.now() - ts;
  }
  addInto(breakdownUnique, { "system prompt + tools": preambleTokens });

  // Reconstruction check: our raw token count vs the provider's recorded usage.
  const reconstruction = [];
  if (perCallRaw.length) {
    for (const call of session.calls) {
      const u = call.usage;
      const recorded = u ? (u.input ?? 0) + (u.cacheRead ?? 0) + (u.cacheWrite ?? 0) : 0;
      reconstruction.push({
        session: label,
        call: call.index,
        stopReason: call.stopReason,
        recordedInput: u?.input ?? 0,
        recordedCacheRead: u?.cacheRead ?? 0,
        recordedCacheWrite: u?.cacheWrite ?? 0,
        recordedTotal: recorded,
        rawTotal: perCallRaw[call.index],
      });
    }
  }
  timings.visibility = visibilityMs;
  timings.total = performance.now() - t0;
  return {
    session: label,
    format: session.format,
    calls: session.calls.length,
    compactionCalls: session.compactionCalls,
    preambleTokens,
    rows,
    editRows,
    skipped,
    stats,
    reconstruction,
    breakdown: { summedOverCalls: breakdownSum, uniqueContent: breakdownUnique },
    timings,
  };
}

/** Per-strategy sums and ratios vs raw. */
export function summarize(rows) {
  const by = new Map();
  for (const r of rows) {
    let s = by.get(r.strategy);
    if (!s) {
      s = { strategy: r.strategy, calls: 0, total: 0, cached: 0, uncached: 0, effective: 0, edits: 0, supported: 0, penalty: 0, expiredCalls: 0, prices: {} };
      by.set(r.strategy, s);
    }
    s.calls++;
    s.total += r.total;
    s.cached += r.cached;
    s.uncached += r.uncached;
    s.effective += r.effective;
    s.edits += r.edits ?? 0;
    s.supported += r.supported ?? 0;
    s.penalty += r.penalty ?? 0;
    if (r.expired) s.expiredCalls++;
    for (const [k, v] of Object.entries(r.prices ?? {})) s.prices[k] = (s.prices[k] ?? 0) + v;
  }
  const list = [...by.values()];
  const raw = by.get("raw");
  for (const s of list) {
    s.totalRatio = raw ? s.total / raw.total : NaN;
    s.uncachedRatio = raw ? s.uncached / raw.uncached : NaN;
    s.effectiveRatio = raw ? s.effective / raw.effective : NaN;
    s.supportedShare = s.edits ? s.supported / s.edits : NaN;
    s.priceRatios = {};
    for (const [k, v] of Object.entries(s.prices)) s.priceRatios[k] = raw?.prices[k] ? v / raw.prices[k] : NaN;
  }
  return list;
}

/** Reconstruction quality: ratio of our raw o200k count to the provider's recorded input. */
export function reconstructionStats(recon) {
  const valid = recon.filter((r) => r.recordedTotal > 0);
  const ratios = valid.map((r) => r.rawTotal / r.recordedTotal).sort((a, b) => a - b);
  const q = (p) => (ratios.length ? ratios[Math.min(ratios.length - 1, Math.floor(p * ratios.length))] : NaN);
  const sum = (f) => valid.reduce((a, r) => a + f(r), 0);
  const xs = valid.map((r) => r.recordedTotal);
  const ys = valid.map((r) => r.rawTotal);
  const mean = (a) => a.reduce((x, y) => x + y, 0) / a.length;
  const mx = mean(xs), my = mean(ys);
  let sxy = 0, sxx = 0, syy = 0;
  for (let i = 0; i < xs.length; i++) {
    sxy += (xs[i] - mx) * (ys[i] - my);
    sxx += (xs[i] - mx) ** 2;
    syy += (ys[i] - my) ** 2;
  }
  // Growth check: where both recorded and ours grow from one call to the
  // next, compare the increments (insensitive to the fixed preamble).
  const incRatios = [];
  for (let i = 1; i < valid.length; i++) {
    const dr = valid[i].recordedTotal - valid[i - 1].recordedTotal;
    const dy = valid[i].rawTotal - valid[i - 1].rawTotal;
    if (dr > 500 && dy > 0) incRatios.push(dy / dr);
  }
  incRatios.sort((a, b) => a - b);
  const medInc = incRatios.length ? incRatios[Math.floor(incRatios.length / 2)] : NaN;
  return {
    callsCompared: valid.length,
    callsWithoutUsage: recon.length - valid.length,
    recordedSum: sum((r) => r.recordedTotal),
    rawSumOnCompared: sum((r) => r.rawTotal),
    recordedUncachedSum: sum((r) => r.recordedInput + r.recordedCacheWrite),
    recordedCacheReadSum: sum((r) => r.recordedCacheRead),
    ratioOfSums: sum((r) => r.rawTotal) / sum((r) => r.recordedTotal),
    ratioMedian: q(0.5),
    ratioP05: q(0.05),
    ratioP95: q(0.95),
    ratioMin: ratios[0],
    ratioMax: ratios[ratios.length - 1],
    pearson: sxy / Math.sqrt(sxx * syy),
    incrementRatioMedian: medInc,
    incrementsCompared: incRatios.length,
  };
}

export { CACHE_READ_FACTOR };
