'use strict';
const { printDoc } = require('../doc.js');

module.exports = {
  name: 'show',
  args: '<id>',
  summary: 'the latest version of an object (a short id like t12 needs --session)',
  async run(ctx) {
    const id = await ctx.objectId(ctx.args[0]);
    const doc = await (await ctx.store()).get(id);
    if (!doc) throw Object.assign(new Error(`no object ${id}`), { code: 'UNKNOWN_OBJECT' });
    if (ctx.opts.json) return ctx.json(doc);
    printDoc(ctx, doc);
  },
};
