import assert from "node:assert/strict";
import { test } from "node:test";
import { loadStrategyFactory, replaySession, summarize } from "./lib/run.mjs";
import { callCost, lcpArrays, lcpSegments, segmentsLength, Tokenizer } from "./lib/tokens.mjs";

const U = (a) => Uint32Array.from(a);

test("callCost: uncached = total − cached, effective = uncached + 0.1 × cached", () => {
  assert.deepEqual(callCost(1000, 0), { total: 1000, cached: 0, uncached: 1000, effective: 1000 });
  const c = callCost(1000, 900);
  assert.equal(c.uncached, 100);
  assert.ok(Math.abs(c.effective - 190) < 1e-9);
});

test("lcpSegments equals the LCP of the flattened token arrays", () => {
  const A = U([1, 2, 3]);
  const B = U([4, 5]);
  // identical segment objects
  assert.equal(lcpSegments([A, B], [A, B]), 5);
  // prefix call (append-only growth): everything of the previous call is cached
  assert.equal(lcpSegments([A], [A, B]), 3);
  assert.equal(lcpSegments(null, [A, B]), 0);
  // differing segment in the middle
  assert.equal(lcpSegments([A, U([4, 9]), A], [A, U([4, 5]), A]), 4);
  // same tokens split differently across segments still match token-wise
  assert.equal(lcpSegments([U([1, 2]), U([3, 4, 5])], [U([1, 2, 3]), U([4, 6])]), 4);
  // randomized against the flat reference
  let seed = 7;
  const rnd = (n) => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed % n);
  for (let t = 0; t < 300; t++) {
    const flat = Array.from({ length: 1 + rnd(30) }, () => rnd(3));
    const other = flat.slice(0, rnd(flat.length + 1)).concat(Array.from({ length: rnd(10) }, () => rnd(3)));
    const split = (arr) => {
      const segs = [];
      for (let i = 0; i < arr.length; ) {
        const k = 1 + rnd(5);
        segs.push(U(arr.slice(i, i + k)));
        i += k;
      }
      return segs;
    };
    const a = split(flat);
    const b = split(other);
    assert.equal(lcpSegments(a, b), lcpArrays(flat, other));
    assert.equal(segmentsLength(a), flat.length);
  }
});

test("Tokenizer memoises: identical text gives the identical array", () => {
  const tok = new Tokenizer();
  const a = tok.tokens("hello world <|endoftext|>");
  assert.equal(tok.tokens("hello world <|endoftext|>"), a);
  assert.ok(a.length > 3);
});

// A tiny append-only session: for raw, each call's cached part is the whole previous call.
const jsonl = (entries) => entries.map((e) => JSON.stringify(e)).join("\n");
const m = (message) => ({ type: "message", timestamp: "2025-01-01T00:00:00.000Z", message });
const SESSION = jsonl([
  { type: "session", id: "s", timestamp: "2025-01-01T00:00:00.000Z", cwd: "/x" },
  m({ role: "user", content: "please read a", timestamp: 1 }),
  m({ role: "assistant", content: [{ type: "toolCall", id: "t1", name: "read", arguments: { path: "a" } }], stopReason: "toolUse", usage: { input: 10, output: 1, cacheRead: 0, cacheWrite: 0 } }),
  m({ role: "toolResult", toolCallId: "t1", toolName: "read", content: [{ type: "text", text: "line\n".repeat(200) }], isError: false }),
  m({ role: "assistant", content: [{ type: "text", text: "done" }], stopReason: "stop", usage: { input: 1, output: 1, cacheRead: 10, cacheWrite: 300 } }),
  m({ role: "user", content: "thanks", timestamp: 2 }),
  m({ role: "assistant", content: [{ type: "text", text: "ok" }], stopReason: "stop", usage: { input: 1, output: 1, cacheRead: 310, cacheWrite: 5 } }),
]);

test("replaySession: raw caching on an append-only session, sums and ratios", async () => {
  const raw = await loadStrategyFactory("raw");
  const halve = () => ({
    name: "drop-results",
    transform: async (msgs) => msgs.map((x) => (x.role === "toolResult" ? { ...x, content: [{ type: "text", text: "-" }] } : x)),
  });
  const r = await replaySession({ file: "tiny.jsonl", text: SESSION, strategies: [{ name: "raw", factory: raw }, { name: "drop-results", factory: halve }] });
  const rows = r.rows.filter((x) => x.strategy === "raw");
  assert.equal(rows.length, 3);
  assert.equal(rows[0].cached, 0);
  assert.equal(rows[1].cached, rows[0].total);
  assert.equal(rows[2].cached, rows[1].total);
  for (const x of r.rows) {
    assert.equal(x.uncached, x.total - x.cached);
    assert.ok(Math.abs(x.effective - (x.uncached + 0.1 * x.cached)) < 1e-9);
  }
  const s = summarize(r.rows);
  const sr = s.find((x) => x.strategy === "raw");
  const sd = s.find((x) => x.strategy === "drop-results");
  assert.equal(sr.totalRatio, 1);
  assert.equal(sr.total, rows.reduce((a, x) => a + x.total, 0));
  assert.ok(sd.totalRatio < 1);
  assert.ok(Math.abs(sd.effectiveRatio - sd.effective / sr.effective) < 1e-12);
  assert.equal(r.reconstruction.length, 3);
  assert.equal(r.reconstruction[1].recordedTotal, 311);
});
