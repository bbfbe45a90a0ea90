'use strict';
const { printDoc } = require('../doc.js');

module.exports = {
  name: 'as-of',
  args: '<id> <time|tx>',
  summary: 'the version of an object visible at a transaction id or an RFC 3339 time',
  async run(ctx) {
    const id = await ctx.objectId(ctx.args[0]);
    const at = ctx.args[1];
    const asOf = /^\d+$/.test(at) ? { txId: Number(at) } : { txTime: at };
    const doc = await (await ctx.store()).getAsOf(id, asOf);
    if (!doc) throw Object.assign(new Error(`no version of ${id} at ${at}`), { code: 'UNKNOWN_OBJECT' });
    if (ctx.opts.json) return ctx.json(doc);
    printDoc(ctx, doc);
  },
};
