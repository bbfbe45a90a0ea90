// What reaches the provider after a strategy's `context` output, following pi:
// coding-agent convertToLlm (bashExecution/custom/summary roles -> user
// messages) then pi-ai transformMessages (aborted/errored assistant messages
// are dropped; tool calls without a result get a synthetic
// "No result provided" error result before the next assistant/user message).

import {
  BRANCH_SUMMARY_PREFIX,
  BRANCH_SUMMARY_SUFFIX,
  COMPACTION_SUMMARY_PREFIX,
  COMPACTION_SUMMARY_SUFFIX,
} from "./session.mjs";

export function bashExecutionToText(m) {
  let text = `Ran \`${m.command}\`\n`;
  text += m.output ? `\`\`\`\n${m.output}\n\`\`\`` : "(no output)";
  if (m.cancelled) text += "\n\n(command cancelled)";
  else if (m.exitCode !== null && m.exitCode !== undefined && m.exitCode !== 0) text += `\n\nCommand exited with code ${m.exitCode}`;
  if (m.truncated && m.fullOutputPath) text += `\n\n[Output truncated. Full output: ${m.fullOutputPath}]`;
  return text;
}

// Converted messages are memoised per source object so that identical inputs
// keep identical (===) outputs across calls, which keeps serialisation cheap.
const converted = new WeakMap();
/** provider message -> role of the AgentMessage it came from (for the token breakdown). */
export const originRole = new WeakMap();

function convertOne(m) {
  switch (m.role) {
    case "bashExecution":
      if (m.excludeFromContext) return undefined;
      return { role: "user", content: [{ type: "text", text: bashExecutionToText(m) }] };
    case "custom":
      return { role: "user", content: typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content };
    case "branchSummary":
      return { role: "user", content: [{ type: "text", text: BRANCH_SUMMARY_PREFIX + m.summary + BRANCH_SUMMARY_SUFFIX }] };
    case "compactionSummary":
      return { role: "user", content: [{ type: "text", text: COMPACTION_SUMMARY_PREFIX + m.summary + COMPACTION_SUMMARY_SUFFIX }] };
    case "user":
    case "assistant":
    case "toolResult":
      return m;
    default:
      return undefined;
  }
}

export function convertToLlm(messages) {
  const out = [];
  for (const m of messages) {
    if (!m || typeof m !== "object") continue;
    let c = converted.get(m);
    if (c === undefined) {
      c = convertOne(m) ?? null;
      converted.set(m, c);
      if (c && c !== m) originRole.set(c, m.role);
    }
    if (c) out.push(c);
  }
  return out;
}

const syntheticResults = new Map();
function syntheticResult(tc) {
  let r = syntheticResults.get(tc.id);
  if (!r) {
    r = { role: "toolResult", toolCallId: tc.id, toolName: tc.name, content: [{ type: "text", text: "No result provided" }], isError: true };
    syntheticResults.set(tc.id, r);
  }
  return r;
}

export function transformMessages(messages) {
  const result = [];
  let pending = [];
  let seen = new Set();
  const flush = () => {
    for (const tc of pending) if (!seen.has(tc.id)) result.push(syntheticResult(tc));
    pending = [];
    seen = new Set();
  };
  for (const msg of messages) {
    if (msg.role === "assistant") {
      if (pending.length) flush();
      if (msg.stopReason === "error" || msg.stopReason === "aborted") continue;
      const calls = (msg.content ?? []).filter((b) => b.type === "toolCall");
      if (calls.length) {
        pending = calls;
        seen = new Set();
      }
      result.push(msg);
    } else if (msg.role === "toolResult") {
      seen.add(msg.toolCallId);
      result.push(msg);
    } else if (msg.role === "user") {
      if (pending.length) flush();
      result.push(msg);
    } else {
      result.push(msg);
    }
  }
  return result;
}

/** AgentMessage[] (what the `context` hook returns) -> provider messages. */
export function toProviderMessages(agentMessages) {
  return transformMessages(convertToLlm(agentMessages));
}
