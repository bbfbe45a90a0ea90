// Invariants of the recommended layout (prototype-rec) over the recorded session:
// every tool result follows its call; every ref's id resolves to the original
// output (retrievable, nothing lost); between epochs/folds the rendered context
// only grows at the end (so the prompt-cache prefix holds).
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { test } from "node:test";
import { loadSession } from "../lib/session.mjs";
import { toProviderMessages } from "../lib/llm.mjs";
import { serializeMessage } from "../lib/tokens.mjs";
import createRec from "./prototype-rec.mjs";

const SESSION = "/work/shared/workloads/pi-session-refactor.jsonl";
const text = await readFile(process.env.SCM_REPLAY_SESSION ?? SESSION, "utf8").catch(() => null);
const textOf = (c) => (typeof c === "string" ? c : (c ?? []).filter((b) => b.type === "text").map((b) => b.text).join("\n"));

test("prototype-rec: pairing, retrievable refs, append-only between epochs", { skip: !text && "session not available" }, async () => {
  const session = loadSession(text);
  const s = createRec();
  await s.init({ sessionId: session.header?.id });
  let prev = null;
  let prevMarks = "";
  let appendOnly = 0;
  let refs = 0;
  for (const call of session.calls) {
    const out = toProviderMessages(await s.transform(call.messages, call.index, {}));
    const calls = new Map();
    for (const m of out) {
      if (m.role === "assistant") for (const b of m.content ?? []) if (b.type === "toolCall") calls.set(b.id, b);
      if (m.role !== "toolResult") continue;
      assert.ok(calls.has(m.toolCallId), `call ${call.index}: result ${m.toolCallId} without its call`);
      const t = textOf(m.content);
      const ref = /^\[(t\d+) · (\d+) lines\]$/.exec(t);
      if (ref) {
        refs++;
        assert.equal(ref[1], m.toolCallId, "the ref names the call's own id");
        const obj = s.lookup(ref[1]);
        assert.ok(obj && obj.kind === "toolcall", `call ${call.index}: ${ref[1]} does not resolve`);
        assert.equal(obj.content.split("\n").length, Number(ref[2]));
      }
    }
    const st = s.stats();
    const marks = `${st.epochs}/${st.folds}`;
    const ser = out.map(serializeMessage);
    if (prev && marks === prevMarks) {
      // no epoch and no fold: the previous call's messages are an exact prefix
      assert.ok(ser.length >= prev.length, `call ${call.index}: context shrank without an epoch`);
      for (let i = 0; i < prev.length; i++) assert.equal(ser[i], prev[i], `call ${call.index}: message ${i} changed without an epoch`);
      appendOnly++;
    }
    prev = ser;
    prevMarks = marks;
  }
  assert.ok(refs > 1000, `refs checked: ${refs}`);
  assert.ok(appendOnly > 400, `append-only calls: ${appendOnly}`);
});
