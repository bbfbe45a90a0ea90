'use strict';
// `search <query>`: the core's full-text search over the whole store (every session's files and tool calls, latest
// versions), the same search the agent's tools run; no session is opened.

const TYPES = ['file', 'toolcall'];

module.exports = {
  name: 'search',
  args: '<query>',
  summary: 'full-text search over every session\'s files and tool outputs (--type file|toolcall, --session, --since, --limit)',
  async run(ctx) {
    const { opts } = ctx;
    const options = {};
    if (opts.type !== undefined) {
      const types = String(opts.type).split(',');
      const bad = types.find((t) => !TYPES.includes(t));
      if (bad !== undefined) throw ctx.usage(`--type takes ${TYPES.join(' or ')} (comma-separated), not ${JSON.stringify(bad)}`);
      options.types = types;
    }
    if (opts.session !== undefined) options.sessions = [opts.session];
    if (opts.since !== undefined) options.since = opts.since;
    if (opts.limit !== undefined) {
      if (!/^\d+$/.test(opts.limit)) throw ctx.usage(`--limit takes a number, not ${JSON.stringify(opts.limit)}`);
      options.limit = Number(opts.limit);
    }
    const { hits } = await (await ctx.store()).search(ctx.args[0], options);
    if (opts.json) return ctx.json(hits);
    const f = ctx.format;
    if (hits.length === 0) {
      ctx.print(`no match for ${JSON.stringify(ctx.args[0])}\n`);
      return;
    }
    ctx.print(
      f.table(
        [
          { key: 'rank', title: '#', align: 'right' },
          { key: 'type', title: 'TYPE' },
          { key: 'where', title: 'PATH / TOOL (SESSION)' },
          { key: 'time', title: 'WRITTEN (UTC)' },
          { key: 'snippet', title: 'MATCH' },
        ],
        hits.map((h, i) => ({
          rank: i + 1,
          type: h.type,
          where: h.path ?? `${h.tool ?? ''} (${h.session ?? ''})`,
          time: f.time(h.txTime),
          snippet: String(h.snippet).replace(/\s+/g, ' ').trim(),
        })),
      ),
    );
    // Full ids, for `show`, `history` and `as-of`.
    ctx.print(`\nids:\n${hits.map((h, i) => `${String(i + 1).padStart(String(hits.length).length)}  ${h.id}`).join('\n')}\n`);
  },
};
