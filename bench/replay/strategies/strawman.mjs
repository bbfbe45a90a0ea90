// `strawman`: batch collapse.
//
// Tool results and edit/write tool-call arguments stay inline. When the call's
// total input exceeds `threshold` tokens, every tool exchange except the
// newest `keep` tool calls is collapsed in one batch:
//   - tool result  -> one line: "[collapsed read result: <path> — 120 lines]"
//   - edit args    -> { path, oldText: "[collapsed: 12 lines]", newText: "[collapsed: 15 lines]" }
//   - write args   -> { path, content: "[collapsed: 300 lines]" }
// Collapsed exchanges stay collapsed (byte-identical) afterwards, so the
// prompt-cache prefix only breaks at a collapse: rarely, and by a lot.
//
// Options: threshold (tokens, default 64000), keep (tool calls, default 6).
// Defaults are tuned so that on pi-session-refactor.jsonl the strawman shows
// the figure quoted in the issue (≈0.43× total, ≈0.49× effective cost vs raw).

const COLLAPSIBLE_ARGS = { edit: ["oldText", "newText"], write: ["content"] };

function lineCount(s) {
  if (!s) return 0;
  let n = 1;
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) === 10) n++;
  return n;
}

function resultText(content) {
  if (typeof content === "string") return content;
  return (content ?? []).filter((b) => b.type === "text").map((b) => b.text).join("\n");
}

function describeCall(tc) {
  if (!tc) return "";
  const a = tc.arguments ?? {};
  if (typeof a.path === "string") return a.path;
  if (typeof a.command === "string") {
    const c = a.command.replace(/\s+/g, " ").trim();
    return c.length > 80 ? `${c.slice(0, 77)}...` : c;
  }
  return "";
}

export default function createStrawman(options = {}) {
  const threshold = Number(options.threshold ?? 64000);
  const keep = Number(options.keep ?? 6);
  let ctx;
  const collapsed = new Set(); // toolCallIds collapsed so far
  const callsById = new Map(); // toolCallId -> toolCall block (for descriptions)
  const resultMemo = new WeakMap(); // original toolResult -> collapsed object
  const assistantMemo = new WeakMap(); // original assistant -> Map(signature -> collapsed object)
  let collapses = 0;

  function collapseResult(m) {
    let x = resultMemo.get(m);
    if (!x) {
      const text = resultText(m.content);
      const what = describeCall(callsById.get(m.toolCallId));
      const line = `[collapsed ${m.toolName} result${what ? `: ${what}` : ""} — ${lineCount(text)} lines]`;
      x = { ...m, content: [{ type: "text", text: line }] };
      resultMemo.set(m, x);
    }
    return x;
  }

  function collapseAssistant(m) {
    const blocks = m.content ?? [];
    const hit = [];
    for (let i = 0; i < blocks.length; i++) {
      const b = blocks[i];
      if (b.type === "toolCall" && COLLAPSIBLE_ARGS[b.name] && collapsed.has(b.id)) hit.push(i);
    }
    if (!hit.length) return m;
    const sig = hit.join(",");
    let byS = assistantMemo.get(m);
    if (!byS) assistantMemo.set(m, (byS = new Map()));
    let x = byS.get(sig);
    if (!x) {
      const content = blocks.map((b, i) => {
        if (!hit.includes(i)) return b;
        const args = { ...b.arguments };
        for (const k of COLLAPSIBLE_ARGS[b.name]) {
          if (typeof args[k] === "string") args[k] = `[collapsed: ${lineCount(args[k])} lines]`;
        }
        return { ...b, arguments: args };
      });
      x = { ...m, content };
      byS.set(sig, x);
    }
    return x;
  }

  function apply(messages) {
    if (!collapsed.size) return messages;
    return messages.map((m) => {
      if (m.role === "toolResult" && collapsed.has(m.toolCallId)) return collapseResult(m);
      if (m.role === "assistant") return collapseAssistant(m);
      return m;
    });
  }

  return {
    name: "strawman",
    description: `batch collapse above ${threshold} tokens, newest ${keep} tool calls kept`,
    async init(c) {
      ctx = c;
    },
    async transform(messages) {
      const ids = [];
      for (const m of messages) {
        if (m.role !== "assistant") continue;
        for (const b of m.content ?? []) {
          if (b.type !== "toolCall") continue;
          ids.push(b.id);
          if (!callsById.has(b.id)) callsById.set(b.id, b);
        }
      }
      let out = apply(messages);
      if (ctx.countTokens(out) > threshold) {
        const before = collapsed.size;
        for (const id of ids.slice(0, Math.max(0, ids.length - keep))) collapsed.add(id);
        if (collapsed.size !== before) {
          collapses++;
          out = apply(messages);
        }
      }
      return out;
    },
    stats() {
      return { collapses, collapsedToolCalls: collapsed.size };
    },
    async close() {},
  };
}
