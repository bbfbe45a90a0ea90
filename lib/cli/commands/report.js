'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { reportHtml } = require('../report-html.js');

module.exports = {
  name: 'report',
  args: '<session>',
  summary: 'one self-contained HTML page: tokens per call vs pi alone, collapses, live objects, what the model saw (-o file)',
  async run(ctx) {
    const sessionId = ctx.args[0];
    const cm = await ctx.session(sessionId);
    const n = cm.stats().modelCallCount;
    const bar = ctx.progress('report', n);
    // One rebuild per call gives its summary and what the model saw. Consecutive calls share most of their
    // messages: each distinct message is kept once, a call is the list of its messages' places.
    const calls = [];
    const seen = [];
    const messages = [];
    const place = new Map();
    const placeOf = (m) => {
      const key = JSON.stringify(m);
      let k = place.get(key);
      if (k === undefined) {
        k = messages.push(m) - 1;
        place.set(key, k);
      }
      return k;
    };
    for (let i = 0; i < n; i += 8) {
      for (const { context, ...summary } of await cm.callSummaries(i, Math.min(n, i + 8), { context: true })) {
        calls.push(summary);
        seen.push(context.map(placeOf));
      }
      bar.tick(Math.min(8, n - i));
    }
    // Full content of every tool call, for collapsed refs ([t12 · 40 lines]) expanded in place.
    const objects = cm.objects();
    const store = await ctx.store();
    const toolcalls = objects.filter((o) => o.type === 'toolcall' && o.alias);
    const docs = await store.getMany(toolcalls.map((o) => o.id));
    const byId = new Map(docs.map((d) => [d['xt/id'], d]));
    const contents = {};
    for (const o of toolcalls) contents[o.alias] = String(byId.get(o.id)?.content ?? '');
    bar.done();
    const html = reportHtml({
      sessionId,
      layout: cm.layout,
      store: store.kind,
      generated: new Date().toISOString(),
      calls,
      messages,
      seen,
      objects,
      contents,
    });
    const out = path.resolve(ctx.cwd, ctx.opts.output ?? `scm-report-${sessionId}.html`);
    fs.writeFileSync(out, html);
    if (ctx.opts.json) return ctx.json({ file: out, calls: n, bytes: Buffer.byteLength(html) });
    ctx.print(`wrote ${out} (${ctx.format.bytes(Buffer.byteLength(html))}, ${n} calls): open it in a browser\n`);
  },
};
