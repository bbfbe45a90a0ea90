import assert from "node:assert/strict";
import { test } from "node:test";
import createMasking from "./strategies/masking.mjs";
import createSelfContextManager from "./strategies/self-context-manager.mjs";
import createStrawman from "./strategies/strawman.mjs";
import { deepFreeze } from "./lib/session.mjs";

function transcript(nResults, size = 50) {
  const msgs = [{ role: "user", content: "go", timestamp: 0 }];
  for (let i = 0; i < nResults; i++) {
    const name = i % 3 === 0 ? "edit" : "read";
    const args = name === "edit" ? { path: `f${i}`, oldText: "a\nb", newText: "c\nd\ne" } : { path: `f${i}` };
    msgs.push({ role: "assistant", content: [{ type: "toolCall", id: `t${i}`, name, arguments: args }], stopReason: "toolUse" });
    msgs.push({ role: "toolResult", toolCallId: `t${i}`, toolName: name, content: [{ type: "text", text: `out${i} `.repeat(size) }], isError: false });
  }
  return deepFreeze(msgs);
}
const resultTexts = (msgs) => msgs.filter((m) => m.role === "toolResult").map((m) => m.content[0].text);

test("masking keeps the newest N tool results and masks older ones", async () => {
  const s = createMasking({ keep: 3 });
  await s.init({});
  const msgs = transcript(5);
  const out = await s.transform(msgs, 0);
  const t = resultTexts(out);
  assert.deepEqual(t.slice(0, 2), ["[output omitted]", "[output omitted]"]);
  assert.ok(t[2].startsWith("out2"));
  assert.ok(t[4].startsWith("out4"));
  // non-result messages untouched (same objects), input not mutated
  assert.equal(out.length, msgs.length);
  assert.equal(out[1], msgs[1]);
  assert.ok(resultTexts(msgs)[0].startsWith("out0"));
  // tool-call pairing preserved
  assert.equal(out[2].toolCallId, "t0");
});

test("masking is recomputed every call: the frontier moves with new results", async () => {
  const s = createMasking({ keep: 2 });
  await s.init({});
  const a = resultTexts(await s.transform(transcript(3), 0));
  const b = resultTexts(await s.transform(transcript(4), 1));
  assert.deepEqual(a.map((x) => x === "[output omitted]"), [true, false, false]);
  assert.deepEqual(b.map((x) => x === "[output omitted]"), [true, true, false, false]);
  // default keep is 10
  const d = createMasking();
  const c = resultTexts(await d.transform(transcript(12), 0));
  assert.equal(c.filter((x) => x === "[output omitted]").length, 2);
});

test("masking returns identical objects for an already-masked message", async () => {
  const s = createMasking({ keep: 1 });
  const msgs = transcript(3);
  const a = await s.transform(msgs, 0);
  const b = await s.transform(msgs, 1);
  assert.equal(a[2], b[2]);
});

test("strawman collapses in one batch above the threshold and then stays stable", async () => {
  const s = createStrawman({ threshold: 1000, keep: 2 });
  // token gauge: 1 token per char of result text, enough for the test
  await s.init({ countTokens: (msgs) => msgs.reduce((a, m) => a + (m.role === "toolResult" ? m.content[0].text.length : 10), 0) });
  const small = await s.transform(transcript(2, 10), 0);
  assert.deepEqual(resultTexts(small), resultTexts(transcript(2, 10))); // under threshold: untouched
  const all = transcript(7, 40); // one transcript, growing: calls see prefixes of it
  const big = await s.transform(all.slice(0, 13), 1);
  const t = resultTexts(big);
  assert.equal(t.filter((x) => x.startsWith("[collapsed")).length, 4);
  assert.match(t[0], /^\[collapsed edit result: f0 — 1 lines\]$/);
  assert.ok(t[5].startsWith("out5"));
  // edit args collapsed to a short ref, read args untouched
  const editCall = big[1].content[0];
  assert.deepEqual(editCall.arguments, { path: "f0", oldText: "[collapsed: 2 lines]", newText: "[collapsed: 3 lines]" });
  // next call (one more result, still under the threshold after collapse): the collapsed prefix is byte-identical
  const next = await s.transform(all, 2);
  for (let i = 0; i < 9; i++) assert.equal(next[i], big[i]);
  assert.ok(resultTexts(next)[6].startsWith("out6"));
  assert.equal(s.stats().collapses, 1);
});

test("self-context-manager slot is skipped when the addon cannot be imported", async () => {
  const s = createSelfContextManager({ module: "/nonexistent/index.js" });
  const r = await s.init({});
  assert.ok(r && typeof r.skip === "string" && r.skip.startsWith("addon not built"));
  await s.close();
});
