// Where the tokens are: per provider message, split into categories
// (tool results by tool, tool-call arguments by tool, assistant text, thinking,
// user text, user !bash runs, compaction summaries, framing). Each part is
// tokenised on its own, so parts add up to the message's segment only
// approximately; the remainder (headers, joins) goes to "framing".

import { originRole } from "./llm.mjs";
import { contentText, serializeMessage, toolCallText } from "./tokens.mjs";

const memo = new WeakMap();

const USER_ORIGIN = {
  user: "user messages",
  bashExecution: "user !bash runs",
  compactionSummary: "compaction summaries",
  branchSummary: "branch summaries",
  custom: "custom messages",
};

/** @returns {Record<string, number>} category -> tokens for one provider message */
export function messageBreakdown(tok, m) {
  let r = memo.get(m);
  if (r) return r;
  r = {};
  const add = (k, n) => (r[k] = (r[k] ?? 0) + n);
  const total = tok.count(serializeMessage(m));
  let parts = 0;
  if (m.role === "user") {
    const n = tok.count(contentText(m.content));
    add(USER_ORIGIN[originRole.get(m) ?? "user"] ?? "user messages", n);
    parts += n;
  } else if (m.role === "toolResult") {
    const n = tok.count(contentText(m.content));
    add(`tool results: ${m.toolName}`, n);
    parts += n;
  } else if (m.role === "assistant") {
    for (const b of m.content ?? []) {
      let k, n;
      if (b.type === "thinking") { k = "assistant thinking"; n = b.thinking ? tok.count(b.thinking) : 0; }
      else if (b.type === "text") { k = "assistant text"; n = tok.count(b.text ?? ""); }
      else if (b.type === "toolCall") { k = `tool-call args: ${b.name}`; n = tok.count(toolCallText(b)); }
      else continue;
      add(k, n);
      parts += n;
    }
  }
  add("framing (role headers)", total - parts);
  memo.set(m, r);
  return r;
}

export function addInto(acc, r, times = 1) {
  for (const [k, v] of Object.entries(r)) acc[k] = (acc[k] ?? 0) + v * times;
  return acc;
}
