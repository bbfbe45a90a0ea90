import assert from "node:assert/strict";
import { test } from "node:test";
import { toProviderMessages } from "./lib/llm.mjs";
import { COMPACTION_SUMMARY_PREFIX, loadSession } from "./lib/session.mjs";

const jsonl = (entries) => entries.map((e) => JSON.stringify(e)).join("\n");
const user = (text) => ({ role: "user", content: [{ type: "text", text }], timestamp: 1 });
const asst = (text, calls = [], stopReason = calls.length ? "toolUse" : "stop", usage = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 }) => ({
  role: "assistant",
  content: [...(text ? [{ type: "text", text }] : []), ...calls.map(([id, name, args]) => ({ type: "toolCall", id, name, arguments: args }))],
  stopReason,
  usage,
  model: "m",
  timestamp: 1,
});
const result = (id, name, text) => ({ role: "toolResult", toolCallId: id, toolName: name, content: [{ type: "text", text }], isError: false, timestamp: 1 });
const msg = (message) => ({ type: "message", timestamp: "2025-01-01T00:00:00.000Z", message });
const texts = (messages) =>
  messages.map((m) => {
    if (m.role === "compactionSummary") return `S:${m.summary}`;
    if (m.role === "toolResult") return `R:${m.content[0].text}`;
    if (m.role === "assistant") return `A:${m.content.map((b) => (b.type === "text" ? b.text : `${b.name}()`)).join("+")}`;
    if (m.role === "bashExecution") return `!${m.command}`;
    return `U:${typeof m.content === "string" ? m.content : m.content[0].text}`;
  });

// v1 (old) format: no ids; compaction.firstKeptEntryIndex indexes the file's lines (header = 0).
const V1 = jsonl([
  { type: "session", id: "s1", timestamp: "2025-01-01T00:00:00.000Z", cwd: "/x" }, // 0
  msg(user("u1")), // 1
  msg(asst("", [["t1", "read", { path: "a" }]])), // 2  call 0
  msg(result("t1", "read", "A")), // 3
  msg(asst("a1")), // 4  call 1
  { type: "thinking_level_change", timestamp: "2025-01-01T00:00:00.000Z", thinkingLevel: "high" }, // 5
  msg(user("u2")), // 6
  msg(asst("a2")), // 7  call 2
  { type: "compaction", timestamp: "2025-01-01T00:00:00.000Z", summary: "SUM", firstKeptEntryIndex: 6, tokensBefore: 100 }, // 8
  msg(user("u3")), // 9
  msg({ role: "bashExecution", command: "ls", output: "f", exitCode: 0, cancelled: false, truncated: false, timestamp: 1 }), // 10
  msg(asst("", [["t2", "bash", { command: "x" }]], "aborted")), // 11 call 3 (aborted, no result)
  msg(user("u4")), // 12
  msg(asst("a4")), // 13 call 4
]);

test("v1 session: one call per assistant message, pi compaction semantics", () => {
  const s = loadSession(V1);
  assert.equal(s.format, "v1");
  assert.equal(s.calls.length, 5);
  assert.deepEqual(s.compactionCalls, [3]);
  assert.deepEqual(texts(s.calls[0].messages), ["U:u1"]);
  assert.deepEqual(texts(s.calls[1].messages), ["U:u1", "A:read()", "R:A"]);
  assert.deepEqual(texts(s.calls[2].messages), ["U:u1", "A:read()", "R:A", "A:a1", "U:u2"]);
  // after the compaction: [summary, kept from firstKeptEntryIndex (line 6) up to the compaction, then after]
  assert.deepEqual(texts(s.calls[3].messages), ["S:SUM", "U:u2", "A:a2", "U:u3", "!ls"]);
  assert.deepEqual(texts(s.calls[4].messages), ["S:SUM", "U:u2", "A:a2", "U:u3", "!ls", "A:bash()", "U:u4"]);
  // the synthesized summary message is one object shared by every later call
  assert.equal(s.calls[3].messages[0], s.calls[4].messages[0]);
  // recorded messages are shared (not copied) and frozen
  assert.equal(s.calls[1].messages[0], s.calls[2].messages[0]);
  assert.ok(Object.isFrozen(s.calls[1].messages[0]));
});

test("provider conversion: summary/bash become user text, aborted dropped, no orphan results", () => {
  const s = loadSession(V1);
  const p = toProviderMessages(s.calls[4].messages);
  assert.deepEqual(p.map((m) => m.role), ["user", "user", "assistant", "user", "user", "user"]);
  assert.ok(p[0].content[0].text.startsWith(COMPACTION_SUMMARY_PREFIX));
  assert.ok(p[0].content[0].text.includes("SUM"));
  assert.equal(p[4].content[0].text, "Ran `ls`\n```\nf\n```");
});

test("orphaned tool calls get a synthetic result before the next user message", () => {
  const msgs = [user("u"), asst("", [["x1", "read", { path: "p" }]]), user("v")];
  const p = toProviderMessages(msgs);
  assert.deepEqual(p.map((m) => m.role), ["user", "assistant", "toolResult", "user"]);
  assert.equal(p[2].toolCallId, "x1");
  assert.equal(p[2].content[0].text, "No result provided");
});

// Tree format: follow the path to the leaf (last entry), ignore the abandoned branch;
// custom entries carry no context; context_edit replaces / omits earlier entries.
const T = (id, parentId, rest) => ({ id, parentId, timestamp: "2025-01-01T00:00:00.000Z", ...rest });
const TREE = jsonl([
  { type: "session", version: 3, id: "s2", timestamp: "2025-01-01T00:00:00.000Z", cwd: "/x" },
  T("a", null, msg(user("u1"))),
  T("b", "a", msg(asst("", [["t1", "read", { path: "a" }]]))),
  T("c", "b", msg(result("t1", "read", "BIG"))),
  T("d", "c", msg(asst("abandoned"))), // branch left by /tree
  T("e", "c", { type: "custom", customType: "ext", data: { x: 1 } }),
  T("f", "e", { type: "context_edit", targetId: "c", replacement: { content: [{ type: "text", text: "ref" }] } }),
  T("g", "f", msg(asst("kept"))),
  T("h", "g", msg(user("u2"))),
  T("i", "h", { type: "context_edit", targetId: "h", replacement: null }),
  T("j", "i", { type: "compaction", summary: "S2", firstKeptEntryId: "g", tokensBefore: 5 }),
  T("k", "j", msg(asst("last"))),
]);

test("tree session: leaf path, context_edit, custom entries, compaction by id", () => {
  const s = loadSession(TREE);
  assert.equal(s.format, "tree");
  assert.deepEqual(s.calls.map((c) => c.entryId), ["b", "g", "k"]);
  assert.deepEqual(texts(s.calls[0].messages), ["U:u1"]);
  assert.deepEqual(texts(s.calls[1].messages), ["U:u1", "A:read()", "R:ref"]);
  assert.deepEqual(texts(s.calls[2].messages), ["S:S2", "A:kept"]);
});
