'use strict';

module.exports = {
  name: 'export',
  args: '',
  summary: 'write the store (or --session a,b) to -o <file> as JSON Lines: every version, ids and hashes kept',
  async run(ctx) {
    if (!ctx.opts.output) throw ctx.usage('export needs -o <file>');
    const store = await ctx.store();
    const sessions = ctx.opts.session ? String(ctx.opts.session).split(',').filter(Boolean) : undefined;
    const bar = ctx.progress('exporting', null);
    const out = await store.exportTo(ctx.opts.output, sessions);
    bar.done();
    if (ctx.opts.json) return ctx.json({ file: ctx.opts.output, ...out });
    const f = ctx.format;
    ctx.print(
      `exported ${f.int(out.objects)} objects, ${f.int(out.versions)} versions in ${f.int(out.transactions)} transactions ` +
        `(${f.bytes(out.bytes)}) to ${ctx.opts.output}\n`,
    );
  },
};
