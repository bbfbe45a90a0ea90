// Output writers: per-call CSV, summary markdown, SVG plot (no dependencies).

export const fmtM = (n) => `${(n / 1e6).toFixed(2)}M`;
export const fmtInt = (n) => Math.round(n).toLocaleString("en-US");
export const fmtRatio = (x) => (Number.isFinite(x) ? `${x.toFixed(3)}×` : "–");

export const fmtShare = (x) => (Number.isFinite(x) ? `${(100 * x).toFixed(1)}%` : "–");

const PRICE_KEYS = ["standard", "writePremium", "cheapReads", "expiry"];
const PRICE_LABELS = {
  standard: "standard 1.0/0.1",
  writePremium: "write premium 1.25/0.1",
  cheapReads: "cheap reads 1.25/0.025",
  expiry: "expiry 1.0/0.1, cold after 5 min",
};

// Columns after `effective` (issue 10): successful edits made at this call, how many
// were supported (anchor visible), re-read penalty tokens, whether the call found the
// cache expired (>5 min gap), and effective cost under the other price models
// (plain and penalised).
export function callsCsv(rows) {
  const head =
    "session,call,strategy,messages,total,cached,uncached,effective,edits,supported_edits,penalty_tokens,expired," +
    "effective_write_premium,effective_cheap_reads,effective_expiry," +
    "penalised_standard,penalised_write_premium,penalised_cheap_reads,penalised_expiry";
  const f = (x) => (x === undefined ? "" : x.toFixed(1));
  const lines = rows.map((r) =>
    [
      r.session, r.call, r.strategy, r.messages, r.total, r.cached, r.uncached, r.effective.toFixed(1),
      r.edits ?? 0, r.supported ?? 0, r.penalty ?? 0, r.expired ? 1 : 0,
      f(r.prices?.writePremium), f(r.prices?.cheapReads), f(r.prices?.expiry),
      f(r.prices?.standardPenalised), f(r.prices?.writePremiumPenalised), f(r.prices?.cheapReadsPenalised), f(r.prices?.expiryPenalised),
    ].join(","),
  );
  return `${head}\n${lines.join("\n")}\n`;
}

/** One line per (successful edit, strategy): anchor lines, how many visible, supported, penalty. */
export function editsCsv(editRows) {
  const head = "session,call,strategy,tool_call_id,path,anchor_lines,visible_lines,supported,penalty_tokens,penalty_source";
  const q = (v) => (/[",\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);
  const lines = editRows.map((r) =>
    [r.session, r.call, r.strategy, r.toolCallId, q(r.path), r.lines, r.visible, r.supported ? 1 : 0, r.penalty, r.penaltySource].join(","),
  );
  return `${head}\n${lines.join("\n")}\n`;
}

export function reconstructionCsv(recon) {
  const head = "session,call,stopReason,recorded_input,recorded_cacheRead,recorded_cacheWrite,recorded_total,raw_o200k_total,ratio";
  const lines = recon.map((r) =>
    [r.session, r.call, r.stopReason, r.recordedInput, r.recordedCacheRead, r.recordedCacheWrite, r.recordedTotal, r.rawTotal, r.recordedTotal ? (r.rawTotal / r.recordedTotal).toFixed(4) : ""].join(","),
  );
  return `${head}\n${lines.join("\n")}\n`;
}

export function summaryTable(summary) {
  const head =
    "| strategy | calls | Σ total | Σ cached | Σ uncached | Σ effective | total vs raw | uncached vs raw | effective vs raw | supported edits | share | penalised effective vs raw |\n" +
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|";
  const raw = summary.find((s) => s.strategy === "raw");
  const lines = summary.map(
    (s) =>
      `| ${s.strategy} | ${s.calls} | ${fmtInt(s.total)} | ${fmtInt(s.cached)} | ${fmtInt(s.uncached)} | ${fmtInt(s.effective)} | ${fmtRatio(s.totalRatio)} | ${fmtRatio(s.uncachedRatio)} | ${fmtRatio(s.effectiveRatio)} | ${s.supported ?? 0} / ${s.edits ?? 0} | ${fmtShare(s.supportedShare)} | ${fmtRatio(raw?.prices?.standardPenalised ? s.prices?.standardPenalised / raw.prices.standardPenalised : NaN)} |`,
  );
  return `${head}\n${lines.join("\n")}`;
}

/**
 * Effective cost under the four price models side by side (ratios vs raw), and the
 * same with the re-read penalty of unsupported edits (counted uncached).
 */
export function priceTable(summary) {
  const head =
    `| strategy | supported edits | re-read penalty (tokens) | ${PRICE_KEYS.map((k) => `${PRICE_LABELS[k]} | vs raw | penalised vs raw`).join(" | ")} |\n` +
    `|---|---:|---:|${PRICE_KEYS.map(() => "---:|---:|---:").join("|")}|`;
  const raw = summary.find((s) => s.strategy === "raw");
  const ratio = (s, k) => (raw?.prices?.[k] ? s.prices?.[k] / raw.prices[k] : NaN);
  const lines = summary.map(
    (s) =>
      `| ${s.strategy} | ${s.supported ?? 0} / ${s.edits ?? 0} | ${fmtInt(s.penalty ?? 0)} | ${PRICE_KEYS.map((k) => `${fmtInt(s.prices?.[k] ?? 0)} | ${fmtRatio(ratio(s, k))} | ${fmtRatio(ratio(s, `${k}Penalised`))}`).join(" | ")} |`,
  );
  return `${head}\n${lines.join("\n")}`;
}

export function breakdownTable(b, callsCount) {
  const keys = new Set([...Object.keys(b.summedOverCalls), ...Object.keys(b.uniqueContent)]);
  const sumAll = Object.values(b.summedOverCalls).reduce((a, x) => a + x, 0);
  const uniAll = Object.values(b.uniqueContent).reduce((a, x) => a + x, 0);
  const rows = [...keys].sort((a, c) => (b.summedOverCalls[c] ?? 0) - (b.summedOverCalls[a] ?? 0));
  const head = `| category | unique content (each message once) | share | summed over ${callsCount} calls (raw) | share |\n|---|---:|---:|---:|---:|`;
  const lines = rows.map((k) => {
    const u = b.uniqueContent[k] ?? 0;
    const s = b.summedOverCalls[k] ?? 0;
    return `| ${k} | ${fmtInt(u)} | ${((100 * u) / uniAll).toFixed(1)}% | ${fmtInt(s)} | ${((100 * s) / sumAll).toFixed(1)}% |`;
  });
  lines.push(`| **all** | ${fmtInt(uniAll)} | 100% | ${fmtInt(sumAll)} | 100% |`);
  return `${head}\n${lines.join("\n")}`;
}

const COLORS = ["#222222", "#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2"];

function niceStep(max, ticks = 5) {
  const raw = max / ticks;
  const p = 10 ** Math.floor(Math.log10(raw || 1));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}
const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
const kfmt = (v) => (v >= 1e6 ? `${(v / 1e6).toFixed(1)}M` : v >= 1e3 ? `${Math.round(v / 1e3)}k` : `${v}`);

/**
 * SVG with one panel per metric (default: total and uncached tokens per call),
 * one polyline per strategy, dashed verticals at pi compactions / session starts.
 * @param {object[]} rows per-call rows (with global `x` index)
 * @param {{markers?: {x:number,label:string}[], metrics?: string[], title?: string}} opt
 */
export function plotSvg(rows, { markers = [], metrics = ["total", "uncached"], title = "" } = {}) {
  const strategies = [...new Set(rows.map((r) => r.strategy))];
  const n = Math.max(...rows.map((r) => r.x)) + 1;
  const W = 1200, PH = 300, ML = 70, MR = 20, MT = 50, GAP = 60;
  const H = MT + metrics.length * (PH + GAP);
  const pw = W - ML - MR;
  let svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">\n<rect width="100%" height="100%" fill="white"/>\n`;
  if (title) svg += `<text x="${ML}" y="20" font-size="15" font-weight="bold">${esc(title)}</text>\n`;
  strategies.forEach((s, i) => {
    const lx = ML + i * 170;
    svg += `<line x1="${lx}" y1="36" x2="${lx + 24}" y2="36" stroke="${COLORS[i % COLORS.length]}" stroke-width="2.5"/><text x="${lx + 30}" y="40">${esc(s)}</text>\n`;
  });
  metrics.forEach((metric, pi) => {
    const top = MT + pi * (PH + GAP) + 20;
    const vals = rows.map((r) => r[metric]);
    const max = Math.max(1, ...vals);
    const step = niceStep(max);
    const ymax = Math.ceil(max / step) * step;
    const X = (x) => ML + (n <= 1 ? 0 : (x / (n - 1)) * pw);
    const Y = (v) => top + PH - (v / ymax) * PH;
    svg += `<text x="${ML}" y="${top - 6}" font-weight="bold">${esc(metric)} input tokens per call</text>\n`;
    for (let v = 0; v <= ymax + 1e-9; v += step) {
      svg += `<line x1="${ML}" y1="${Y(v).toFixed(1)}" x2="${W - MR}" y2="${Y(v).toFixed(1)}" stroke="#e5e5e5"/><text x="${ML - 6}" y="${(Y(v) + 4).toFixed(1)}" text-anchor="end">${kfmt(v)}</text>\n`;
    }
    const xstep = niceStep(n, 10);
    for (let x = 0; x < n; x += xstep) {
      svg += `<text x="${X(x).toFixed(1)}" y="${top + PH + 16}" text-anchor="middle">${x}</text>\n`;
    }
    svg += `<text x="${ML + pw / 2}" y="${top + PH + 32}" text-anchor="middle">model call</text>\n`;
    for (const m of markers) {
      svg += `<line x1="${X(m.x).toFixed(1)}" y1="${top}" x2="${X(m.x).toFixed(1)}" y2="${top + PH}" stroke="#999" stroke-dasharray="4 3"/><text x="${(X(m.x) + 3).toFixed(1)}" y="${top + 12}" fill="#777" font-size="10">${esc(m.label)}</text>\n`;
    }
    // raw is drawn last (on top), so its small uncached spikes stay visible
    [...strategies.entries()].reverse().forEach(([i, s]) => {
      const pts = rows.filter((r) => r.strategy === s).map((r) => `${X(r.x).toFixed(1)},${Y(r[metric]).toFixed(1)}`);
      svg += `<polyline fill="none" stroke="${COLORS[i % COLORS.length]}" stroke-width="1.3" stroke-opacity="0.9" points="${pts.join(" ")}"/>\n`;
    });
    svg += `<rect x="${ML}" y="${top}" width="${pw}" height="${PH}" fill="none" stroke="#444"/>\n`;
  });
  return `${svg}</svg>\n`;
}
