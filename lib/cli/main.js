'use strict';
// The command-line tool: `self-context-manager <command> [args] [options]`. Every command is one file in
// ./commands (exporting { name, args, summary, run }); this file parses the options shared by all of them, opens
// the store the way the pi package does (lib/config.js), runs the command and maps errors to exit statuses:
// 0 done, 1 failed (a coded error from the store or the engine), 2 wrong usage.

const fs = require('node:fs');
const path = require('node:path');
const { loadConfig, storeFromArg } = require('../config.js');
const { storeOptionsFor } = require('../defaults.js');
const format = require('./format.js');

const PROG = 'self-context-manager';

class UsageError extends Error {
  constructor(message) {
    super(message);
    this.code = 'USAGE';
  }
}

/** Options every command understands: name → takes a value. */
const OPTIONS = {
  store: true,
  session: true,
  output: true,
  json: false,
  full: false,
  help: false,
  at: true,
  depth: true,
  stop: true,
  format: true,
  // search
  type: true,
  since: true,
  limit: true,
};
const SHORT = { o: 'output', h: 'help' };

function parseArgs(argv) {
  const positional = [];
  const opts = {};
  for (let i = 0; i < argv.length; i += 1) {
    const a = argv[i];
    if (a === '--') {
      positional.push(...argv.slice(i + 1));
      break;
    }
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(a) ?? (/^-([a-z])$/.exec(a) && [a, SHORT[a[1]] ?? a.slice(1)]);
    if (!m) {
      positional.push(a);
      continue;
    }
    const name = m[1];
    if (!(name in OPTIONS)) throw new UsageError(`unknown option ${a}`);
    if (!OPTIONS[name]) {
      if (m[2] !== undefined) throw new UsageError(`--${name} takes no value`);
      opts[name] = true;
      continue;
    }
    const value = m[2] ?? argv[(i += 1)];
    if (value === undefined || value === '') throw new UsageError(`--${name} needs a value`);
    opts[name] = value;
  }
  return { positional, opts };
}

/** Every command module in ./commands, by name. */
function commands() {
  const dir = path.join(__dirname, 'commands');
  const out = new Map();
  for (const f of fs.readdirSync(dir).sort()) {
    if (!f.endsWith('.js')) continue;
    const c = require(path.join(dir, f));
    out.set(c.name, c);
  }
  return out;
}

function help(all) {
  const lines = [
    `usage: ${PROG} <command> [arguments] [options]`,
    '',
    'commands:',
    ...[...all.values()].map((c) => `  ${`${c.name} ${c.args ?? ''}`.trimEnd().padEnd(34)} ${c.summary}`),
    '',
    'options:',
    '  --store <file|url>   the store: an embedded store file, or an XTDB node (http://…); default as in pi:',
    '                       SCM_STORE / SCM_STORE_PATH / SCM_XTDB_URL, then .pi/settings.json, then .scm/store.sqlite',
    '  --session <id>       the session a short id (t12, f3) belongs to (search: only its objects)',
    '  --json               machine-readable output',
    '  --full               full object ids instead of the ids the model sees',
    '  -o, --output <file>  where to write (report, ctx materialize)',
    '  --at <time>          ctx resolve: RFC 3339 time (2026-11-24T14:05:00Z)',
    '  --depth <n>          ctx log / ctx history: at most n commits',
    '  --stop <s>           ctx materialize: compaction (default), root, or a ctx id',
    '  --format <f>         ctx materialize: pi-messages (default) or pi-jsonl (a pi session file)',
    '  --type <t>           search: file or toolcall (comma-separated)',
    '  --since <time>       search: objects written at or after an RFC 3339 time',
    '  --limit <n>          search: at most n hits (1..200, default 10)',
    '',
    'Ids: the model sees tool calls as t1, t2, … and files as f1, f2, … per session; every object also has a full id',
    '(toolcall:<session>:<call>, a file\'s identity hash). Model calls are numbered from 0. Tokens are estimates:',
    '⌈characters / 4⌉ of each message as JSON; "cached" is the start of a call\'s context that repeats the previous call\'s.',
    'Exit status: 0 done, 1 failed, 2 wrong usage.',
  ];
  return lines.join('\n') + '\n';
}

/** What a command gets: its arguments, the options, and lazily opened store and sessions. */
function context(positional, opts, io) {
  const cwd = io.cwd ?? process.cwd();
  let config;
  let storePromise;
  const sessions = new Map();
  const ctx = {
    args: positional,
    opts,
    cwd,
    format,
    usage(message) {
      return new UsageError(message);
    },
    config() {
      config ??= loadConfig(cwd, { store: opts.store ? storeFromArg(opts.store) : undefined });
      return config;
    },
    storeOptions() {
      const s = storeOptionsFor(ctx.config().store, cwd);
      return s;
    },
    /** The store, opened once. An embedded store file that does not exist is an error (never created here). */
    store() {
      storePromise ??= (async () => {
        const options = ctx.storeOptions();
        if (options.kind === 'embedded' && !fs.existsSync(options.path)) {
          const e = new Error(`no store at ${options.path} (run pi in this folder first, or pass --store <file|url>)`);
          e.code = 'STORE_UNAVAILABLE';
          throw e;
        }
        const { openStore } = require('../store.js');
        return openStore(options);
      })();
      return storePromise;
    },
    /** Session `id` opened read-only: nothing is written, files are not looked at. */
    async session(id) {
      if (!sessions.has(id)) {
        sessions.set(
          id,
          (async () => {
            await ctx.store();
            const cfg = ctx.config();
            const { ContextManager } = require('../context-manager.js');
            return ContextManager.open({
              sessionId: id,
              store: ctx.storeOptions(),
              workspaceRoot: cwd,
              readOnly: true,
              mounts: cfg.mounts,
              defaultFilesystemId: cfg.defaultFilesystemId,
              defaultIsLocal: cfg.defaultIsLocal,
              cachePolicy: cfg.cachePolicy,
              policy: cfg.policy,
            });
          })(),
        );
      }
      return sessions.get(id);
    },
    /** Closes session `id` if this run opened it (a command that visits every session holds one at a time). */
    async release(id) {
      const p = sessions.get(id);
      sessions.delete(id);
      if (p) await (await p).close();
    },
    /** Full object id for what the user typed: a t12/f3 alias needs --session. */
    async objectId(typed) {
      if (opts.session) return (await ctx.session(opts.session)).resolveId(typed);
      if (/^[tf]\d+$/.test(typed)) {
        throw new UsageError(`${typed} is an id the model sees in one session: add --session <session id>`);
      }
      return typed;
    },
    progress: (label, total) => format.progress(label, total, io.stderr),
    print(text) {
      io.stdout.write(text);
    },
    json(value) {
      io.stdout.write(JSON.stringify(value, null, 2) + '\n');
    },
    async close() {
      for (const p of sessions.values()) {
        try {
          await (await p).close();
        } catch {}
      }
    },
  };
  return ctx;
}

/** Runs the tool; resolves to the exit status. `io` lets tests pass their own streams. */
async function main(argv, io = { stdout: process.stdout, stderr: process.stderr }) {
  const all = commands();
  let ctx;
  try {
    const { positional, opts } = parseArgs(argv);
    const [name, ...rest] = positional;
    if (!name || name === 'help' || (opts.help && !name)) {
      io.stdout.write(help(all));
      return name || opts.help ? 0 : 2;
    }
    const cmd = all.get(name);
    if (!cmd) throw new UsageError(`unknown command ${JSON.stringify(name)}`);
    if (opts.help) {
      io.stdout.write(`usage: ${PROG} ${cmd.name} ${cmd.args ?? ''}\n${cmd.summary}\n`);
      return 0;
    }
    const want = (cmd.args ?? '').split(' ').filter((a) => a.startsWith('<')).length;
    const max = (cmd.args ?? '').split(' ').filter(Boolean).length;
    if (rest.length < want || rest.length > max) {
      throw new UsageError(`usage: ${PROG} ${cmd.name} ${cmd.args ?? ''}`.trimEnd());
    }
    ctx = context(rest, opts, io);
    await cmd.run(ctx);
    return 0;
  } catch (e) {
    const usage = e instanceof UsageError;
    io.stderr.write(`${PROG}: ${e.message}${usage ? '' : ` [${e.code ?? 'ERROR'}]`}\n`);
    if (usage) io.stderr.write(`run '${PROG} help' for the commands and options\n`);
    return usage ? 2 : 1;
  } finally {
    await ctx?.close();
  }
}

module.exports = { main, parseArgs, UsageError };
