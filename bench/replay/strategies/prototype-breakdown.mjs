#!/usr/bin/env node
// Where a prototype's tokens are (not a strategy): replays one variant and sums,
// over all calls, the tokens of what it sends by category (lib/breakdown.mjs),
// with tool results split into live content vs refs.
//   node bench/replay/strategies/prototype-breakdown.mjs SESSION.jsonl VARIANT_LABEL [--set NAME]

import { readFile } from "node:fs/promises";
import { loadSession } from "../lib/session.mjs";
import { loadStrategyFactory } from "../lib/run.mjs";
import { toProviderMessages } from "../lib/llm.mjs";
import { Tokenizer, contentText } from "../lib/tokens.mjs";
import { messageBreakdown, addInto } from "../lib/breakdown.mjs";
import { SYSTEM_PROMPT, TOOLS } from "../lib/prompt.mjs";
import { SETS } from "./prototype-variants.mjs";

const [file, label] = process.argv.slice(2);
const all = Object.values(SETS).flat();
const v = label === "raw" ? { strategy: "raw", options: {} } : all.find((x) => x.label === label);
if (!v) throw new Error(`unknown variant ${label}`);
const tok = new Tokenizer();
const session = loadSession(await readFile(file, "utf8"));
const strat = (await loadStrategyFactory(v.strategy))({ ...v.options, label });
const preamble = { system: SYSTEM_PROMPT, tools: TOOLS };
await strat.init({ sessionId: session.header?.id, preamble, tokenizer: tok, countTokens: () => 0, toProviderMessages, log() {} });
const acc = {};
const idTokens = { n: 0 };
for (const call of session.calls) {
  const out = await strat.transform(call.messages, call.index, {});
  for (const m of toProviderMessages(out)) {
    const r = { ...messageBreakdown(tok, m) };
    if (m.role === "toolResult") {
      const t = contentText(m.content);
      if (/^\[t\d+ · \d+ lines\]$|^toolcall_ref|^\[collapsed|identical to/.test(t)) {
        const k = `tool results: ${m.toolName}`;
        r[`refs: ${m.toolName}`] = r[k];
        delete r[k];
      }
      idTokens.n += tok.count(` id=${m.toolCallId}`);
    }
    if (m.role === "assistant") for (const b of m.content ?? []) if (b.type === "toolCall") idTokens.n += tok.count(` id="${b.id}"`);
    addInto(acc, r);
  }
  addInto(acc, { "system prompt + tools": 2061 });
}
const total = Object.values(acc).reduce((a, b) => a + b, 0);
console.log(`${label}: Σ ${total.toLocaleString("en-US")} (mean ${Math.round(total / session.calls.length).toLocaleString("en-US")}/call); provider tool-call ids (in args + result headers) ${idTokens.n.toLocaleString("en-US")}`);
for (const [k, n] of Object.entries(acc).sort((a, b) => b[1] - a[1])) console.log(`${k.padEnd(32)} ${n.toLocaleString("en-US").padStart(12)} ${((100 * n) / total).toFixed(1).padStart(5)}%  ${Math.round(n / session.calls.length).toLocaleString("en-US").padStart(7)}/call`);
