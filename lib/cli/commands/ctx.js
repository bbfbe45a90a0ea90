'use strict';
// Context commits (agent-context-commits.md, issue 11 item 6): the pi package's /ctx on the command line. Only
// formats what the facade returns (lib/commits.js); every rule is in the core.

const fs = require('node:fs');
const path = require('node:path');

const SUBS = 'log [session] | show <id> | history <id> | resolve --session S --at T | materialize <id> [--stop s] [--format pi-jsonl] [-o file]';

function depthOf(ctx) {
  const d = ctx.opts.depth;
  if (d === undefined) return undefined;
  if (!/^\d+$/.test(d)) throw ctx.usage(`ctx: --depth must be a number, got ${JSON.stringify(d)}`);
  return Number(d);
}

function commitTable(ctx, list) {
  const f = ctx.format;
  return f.table(
    [
      { key: 'id', title: 'COMMIT' },
      { key: 'commitType', title: 'TYPE' },
      { key: 'trigger', title: 'TRIGGER' },
      { key: 'messageCount', title: 'MESSAGES', align: 'right' },
      { key: 'tokens', title: 'TOKENS', align: 'right' },
      { key: 'time', title: 'CREATED (UTC)' },
      { key: 'summary', title: 'SUMMARY' },
    ],
    list.map((c) => ({ ...c, tokens: f.int(c.tokenCount), time: f.time(c.createdAt), summary: c.summary ?? '' })),
  );
}

function describe(ctx, c) {
  const f = ctx.format;
  const a = c.artifact ?? {};
  const where = a.kind === 'chat_range' ? `${a.chat} items ${a.from}..${a.to} as of tx ${a.tx}` : `${(a.messages ?? []).length} inline message(s)`;
  return [
    `commit    ${c.id}`,
    `parent    ${c.parent ?? '(root)'}`,
    `type      ${c.commitType} (${c.trigger})`,
    `session   ${c.sessionId}`,
    `template  ${c.template}`,
    `principal ${c.principal ?? ''}`,
    `machine   ${c.machine}`,
    `created   ${f.time(c.createdAt)}`,
    `format    ${c.format}`,
    `messages  ${c.messageCount} (~${f.int(c.tokenCount)} tokens)`,
    `delta     ${where}`,
    `summary   ${c.summary ?? ''}`,
  ].join('\n') + '\n';
}

module.exports = {
  name: 'ctx',
  args: '<log|show|history|resolve|materialize> [arg]',
  summary: `context commits: ${SUBS}`,
  async run(ctx) {
    const [sub, arg] = ctx.args;
    const { commitsOf } = require('../../commits.js');
    const commits = commitsOf(await ctx.store());
    const need = (what) => {
      if (!arg) throw ctx.usage(`ctx ${sub} needs ${what}`);
      return arg;
    };
    switch (sub) {
      case 'log': {
        const session = arg ?? ctx.opts.session;
        if (!session) throw ctx.usage('ctx log needs a session: ctx log <session> (or --session <id>)');
        const tip = await commits.tip(session);
        const list = tip ? await commits.history(tip, { depth: depthOf(ctx) }) : [];
        if (ctx.opts.json) return ctx.json({ sessionId: session, tip, commits: list });
        if (!tip) return ctx.print(`no context commits in session ${session}\n`);
        return ctx.print(commitTable(ctx, list));
      }
      case 'show': {
        const c = await commits.show(need('a commit id'));
        if (ctx.opts.json) return ctx.json(c);
        return ctx.print(describe(ctx, c));
      }
      case 'history': {
        const list = await commits.history(need('a commit id'), { depth: depthOf(ctx) });
        if (ctx.opts.json) return ctx.json(list);
        return ctx.print(commitTable(ctx, list));
      }
      case 'resolve': {
        if (arg) throw ctx.usage('ctx resolve takes --session <id> --at <time>');
        if (!ctx.opts.session || !ctx.opts.at) throw ctx.usage('ctx resolve needs --session <id> and --at <time>');
        const id = await commits.resolve({ sessionId: ctx.opts.session, at: ctx.opts.at });
        if (ctx.opts.json) return ctx.json({ sessionId: ctx.opts.session, at: ctx.opts.at, commit: id });
        if (!id) throw Object.assign(new Error(`no commit of session ${ctx.opts.session} at or before ${ctx.opts.at}`), { code: 'UNKNOWN_OBJECT' });
        return ctx.print(`${id}\n`);
      }
      case 'materialize': {
        const format = ctx.opts.format ?? 'pi-messages';
        const m = await commits.materialize(need('a commit id'), { stop: ctx.opts.stop, format });
        const body = format === 'pi-jsonl' ? m.jsonl : JSON.stringify(m.messages, null, 2) + '\n';
        if (ctx.opts.output) {
          const out = path.resolve(ctx.cwd, ctx.opts.output);
          fs.writeFileSync(out, body);
          if (ctx.opts.json) return ctx.json({ ...m, messages: undefined, jsonl: undefined, output: out });
          return ctx.print(`${out}: ${m.messageCount} message(s) from ${m.commits} commit(s)${m.cached ? ' (cached)' : ''}\n`);
        }
        if (ctx.opts.json) return ctx.json(m);
        return ctx.print(body);
      }
      default:
        throw ctx.usage(`ctx: unknown subcommand ${JSON.stringify(sub)} (${SUBS})`);
    }
  },
};
