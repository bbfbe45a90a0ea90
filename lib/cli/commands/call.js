'use strict';
const { renderMessages } = require('../doc.js');

module.exports = {
  name: 'call',
  args: '<session> <n>',
  summary: 'exactly what the model saw at call n (from 0), rebuilt from the stored versions',
  async run(ctx) {
    const n = ctx.args[1];
    if (!/^\d+$/.test(n)) throw ctx.usage(`call: <n> must be a call number (0, 1, …), got ${JSON.stringify(n)}`);
    const cm = await ctx.session(ctx.args[0]);
    const messages = await cm.reconstructCall(Number(n));
    if (ctx.opts.json) return ctx.json(messages);
    const commit = await cm.callCommit(Number(n));
    ctx.print(`call ${n} followed ${commit ? `context commit ${commit}` : 'no context commit (before the session\'s first)'}\n`);
    ctx.print(renderMessages(messages));
  },
};
