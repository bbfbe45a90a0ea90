'use strict';

/** Sessions rebuilt at once for their last call's tokens (those recorded before records kept them). */
const CONCURRENCY = 4;

/**
 * One listing row: the summary plus the last call's tokens — kept by its record, or for a session recorded before
 * records kept them, from the session rebuilt — or the error code of a session that cannot be rebuilt.
 */
async function row(ctx, { lastCallTokens, ...s }) {
  let tokens = lastCallTokens;
  if (tokens == null && s.calls > 0) {
    // One session that cannot be rebuilt (written by another version, half-written by a crashed process)
    // must not hide the others: its row carries the error code instead of its tokens.
    try {
      const cm = await ctx.session(s.sessionId);
      [{ tokens }] = await cm.callSummaries(s.calls - 1, s.calls);
    } catch (e) {
      return { ...s, tokens, error: e?.code ?? 'INTERNAL' };
    } finally {
      // Closed once its row is made: hundreds held open at once slowed each next one (an XTDB client each).
      await ctx.release(s.sessionId).catch(() => {});
    }
  }
  return { ...s, tokens };
}

module.exports = {
  name: 'sessions',
  args: '',
  summary: 'every session in the store: id, start, model calls, tokens of the last call, last activity',
  async run(ctx) {
    const store = await ctx.store();
    const list = await store.listSessions();
    const bar = ctx.progress('sessions', list.length);
    // A session without its last call's tokens in the record is rebuilt (read-only): on XTDB that is round trips,
    // so a few sessions are rebuilt at once; rows keep the listing's order.
    const rows = Array.from({ length: list.length });
    let next = 0;
    const worker = async () => {
      while (next < list.length) {
        const i = next++;
        rows[i] = await row(ctx, list[i]);
        bar.tick();
      }
    };
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, list.length) }, worker));
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
