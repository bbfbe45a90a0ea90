'use strict';
// The session report: one self-contained HTML page (inline CSS, JS and SVG; no network). Data goes in as one JSON
// block; the page draws the token chart, the live-objects grid and the per-call view in the browser.

/** JSON safe inside a <script> element. */
const scriptJson = (v) => JSON.stringify(v).replace(/</g, '\\u003c').replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029');

const CSS = `
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{padding:16px 24px;background:#1d2330;color:#fff}header h1{margin:0;font-size:18px}header p{margin:4px 0 0;color:#c5cad3}
main{padding:16px 24px;display:grid;gap:16px}
section{background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:12px 16px}
h2{font-size:15px;margin:0 0 8px}
.legend span{margin-right:14px}.sw{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle}
svg text{font-size:10px;fill:#555}
.bar{cursor:pointer}.bar:hover rect{opacity:.8}
table{border-collapse:collapse;width:100%}td,th{padding:3px 8px;text-align:right;border-bottom:1px solid #eef0f3}
td:first-child,th:first-child{text-align:left}tr.call{cursor:pointer}tr.call:hover{background:#eef3ff}tr.sel{background:#dfe8ff}
#detail .msg{border-left:3px solid #ccd;padding:4px 8px;margin:6px 0;background:#fafbfc}
#detail .role{font-weight:600;font-size:12px;color:#445}
#detail pre{white-space:pre-wrap;word-break:break-word;margin:2px 0;font:12px/1.35 ui-monospace,monospace}
button.ref{font:12px ui-monospace,monospace;background:#fff3c4;border:1px solid #e0c96a;border-radius:3px;cursor:pointer;padding:0 4px}
pre.expanded{background:#fffbe8;border:1px dashed #e0c96a;padding:4px}
.muted{color:#778}
`;

const SCRIPT = `
const D = JSON.parse(document.getElementById('data').textContent);
const $ = (s) => document.querySelector(s);
const el = (tag, attrs = {}, ...kids) => { const e = document.createElement(tag); for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v); for (const k of kids) e.append(k); return e; };
const NS = 'http://www.w3.org/2000/svg';
const svg = (tag, attrs = {}) => { const e = document.createElementNS(NS, tag); for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v); return e; };
const fmt = (n) => Number(n).toLocaleString('en-US');

function chart() {
  const calls = D.calls, W = Math.max(600, calls.length * 14 + 60), H = 220, L = 50, B = 20;
  const max = Math.max(1, ...calls.map((c) => Math.max(c.tokens, c.transcriptTokens)));
  const x = (i) => L + i * ((W - L - 10) / Math.max(1, calls.length));
  const y = (v) => H - B - (v / max) * (H - B - 10);
  const bw = Math.max(2, (W - L - 10) / Math.max(1, calls.length) - 2);
  const s = svg('svg', { width: W, height: H, role: 'img', 'aria-label': 'tokens per call' });
  for (const f of [0, 0.5, 1]) {
    s.append(svg('line', { x1: L, x2: W, y1: y(max * f), y2: y(max * f), stroke: '#eee' }));
    const t = svg('text', { x: 2, y: y(max * f) + 3 }); t.textContent = fmt(Math.round(max * f)); s.append(t);
  }
  calls.forEach((c, i) => {
    const g = svg('g', { class: 'bar', 'data-call': i });
    g.append(svg('rect', { x: x(i), y: y(c.cachedTokens), width: bw, height: y(0) - y(c.cachedTokens), fill: '#4a6fd1' }));
    g.append(svg('rect', { x: x(i), y: y(c.tokens), width: bw, height: y(c.cachedTokens) - y(c.tokens), fill: '#a9bdf0' }));
    if (c.epochs) g.append(svg('path', { d: 'M' + (x(i) + bw / 2) + ' ' + (H - B + 2) + 'l-4 7h8z', fill: c.folds ? '#c0392b' : '#e67e22' }));
    const tip = svg('title'); tip.textContent = 'call ' + i + ': ' + fmt(c.tokens) + ' tokens (' + fmt(c.cachedTokens) + ' cached), pi alone ' + fmt(c.transcriptTokens) + (c.epochs ? ', ' + c.epochs + ' collapse(s)' : '') + (c.folds ? ', ' + c.folds + ' fold(s)' : '');
    g.append(tip);
    g.addEventListener('click', () => show(i));
    s.append(g);
  });
  const pts = calls.map((c, i) => (x(i) + bw / 2) + ',' + y(c.transcriptTokens)).join(' ');
  s.append(svg('polyline', { points: pts, fill: 'none', stroke: '#333', 'stroke-width': 1.5, 'stroke-dasharray': '4 2' }));
  $('#chart').append(s);
}

function live() {
  const objs = D.objects.filter((o) => o.alias), calls = D.calls;
  if (!objs.length) { $('#live').append(el('p', { class: 'muted' }, 'no objects')); return; }
  const row = new Map(objs.map((o, k) => [o.id, k]));
  const cw = Math.max(3, Math.min(12, 900 / Math.max(1, calls.length))), rh = 12, L = 40;
  const s = svg('svg', { width: L + calls.length * cw + 10, height: objs.length * rh + 10, role: 'img', 'aria-label': 'objects shown per call' });
  objs.forEach((o, k) => { const t = svg('text', { x: 0, y: k * rh + 10 }); t.textContent = o.alias; s.append(t); });
  calls.forEach((c, i) => {
    for (const id of c.shown) {
      const k = row.get(id); if (k === undefined) continue;
      s.append(svg('rect', { x: L + i * cw, y: k * rh + 2, width: cw - 1, height: rh - 2, fill: id.startsWith('toolcall:') ? '#4a6fd1' : '#27ae60' }));
    }
  });
  $('#live').append(s);
}

function table() {
  const tb = $('#calls tbody');
  D.calls.forEach((c, i) => {
    const tr = el('tr', { class: 'call', 'data-call': i });
    for (const v of [i, fmt(c.messages), fmt(c.tokens), fmt(c.cachedTokens), fmt(c.tokens - c.cachedTokens), fmt(c.transcriptTokens), [c.epochs ? c.epochs + ' collapse' + (c.epochs > 1 ? 's' : '') : '', c.folds ? c.folds + ' fold' + (c.folds > 1 ? 's' : '') : ''].filter(Boolean).join(', ')])
      tr.append(el('td', {}, String(v)));
    tr.addEventListener('click', () => show(i));
    tb.append(tr);
  });
}

const REF = /\\[(t\\d+) · [^\\]]*\\]/g;
/** Text with collapsed refs as buttons that expand the output in place. */
function withRefs(text) {
  const pre = el('pre');
  let last = 0;
  for (const m of text.matchAll(REF)) {
    pre.append(text.slice(last, m.index));
    const alias = m[1];
    if (alias in D.contents) {
      const b = el('button', { class: 'ref', 'data-ref': alias, title: 'show ' + alias + ' in place' }, m[0]);
      b.addEventListener('click', () => {
        const open = b.nextElementSibling?.classList?.contains('expanded');
        if (open) b.nextElementSibling.remove(); else b.after(el('pre', { class: 'expanded', 'data-expanded': alias }, D.contents[alias]));
      });
      pre.append(b);
    } else pre.append(m[0]);
    last = m.index + m[0].length;
  }
  pre.append(text.slice(last));
  return pre;
}

function part(p) {
  if (typeof p === 'string') return p;
  if (p.type === 'text') return p.text;
  if (p.type === 'thinking') return '(thinking) ' + (p.thinking || '');
  if (p.type === 'toolCall') return '→ ' + p.name + '(' + JSON.stringify(p.arguments || {}) + ')  [id ' + p.id + ']';
  if (p.type === 'image') return '[image ' + (p.mimeType || '') + ']';
  return JSON.stringify(p);
}

/** What the model saw at call i: its messages, each kept once in D.messages. */
const messagesOf = (i) => D.seen[i].map((k) => D.messages[k]);

function show(i) {
  const c = D.calls[i], d = $('#detail');
  for (const r of document.querySelectorAll('tr.sel')) r.classList.remove('sel');
  document.querySelector('tr[data-call="' + i + '"]')?.classList.add('sel');
  d.replaceChildren(el('h2', {}, 'Call ' + i + ': what the model saw'),
    el('p', { class: 'muted' }, c.messages + ' messages, ' + fmt(c.tokens) + ' tokens (' + fmt(c.cachedTokens) + ' cached), pi alone ' + fmt(c.transcriptTokens) + '. Click a collapsed ref to see its output in place.'));
  messagesOf(i).forEach((m, k) => {
    const who = m.role === 'toolResult' ? 'toolResult ' + (m.toolCallId || '') + ' (' + (m.toolName || '') + ')' : m.role;
    const body = typeof m.content === 'string' ? m.content : (m.content || []).map(part).join('\\n');
    d.append(el('div', { class: 'msg', 'data-message': k }, el('div', { class: 'role' }, '[' + k + '] ' + who), withRefs(body)));
  });
  d.scrollIntoView({ block: 'start' });
}

chart(); live(); table();
if (D.calls.length) show(D.calls.length - 1);
`;

const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);

/**
 * The page for one session: `data` = { sessionId, layout, store, generated, calls, messages, seen, objects, contents };
 * `messages` holds each distinct message once, `seen[i]` the places in it of what the model saw at call i.
 */
function reportHtml(data) {
  const n = data.calls.length;
  const last = data.calls[n - 1];
  const total = data.calls.reduce((a, c) => a + c.tokens, 0);
  const alone = data.calls.reduce((a, c) => a + c.transcriptTokens, 0);
  const cached = data.calls.reduce((a, c) => a + c.cachedTokens, 0);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>self-context-manager report: ${esc(data.sessionId)}</title>
<style>${CSS}</style></head>
<body>
<header><h1>Session ${esc(data.sessionId)}</h1>
<p>${n} model calls, ${esc(data.layout)} layout, ${esc(data.store)} store. Generated ${esc(data.generated)}.
${n ? `Sent in all: ${total.toLocaleString('en-US')} tokens (${cached.toLocaleString('en-US')} cached) vs ${alone.toLocaleString('en-US')} for pi alone; last call ${last.tokens.toLocaleString('en-US')} vs ${last.transcriptTokens.toLocaleString('en-US')}.` : ''}</p></header>
<main>
<section><h2>Tokens per call</h2>
<p class="legend"><span><i class="sw" style="background:#4a6fd1"></i>cached (repeats the previous call's start)</span><span><i class="sw" style="background:#a9bdf0"></i>new</span><span>- - - pi alone (whole transcript, outputs in full)</span><span style="color:#e67e22">▲ collapse</span><span style="color:#c0392b">▲ collapse with fold</span></p>
<div id="chart"></div>
<p class="muted">Tokens are estimates: ⌈characters / 4⌉ of each message as JSON. Click a bar or a row for what the model saw.</p></section>
<section><h2>Objects shown per call</h2><p class="legend"><span><i class="sw" style="background:#4a6fd1"></i>tool call (t…)</span><span><i class="sw" style="background:#27ae60"></i>file (f…)</span></p><div id="live"></div></section>
<section><h2>Calls</h2><table id="calls"><thead><tr><th>call</th><th>messages</th><th>tokens</th><th>cached</th><th>new</th><th>pi alone</th><th>collapses</th></tr></thead><tbody></tbody></table></section>
<section id="detail"></section>
</main>
<script type="application/json" id="data">${scriptJson(data)}</script>
<script>${SCRIPT}</script>
</body></html>
`;
}

module.exports = { reportHtml };
