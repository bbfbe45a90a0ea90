'use strict';

module.exports = {
  name: 'history',
  args: '<id>',
  summary: 'every version of an object, oldest first (transaction, time, size, hash)',
  async run(ctx) {
    const id = await ctx.objectId(ctx.args[0]);
    const versions = await (await ctx.store()).history(id);
    if (versions.length === 0) throw Object.assign(new Error(`no object ${id}`), { code: 'UNKNOWN_OBJECT' });
    if (ctx.opts.json) return ctx.json(versions);
    const f = ctx.format;
    ctx.print(
      f.table(
        [
          { key: 'txId', title: 'TX', align: 'right' },
          { key: 'time', title: 'TIME (UTC)' },
          { key: 'chars', title: 'CHARS', align: 'right' },
          { key: 'state', title: 'STATE' },
          { key: 'hash', title: 'OBJECT HASH' },
        ],
        versions.map((v) => ({
          txId: v.txId,
          time: f.time(v.txTime),
          chars: f.int(v.doc?.char_count ?? (typeof v.doc?.content === 'string' ? v.doc.content.length : null)),
          state: v.doc?.state ?? v.doc?.status ?? '',
          hash: String(v.doc?.object_hash ?? '').slice(0, 16),
        })),
      ),
    );
  },
};
