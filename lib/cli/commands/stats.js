'use strict';

module.exports = {
  name: 'stats',
  args: '',
  summary: 'the store: kind, size, objects, versions, sessions',
  async run(ctx) {
    const store = await ctx.store();
    const bar = ctx.progress('counting', null);
    const [counts, sessions] = await Promise.all([store.counts(), store.idsOfType('session')]);
    bar.done();
    const options = ctx.storeOptions();
    const out = {
      kind: store.kind,
      location: options.path ?? options.url,
      bytes: counts.bytes,
      objects: counts.objects,
      versions: counts.versions,
      sessions: sessions.length,
    };
    if (ctx.opts.json) return ctx.json(out);
    const f = ctx.format;
    ctx.print(
      [
        `store     ${out.kind} ${out.location}`,
        `size      ${f.bytes(out.bytes)}`,
        `objects   ${f.int(out.objects)}`,
        `versions  ${f.int(out.versions)}`,
        `sessions  ${f.int(out.sessions)}`,
      ].join('\n') + '\n',
    );
  },
};
