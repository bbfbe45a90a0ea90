'use strict';

module.exports = {
  name: 'objects',
  args: '<session>',
  summary: 'the objects of a session under the ids the model sees (t12, f3); --full adds the full ids',
  async run(ctx) {
    const cm = await ctx.session(ctx.args[0]);
    const list = cm.objects();
    if (ctx.opts.json) return ctx.json(list);
    const f = ctx.format;
    const columns = [
      { key: 'shown', title: 'ID' },
      ...(ctx.opts.full ? [{ key: 'id', title: 'FULL ID' }] : []),
      { key: 'type', title: 'TYPE' },
      { key: 'name', title: 'PATH / TOOL' },
      { key: 'chars', title: 'CHARS', align: 'right' },
      { key: 'set', title: 'SET' },
    ];
    const rows = list.map((o) => ({
      ...o,
      shown: o.alias ?? '-',
      name: o.path ?? o.tool ?? '',
      chars: f.int(o.charCount),
      set: o.pinned ? 'pinned' : o.active ? 'active' : o.state === 'stub' ? 'unread' : '',
    }));
    ctx.print(f.table(columns, rows));
  },
};
