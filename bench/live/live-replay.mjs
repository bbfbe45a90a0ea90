#!/usr/bin/env node
// A recorded pi session played again in the real pi loop: the scripted (faux)
// model sends the recorded assistant messages one by one, pi runs the tools for
// real on a workspace rebuilt from what the session read, and the package
// (default layout, embedded store, watcher on) shapes every call — as a user's
// session would run, only with a model that cannot react. The offline replay
// (bench/replay) feeds the engine recorded outputs; this one exercises what only
// a live run has: pi's hooks, `cm.read` indexing, the watcher seeing the agent's
// own edits, write-behind, real tool results.
//
//   node bench/live/live-replay.mjs <session.jsonl> [--line 1.6] [--calls N] [--out DIR] [--keep]
//
// Runs the script twice, with and without the package, and prints per run:
// calls, errors, edits that succeeded live, edit-anchor visibility (the replay
// benchmark's definition, over the live edits that succeeded in both runs),
// total tokens and effective cost (standard and cheap-reads price models, no
// expiry) as ratios against the run without the package. Bash commands that
// are not reads of one workspace file are not run: they print their recorded
// output (the recorded workspace is not here). Results: DIR/live-summary.json.
import { createReadStream, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { tmpdir } from "node:os";
import { dirname, join, posix } from "node:path";
import { fileURLToPath } from "node:url";
import { missingTools, readSession, startPiRpc } from "../../e2e/harness.mjs";
import { loadSession } from "../replay/lib/session.mjs";
import { transformMessages } from "../replay/lib/llm.mjs";
import { anchorVisibility, contextIndex, editAnchorLines, PRICE_MODELS, priceCall } from "../replay/lib/sufficiency.mjs";
import { callSegments, contentText, lcpSegments, segmentsLength, Tokenizer } from "../replay/lib/tokens.mjs";

const PACKAGE = join(dirname(fileURLToPath(import.meta.url)), "../../pi/index.js");

/** A shell command that only prints (part of) one file, as the core recognises it (a loose check). */
const SHELL_READ = /^(cd \S+ && )?(cat|head|tail|nl|sed -n)\b[^;&|$`<>]*(\| *(sed -n|head|tail)\b[^;&|$`<>]*)?$/;

// pi's note at the end of a cut read: "[Showing lines 1-2000 of 5210. Use
// offset=2001 to continue.]", "[N more lines in file. Use offset=…]", and in
// older sessions "... (257 more lines not shown. Use offset=180 to continue reading)".
const stripTrailer = (text) => text.replace(/\n\n(\[|\.\.\. \()[^\n]*Use offset=\d+[^\n]*$/, "");

/**
 * The script (one step per model call, turns split at user prompts) and the
 * workspace's files as they were before the session touched them.
 */
export function planFromSession(text, { cwd, runDir, calls = Infinity }) {
  const session = loadSession(text);
  const from = session.header?.cwd ?? "/";
  const home = from.split("/").slice(0, 3).join("/");
  const mapPath = (s) => (typeof s === "string" ? s.split(from).join(cwd).split(home).join(join(runDir, "home")) : s);
  const mapArgs = (v) =>
    typeof v === "string" ? mapPath(v) : Array.isArray(v) ? v.map(mapArgs) : v && typeof v === "object" ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, mapArgs(x)])) : v;
  const abs = (p) => (typeof p === "string" ? posix.resolve(from, p.replace(/^@/, "")) : null);

  const results = new Map();
  for (const e of session.path) if (e.type === "message" && e.message?.role === "toolResult") results.set(e.message.toolCallId, e.message);

  // Files: lines known from reads before the file's first change; edits made
  // before any read are undone on the first whole read after them.
  const files = new Map(); // abs path -> { lines: [], changed, pending: [{oldText,newText}], created }
  const fileOf = (p) => {
    let f = files.get(p);
    if (!f) files.set(p, (f = { lines: [], changed: false, pending: [], created: false, known: false }));
    return f;
  };
  const turns = [];
  const bash = [];
  let steps = 0;
  for (const e of session.path) {
    if (steps >= calls) break;
    if (e.type !== "message") continue;
    const m = e.message;
    if (m.role === "user") {
      const t = typeof m.content === "string" ? m.content : contentText(m.content);
      turns.push({ prompt: mapPath(t) || "(image)", steps: [] });
      continue;
    }
    if (m.role !== "assistant" || !turns.length) continue;
    const broken = m.stopReason === "error" || m.stopReason === "aborted";
    const step = { text: "", toolCalls: [] };
    for (const b of m.content ?? []) {
      if (b.type === "text") step.text += b.text;
      else if (b.type === "thinking" && b.thinking) step.thinking = (step.thinking ?? "") + b.thinking;
      else if (b.type === "toolCall" && !broken) {
        const r = results.get(b.id);
        let args = mapArgs(b.arguments ?? {});
        const p = abs(b.arguments?.path ?? b.arguments?.file_path);
        if (b.name === "edit") {
          const edits = Array.isArray(args.edits) ? args.edits : [{ oldText: args.oldText, newText: args.newText }];
          args = { path: args.path ?? args.file_path, edits };
          if (p && r && !r.isError) {
            const f = fileOf(p);
            if (!f.known && !f.created) f.pending.push(...edits);
            f.changed = true;
          }
        } else if (b.name === "write" && p) {
          const f = fileOf(p);
          if (!f.known && !f.changed) f.created = true;
          f.changed = true;
        } else if (b.name === "read" && p && r && !r.isError) {
          const f = fileOf(p);
          const out = stripTrailer(contentText(r.content));
          if (!f.changed) {
            const at = Math.max(1, Number(b.arguments.offset) || 1) - 1;
            out.split("\n").forEach((l, i) => (f.lines[at + i] = l));
            f.known = true;
          } else if (!f.known && !f.created && f.pending.length && !b.arguments.offset && !b.arguments.limit) {
            let t = out;
            for (const ed of [...f.pending].reverse()) t = t.replace(mapPath(ed.newText), mapPath(ed.oldText));
            f.lines = t.split("\n");
            f.known = true;
          }
        } else if (b.name === "bash" && !SHELL_READ.test(String(b.arguments?.command ?? "").trim())) {
          // Not run: it prints what it printed then (with the recorded exit status).
          let out = r ? mapPath(contentText(r.content)) : "";
          const code = r?.isError ? Number(/exited with code (\d+)/.exec(out)?.[1] ?? 1) : 0;
          out = out.replace(/\n*Command exited with code \d+\s*$/, "");
          bash.push({ id: b.id, out, code });
          args = { command: `sh ${join(runDir, "bash", "run.sh")} ${bash.length - 1}` };
        }
        step.toolCalls.push({ name: b.name, args, id: b.id });
      }
    }
    if (!step.toolCalls.length && !step.text && !step.thinking) step.text = "(no text)";
    turns.at(-1).steps.push(step);
    steps++;
  }
  // pi calls the model again after tool results: a turn that ended on tool
  // calls (the user spoke up, or the recording stops) gets a closing reply.
  for (const t of turns) if (!t.steps.length || t.steps.at(-1).toolCalls.length) t.steps.push({ text: "(turn ends)" });
  const workspace = new Map();
  for (const [p, f] of files) {
    if (!f.known || f.created) continue;
    workspace.set(mapPath(p), Array.from(f.lines, (l) => l ?? "").join("\n"));
  }
  return { turns: turns.filter((t) => t.steps.length), workspace, bash };
}

function prepareRun(plan, runDir, cwd) {
  mkdirSync(cwd, { recursive: true });
  for (const [p, text] of plan.workspace) {
    if (!p.startsWith(runDir)) continue;
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, text);
  }
  const dir = join(runDir, "bash");
  mkdirSync(dir, { recursive: true });
  plan.bash.forEach((b, i) => {
    writeFileSync(join(dir, `${i}.out`), b.out);
    writeFileSync(join(dir, `${i}.code`), String(b.code));
  });
  writeFileSync(join(dir, "run.sh"), `d=$(dirname "$0")\ncat "$d/$1.out"\nexit $(cat "$d/$1.code")\n`);
}

async function runOnce(text, { line, withPackage, calls, base }) {
  const runDir = mkdtempSync(join(base, withPackage ? "scm-" : "raw-"));
  const cwd = join(runDir, "cwd");
  const plan = planFromSession(text, { cwd, runDir, calls });
  prepareRun(plan, runDir, cwd);
  const script = plan.turns.flatMap((t) => t.steps);
  const started = Date.now();
  const rpc = await startPiRpc({ line, runDir, cwd, script, extensions: withPackage ? [PACKAGE] : [], timeoutMs: 120000,
    // pi's own compaction would ask the scripted model for a summary (a step
    // out of turn) and end raw pi's growth: off in both runs.
    settings: { compaction: { enabled: false } },
    // One record per call with the whole context: raw pi's reach hundreds of MB,
    // more than the harness's whole-file read takes; read line by line below.
    env: { SCM_FAUX_CAPTURE: join(runDir, "calls.jsonl") } });
  let failed = null;
  try {
    for (const t of plan.turns) {
      const resp = await rpc.prompt(t.prompt, 300000);
      if (!resp.success) throw new Error(`prompt refused: ${JSON.stringify(resp)}`);
    }
  } catch (err) {
    failed = String(err?.message ?? err).slice(0, 2000);
  }
  const r = await rpc.close(60000);
  return { r, plan, script, ms: Date.now() - started, failed, runDir };
}

/** Per call: tokens (total, cached) and what `visit(call, provider)` returns. */
async function callsOf(runDir, tok, visit) {
  let prev = null;
  const out = [];
  const lines = createInterface({ input: createReadStream(join(runDir, "calls.jsonl")), crlfDelay: Infinity });
  for await (const line of lines) {
    if (!line.trim()) continue;
    const c = JSON.parse(line);
    const provider = transformMessages(c.messages.filter((m) => m.role !== "system"));
    const segs = callSegments(tok, { system: c.systemPrompt ?? "", tools: [] }, provider);
    const total = segmentsLength(segs);
    const cached = lcpSegments(prev, segs);
    prev = segs;
    out.push({ step: c.step, total, cached, ...visit(c.step, provider) });
  }
  return out;
}

/** Tool results as pi stored them: id -> isError. */
function liveResults(r) {
  const out = new Map();
  for (const e of r.sessionFile ? readSession(r.sessionFile) : []) {
    if (e.type === "message" && e.message?.role === "toolResult") out.set(e.message.toolCallId, e.message);
  }
  return out;
}

export async function liveReplay(file, { line = "1.6", calls = Infinity, out, keep = false } = {}) {
  const missing = missingTools(line);
  if (missing) throw new Error(missing);
  const text = readFileSync(file, "utf8");
  const base = mkdtempSync(join(tmpdir(), "scm-live-"));
  const tok = new Tokenizer();
  const runs = {};
  for (const withPackage of [false, true]) {
    const name = withPackage ? "self-context-manager" : "raw";
    const run = await runOnce(text, { line, withPackage, calls, base });
    const results = liveResults(run.r);
    // Every edit's anchor visibility in the call that made it (which edits
    // count is known once both runs are done).
    const perCall = await callsOf(run.runDir, tok, (step, provider) => {
      const edits = (step === null ? [] : (run.script[step]?.toolCalls ?? [])).filter((tc) => tc.name === "edit");
      if (!edits.length) return { edits: [] };
      const ctx = contextIndex(provider);
      return { edits: edits.map((tc) => ({ tc, ...anchorVisibility(editAnchorLines(tc.args), ctx) })) };
    });
    runs[name] = { run, results, perCall };
  }
  // Edits that succeeded live in both runs: the model quoted what was there.
  const okIn = (n, id) => runs[n].results.get(id) && !runs[n].results.get(id).isError;
  const summary = { session: file, line, strategies: [] };
  for (const [name, { run, results, perCall }] of Object.entries(runs)) {
    let total = 0;
    let edits = 0;
    let supported = 0;
    const prices = Object.fromEntries(PRICE_MODELS.map((pm) => [pm.key, 0]));
    const missed = [];
    for (const c of perCall) {
      total += c.total;
      for (const pm of PRICE_MODELS) prices[pm.key] += priceCall(pm, c.total, c.cached, 0).effective;
      for (const { tc, ...v } of c.edits) {
        if (!okIn("raw", tc.id) || !okIn("self-context-manager", tc.id)) continue;
        edits++;
        if (v.supported) supported++;
        else missed.push({ call: c.step, path: tc.args.path, lines: v.lines, visible: v.visible });
      }
    }
    const errors = [...results.values()].filter((m) => m.isError).length;
    summary.strategies.push({
      strategy: name,
      calls: perCall.length,
      exitCode: run.r.exitCode,
      failed: run.failed,
      ms: run.ms,
      toolErrors: errors,
      edits,
      supported,
      missed,
      total,
      prices,
      stderrTail: run.r.stderr.slice(-1500),
      runDir: run.runDir,
    });
  }
  const raw = summary.strategies.find((s) => s.strategy === "raw");
  for (const s of summary.strategies) {
    s.totalRatio = s.total / raw.total;
    s.priceRatios = Object.fromEntries(Object.entries(s.prices).map(([k, v]) => [k, v / raw.prices[k]]));
  }
  if (out) {
    mkdirSync(out, { recursive: true });
    writeFileSync(join(out, "live-summary.json"), JSON.stringify(summary, null, 2));
  }
  if (!keep) rmSync(base, { recursive: true, force: true });
  return summary;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const opt = (k) => {
    const i = args.indexOf(k);
    return i >= 0 ? args.splice(i, 2)[1] : undefined;
  };
  const line = opt("--line") ?? "1.6";
  const calls = Number(opt("--calls") ?? Infinity);
  const out = opt("--out");
  const keep = args.includes("--keep");
  const file = args.find((a) => !a.startsWith("--"));
  if (!file) {
    console.error("usage: live-replay.mjs <session.jsonl> [--line 0.73|1.5|1.6] [--calls N] [--out DIR] [--keep]");
    process.exit(2);
  }
  const s = await liveReplay(file, { line, calls, out, keep });
  console.log(`| run | calls | tool errors | supported edits | total | standard | cheap reads | wall |`);
  console.log(`|---|---:|---:|---:|---:|---:|---:|---:|`);
  for (const x of s.strategies) {
    const pr = (k) => x.priceRatios[k].toFixed(3);
    console.log(`| ${x.strategy} | ${x.calls} | ${x.toolErrors} | ${x.supported} / ${x.edits} | ${x.totalRatio.toFixed(3)} | ${pr("standard")} | ${pr("cheapReads")} | ${(x.ms / 1000).toFixed(0)} s |`);
    if (x.failed) console.log(`  failed: ${x.failed}`);
    for (const m of x.missed) console.log(`  unsupported: call ${m.call} ${m.path} ${m.visible}/${m.lines}`);
  }
}
