'use strict';

module.exports = {
  name: 'sessions',
  args: '',
  summary: 'every session in the store: id, start, model calls, tokens of the last call, last activity',
  async run(ctx) {
    const store = await ctx.store();
    const list = await store.listSessions();
    const bar = ctx.progress('sessions', list.length);
    const rows = [];
    for (const s of list) {
      let tokens = null;
      let error;
      if (s.calls > 0) {
        // One session that cannot be rebuilt (written by another version, half-written by a crashed process)
        // must not hide the others: its row carries the error code instead of its tokens.
        try {
          const cm = await ctx.session(s.sessionId);
          [{ tokens }] = await cm.callSummaries(s.calls - 1, s.calls);
        } catch (e) {
          error = e?.code ?? 'INTERNAL';
        }
      }
      rows.push(error ? { ...s, tokens, error } : { ...s, tokens });
      bar.tick();
    }
    bar.done();
    if (ctx.opts.json) return ctx.json(rows);
    const f = ctx.format;
    ctx.print(
      f.table(
        [
          { key: 'sessionId', title: 'SESSION' },
          { key: 'started', title: 'STARTED (UTC)' },
          { key: 'calls', title: 'CALLS', align: 'right' },
          { key: 'tokens', title: 'TOKENS', align: 'right' },
          { key: 'lastActivity', title: 'LAST ACTIVITY (UTC)' },
        ],
        rows.map((r) => ({ ...r, started: f.time(r.started), lastActivity: f.time(r.lastActivity), tokens: r.error ? `[${r.error}]` : f.int(r.tokens) })),
      ),
    );
  },
};
