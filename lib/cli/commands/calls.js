'use strict';

/** Calls summarised per round trip (from their records; a call whose record lacks a figure is rebuilt). */
const CHUNK = 8;

module.exports = {
  name: 'calls',
  args: '<session>',
  summary: 'one line per model call: messages, tokens sent, cached estimate, collapses and folds, the commit it followed',
  async run(ctx) {
    const cm = await ctx.session(ctx.args[0]);
    const n = cm.stats().modelCallCount;
    const bar = ctx.progress('calls', n);
    const list = [];
    for (let i = 0; i < n; i += CHUNK) {
      const part = await cm.callSummaries(i, Math.min(n, i + CHUNK));
      list.push(...part);
      bar.tick(part.length);
    }
    bar.done();
    if (ctx.opts.json) return ctx.json(list);
    const f = ctx.format;
    ctx.print(
      f.table(
        [
          { key: 'call', title: 'CALL', align: 'right' },
          { key: 'messages', title: 'MESSAGES', align: 'right' },
          { key: 'tokens', title: 'TOKENS', align: 'right' },
          { key: 'cached', title: 'CACHED', align: 'right' },
          { key: 'fresh', title: 'NEW', align: 'right' },
          { key: 'transcriptMessages', title: 'PI MESSAGES', align: 'right' },
          { key: 'collapsed', title: 'COLLAPSES' },
          { key: 'commit', title: 'COMMIT' },
        ],
        list.map((c) => ({
          ...c,
          tokens: f.int(c.tokens),
          cached: f.int(c.cachedTokens),
          fresh: f.int(c.tokens - c.cachedTokens),
          collapsed: [c.epochs ? `${c.epochs} collapse${c.epochs > 1 ? 's' : ''}` : '', c.folds ? `${c.folds} fold${c.folds > 1 ? 's' : ''}` : '']
            .filter(Boolean)
            .join(', '),
        })),
      ),
    );
  },
};
