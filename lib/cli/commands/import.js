'use strict';

const fs = require('node:fs');

module.exports = {
  name: 'import',
  args: '<file>',
  summary: 'add an exported file to the store (--store); a new embedded store file is created',
  async run(ctx) {
    const [file] = ctx.args;
    if (!fs.existsSync(file)) throw ctx.usage(`no file ${file}`);
    const options = ctx.storeOptions();
    // Importing is how a store is made from an export: an embedded file that does not exist yet is created.
    const { openStore } = require('../../store.js');
    const store = options.kind === 'embedded' && !fs.existsSync(options.path) ? await openStore(options) : await ctx.store();
    const bar = ctx.progress('importing', null);
    const out = await store.importFrom(file);
    bar.done();
    if (ctx.opts.json) return ctx.json({ file, ...out });
    const f = ctx.format;
    ctx.print(
      `imported ${f.int(out.versions)} versions of ${f.int(out.objects)} objects in ${f.int(out.transactions)} transactions` +
        (out.skipped ? ` (${f.int(out.skipped)} already in the store)` : '') +
        '\n',
    );
  },
};
