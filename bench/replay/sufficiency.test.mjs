// Context sufficiency (issue 10): the edit-anchor visibility definition, the
// re-read penalty and the four price models, pinned on tiny synthetic sessions.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { callsCsv, editsCsv } from "./lib/report.mjs";
import { loadStrategyFactory, replaySession, summarize } from "./lib/run.mjs";
import { loadSession } from "./lib/session.mjs";
import {
  anchorLines,
  anchorVisibility,
  CACHE_TTL_MS,
  contextIndex,
  contextPlainText,
  editAnchorLines,
  PRICE_MODELS,
  priceCall,
  sessionEdits,
} from "./lib/sufficiency.mjs";
import { Tokenizer } from "./lib/tokens.mjs";

const jsonl = (entries) => entries.map((e) => JSON.stringify(e)).join("\n");
const T0 = Date.parse("2025-01-01T00:00:00.000Z");
let clock = T0;
const msg = (message) => ({ type: "message", timestamp: new Date(clock).toISOString(), message });
const user = (text) => msg({ role: "user", content: text, timestamp: clock });
const assistant = (content, at) => {
  if (at !== undefined) clock = at;
  return msg({ role: "assistant", content, stopReason: "toolUse", timestamp: clock, usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 } });
};
const call = (id, name, args) => ({ type: "toolCall", id, name, arguments: args });
const result = (id, name, text, isError = false) => msg({ role: "toolResult", toolCallId: id, toolName: name, content: [{ type: "text", text }], isError });
const header = { type: "session", id: "s", timestamp: "2025-01-01T00:00:00.000Z", cwd: "/w" };

const FILE_A = ["function alpha() {", "  const first = computeSomething(1);", "  const second = computeSomething(2);", "  return first + second;", "}"].join("\n");
const ANCHOR_A = ["  const first = computeSomething(1);", "  const second = computeSomething(2);"].join("\n");

// call 0 reads a.js, call 1 runs bash, call 2 edits a.js quoting the read.
// masking keep=1 hides the read's output at call 2; raw shows it.
function readBashEditSession({ editArgs = { path: "a.js", oldText: ANCHOR_A, newText: "x" }, editError = false } = {}) {
  clock = T0;
  return jsonl([
    header,
    user("fix a.js"),
    assistant([call("t1", "read", { path: "a.js" })], T0 + 1000),
    result("t1", "read", FILE_A),
    assistant([call("t2", "bash", { command: "ls" })], T0 + 2000),
    result("t2", "bash", "a.js\nb.js"),
    assistant([call("t3", "edit", editArgs)], T0 + 3000),
    result("t3", "edit", editError ? "Could not find the exact text" : "Successfully replaced text", editError),
    assistant([{ type: "text", text: "done" }], T0 + 4000),
  ]);
}

async function replay(text, strategies = [["raw"], ["masking", { keep: "1" }]]) {
  const loaded = [];
  for (const [name, options] of strategies) loaded.push({ name, factory: await loadStrategyFactory(name), options: options ?? {} });
  return replaySession({ file: "tiny.jsonl", text, strategies: loaded });
}
const rowsOf = (r, strategy) => r.rows.filter((x) => x.strategy === strategy);

describe("edit-anchor visibility", () => {
  test("an edit whose anchor is in the context is supported; masking hides it and it is not", async () => {
    const r = await replay(readBashEditSession());
    const raw = rowsOf(r, "raw");
    const masking = rowsOf(r, "masking");
    // only the call that made the edit (call 2) counts it
    assert.deepEqual(raw.map((x) => x.edits), [0, 0, 1, 0]);
    assert.equal(raw[2].supported, 1);
    assert.equal(masking[2].edits, 1);
    assert.equal(masking[2].supported, 0);
    const s = summarize(r.rows);
    assert.equal(s.find((x) => x.strategy === "raw").supportedShare, 1);
    assert.equal(s.find((x) => x.strategy === "masking").supportedShare, 0);
    // per-edit detail
    const e = r.editRows.find((x) => x.strategy === "masking");
    assert.equal(e.toolCallId, "t3");
    assert.equal(e.path, "/w/a.js");
    assert.equal(e.lines, 2);
    assert.equal(e.visible, 0);
    assert.match(editsCsv(r.editRows), /tiny\.jsonl,2,masking,t3,\/w\/a\.js,2,0,0,\d+,read/);
  });

  test("a failed edit (error result) is not counted", async () => {
    const r = await replay(readBashEditSession({ editError: true }));
    for (const x of r.rows) assert.equal(x.edits, 0);
    assert.equal(r.editRows.length, 0);
  });

  test("only trimmed lines of 8+ chars count; an edit without such a line is supported", () => {
    assert.deepEqual(anchorLines("  }\n\n  return x;\n    const longer = 1;  \n1234567\n12345678"), ["return x;", "const longer = 1;", "12345678"]);
    // hidden by masking, but all its lines are short: supported
    return replay(readBashEditSession({ editArgs: { path: "a.js", oldText: "  }\n}\nx = 1;", newText: "" } })).then((r) => {
      assert.equal(rowsOf(r, "masking")[2].edits, 1);
      assert.equal(rowsOf(r, "masking")[2].supported, 1);
    });
  });

  test("lines are trimmed before the search: indentation may differ from the context", () => {
    const v = anchorVisibility(anchorLines("\t\tconst first = computeSomething(1);"), FILE_A);
    assert.equal(v.visible, 1);
  });

  test("supported at 90% of the anchor lines, not below", () => {
    const lines = Array.from({ length: 20 }, (_, i) => `anchor line number ${i}`);
    const ctx = (n) => lines.slice(0, n).join("\n");
    assert.equal(anchorVisibility(lines, ctx(18)).supported, true); // 18/20 = 90%
    assert.equal(anchorVisibility(lines, ctx(17)).supported, false); // 85%
    const ten = lines.slice(0, 10);
    assert.equal(anchorVisibility(ten, ctx(9)).supported, true);
    assert.equal(anchorVisibility(ten, ctx(8)).supported, false);
    const nineteen = lines.slice(0, 19);
    assert.equal(anchorVisibility(nineteen, ctx(17)).supported, false); // 89.5%
    assert.equal(anchorVisibility([], "").supported, true);
  });

  test("edits[] form: every oldText of the call counts, together with a top-level oldText", async () => {
    assert.deepEqual(editAnchorLines({ path: "a", oldText: "top level line", edits: [{ oldText: "first edit line\nx" }, { oldText: "second edit line" }] }), [
      "top level line",
      "first edit line",
      "second edit line",
    ]);
    const editArgs = { path: "a.js", edits: [{ oldText: "  const first = computeSomething(1);", newText: "a" }, { oldText: "  return first + second;", newText: "b" }] };
    const r = await replay(readBashEditSession({ editArgs }));
    assert.equal(rowsOf(r, "raw")[2].supported, 1);
    assert.equal(r.editRows.find((x) => x.strategy === "raw").lines, 2);
    assert.equal(rowsOf(r, "masking")[2].supported, 0);
    // one anchor missing from the context among two: 50% -> unsupported even for raw
    const half = { path: "a.js", edits: [{ oldText: "  const first = computeSomething(1);", newText: "a" }, { oldText: "text that was never shown", newText: "b" }] };
    const r2 = await replay(readBashEditSession({ editArgs: half }), [["raw"]]);
    assert.equal(rowsOf(r2, "raw")[2].supported, 0);
  });

  test("the plain text covers user text, thinking, tool-call argument strings (nested) and tool-result text, not the call's own message", () => {
    const text = contextPlainText([
      { role: "user", content: "user says hello there" },
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "thinking about things", thinkingSignature: "SIGNATURE-NOT-TEXT" },
          { type: "text", text: "assistant text here" },
          call("c1", "edit", { path: "p", edits: [{ oldText: "nested old text", newText: "nested new text" }] }),
        ],
      },
      { role: "toolResult", toolCallId: "c1", toolName: "edit", content: [{ type: "text", text: "tool result text" }, { type: "image", data: "QUJD", mimeType: "image/png" }] },
    ]);
    for (const s of ["user says hello there", "thinking about things", "assistant text here", "nested old text", "nested new text", "tool result text"]) assert.ok(text.includes(s), s);
    assert.ok(!text.includes("SIGNATURE-NOT-TEXT"));
    assert.ok(!text.includes("QUJD"));
    assert.ok(!text.includes('"oldText"'), "argument strings, not their JSON");
  });

  test("the indexed context answers as a substring search on the joined plain text", () => {
    const messages = [
      { role: "user", content: "first line of user\n   indented whole line here  \nprefix MIDDLE PART suffix" },
      { role: "toolResult", toolCallId: "x", toolName: "read", content: [{ type: "text", text: "alpha beta gamma\ndelta epsilon" }] },
    ];
    const text = contextPlainText(messages);
    const ix = contextIndex(messages);
    const probes = ["indented whole line here", "MIDDLE PART", "alpha beta gamma", "beta gamma", "delta epsilon", "line of user", "not there at all", "suffix alpha", "gamma delta"];
    for (const p of probes) assert.equal(ix.has(p), text.includes(p), p);
    assert.deepEqual(anchorVisibility(probes, ix), anchorVisibility(probes, text));
  });

  test("an earlier edit's newText in the context supports a later edit quoting it", async () => {
    clock = T0;
    const text = jsonl([
      header,
      user("go"),
      assistant([call("e1", "edit", { path: "b.js", oldText: "whatever was there", newText: "brand new content line" })], T0 + 1000),
      result("e1", "edit", "ok"),
      assistant([call("e2", "edit", { path: "b.js", oldText: "brand new content line", newText: "y" })], T0 + 2000),
      result("e2", "edit", "ok"),
    ]);
    const r = await replay(text, [["raw"]]);
    const rows = rowsOf(r, "raw");
    assert.equal(rows[0].supported, 0); // its anchor was never shown
    assert.equal(rows[1].supported, 1);
  });
});

describe("re-read penalty", () => {
  test("an unsupported edit costs its file's most recent read output, uncached; supported edits cost nothing", async () => {
    clock = T0;
    const OLD = "old version of the file, first read\nconst first = computeSomething(1);";
    const text = jsonl([
      header,
      user("go"),
      assistant([call("r1", "read", { path: "a.js" })], T0 + 1000),
      result("r1", "read", OLD),
      assistant([call("r2", "read", { path: "./a.js" }), call("r3", "read", { path: "other.js" })], T0 + 2000),
      result("r2", "read", FILE_A),
      result("r3", "read", "unrelated file"),
      assistant([call("b", "bash", { command: "ls" })], T0 + 3000),
      result("b", "bash", "ls output"),
      assistant([call("t3", "edit", { path: "/w/a.js", oldText: ANCHOR_A, newText: "x" })], T0 + 4000),
      result("t3", "edit", "ok"),
    ]);
    const r = await replay(text);
    const tok = new Tokenizer();
    const expected = tok.count(FILE_A); // the latest read of a.js (./a.js and /w/a.js are the same file)
    const m = rowsOf(r, "masking")[3];
    assert.equal(m.supported, 0);
    assert.equal(m.penalty, expected);
    assert.equal(rowsOf(r, "raw")[3].penalty, 0);
    // penalised = plain + penalty at each model's uncached price
    for (const pm of PRICE_MODELS) assert.ok(Math.abs(m.prices[`${pm.key}Penalised`] - m.prices[pm.key] - expected * pm.uncached) < 1e-9, pm.key);
    const s = summarize(r.rows).find((x) => x.strategy === "masking");
    assert.equal(s.penalty, expected);
    assert.ok(Math.abs(s.prices.standardPenalised - s.effective - expected) < 1e-9);
  });

  test("a file never read is charged its last written content; reads after the call do not count", () => {
    clock = T0;
    const session = loadSession(
      jsonl([
        header,
        user("go"),
        assistant([call("w", "write", { path: "n.js", content: "written content of n" })], T0 + 1000),
        result("w", "write", "ok"),
        assistant([call("e", "edit", { path: "n.js", oldText: "written content", newText: "z" }), call("r", "read", { path: "n.js" })], T0 + 2000),
        result("e", "edit", "ok"),
        result("r", "read", "a much later read of n that must not be used"),
      ]),
    );
    const tok = new Tokenizer();
    const byCall = sessionEdits(session, (t) => tok.count(t));
    const [ed] = byCall.get(1);
    assert.equal(ed.penaltySource, "write");
    assert.equal(ed.penalty, tok.count("written content of n"));
  });
});

describe("price models", () => {
  const [standard, premium, cheap, expiry] = PRICE_MODELS;
  test("the four models: standard 1.0/0.1, write premium 1.25/0.1, cheap reads 1.25/0.025, expiry 1.0/0.1 with a 5-minute TTL", () => {
    assert.deepEqual(
      PRICE_MODELS.map((p) => [p.key, p.uncached, p.cached, p.ttlMs]),
      [
        ["standard", 1, 0.1, undefined],
        ["writePremium", 1.25, 0.1, undefined],
        ["cheapReads", 1.25, 0.025, undefined],
        ["expiry", 1, 0.1, 5 * 60 * 1000],
      ],
    );
    const close = (a, b) => assert.ok(Math.abs(a - b) < 1e-9, `${a} vs ${b}`);
    close(priceCall(standard, 1000, 800, 1000).effective, 200 + 80);
    close(priceCall(premium, 1000, 800, 1000).effective, 250 + 80);
    close(priceCall(cheap, 1000, 800, 1000).effective, 250 + 20);
    close(priceCall(expiry, 1000, 800, 1000).effective, 280);
    close(priceCall(premium, 1000, 800, 1000, 40).penalised, 330 + 50);
  });

  test("expiry: a call more than 5 minutes after the previous request starts cold; exactly 5 minutes does not", () => {
    assert.equal(priceCall(expiry, 1000, 800, CACHE_TTL_MS + 1).effective, 1000);
    assert.equal(priceCall(expiry, 1000, 800, CACHE_TTL_MS + 1).expired, true);
    assert.equal(priceCall(expiry, 1000, 800, CACHE_TTL_MS).expired, false);
    assert.equal(priceCall(expiry, 1000, 800, null).expired, false); // first call: nothing cached anyway
    assert.equal(priceCall(standard, 1000, 800, 10 * CACHE_TTL_MS).expired, false); // only the expiry model has a TTL
  });

  test("expiry in a replay: the call after a 6-minute pause is all uncached for every strategy, the next one is warm again", async () => {
    clock = T0;
    const text = jsonl([
      header,
      user("go"),
      assistant([call("t1", "read", { path: "a.js" })], T0 + 1000),
      result("t1", "read", FILE_A),
      assistant([call("t2", "bash", { command: "ls" })], T0 + 1000 + 4 * 60 * 1000),
      result("t2", "bash", "x"),
      assistant([call("t3", "bash", { command: "pwd" })], T0 + 1000 + 10 * 60 * 1000),
      result("t3", "bash", "/w"),
      assistant([{ type: "text", text: "done" }], T0 + 1000 + 10 * 60 * 1000 + 5000),
    ]);
    const r = await replay(text);
    for (const s of ["raw", "masking"]) {
      const rows = rowsOf(r, s);
      assert.deepEqual(rows.map((x) => x.expired), [false, false, true, false], s);
      assert.ok(rows[2].cached > 0, "the cache model itself still has a prefix");
      assert.equal(rows[2].prices.expiry, rows[2].total);
      assert.ok(Math.abs(rows[1].prices.expiry - rows[1].effective) < 1e-9);
      assert.ok(Math.abs(rows[3].prices.expiry - rows[3].effective) < 1e-9);
      for (const x of rows) {
        assert.ok(Math.abs(x.prices.standard - x.effective) < 1e-9);
        assert.ok(Math.abs(x.prices.writePremium - (1.25 * x.uncached + 0.1 * x.cached)) < 1e-9);
        assert.ok(Math.abs(x.prices.cheapReads - (1.25 * x.uncached + 0.025 * x.cached)) < 1e-9);
      }
    }
    const s = summarize(r.rows);
    assert.equal(s.find((x) => x.strategy === "raw").expiredCalls, 1);
    const raw = s.find((x) => x.strategy === "raw");
    const masking = s.find((x) => x.strategy === "masking");
    for (const k of ["standard", "writePremium", "cheapReads", "expiry"]) assert.ok(Math.abs(masking.priceRatios[k] - masking.prices[k] / raw.prices[k]) < 1e-12);
    const csv = callsCsv(r.rows).split("\n");
    assert.match(csv[0], /,edits,supported_edits,penalty_tokens,expired,effective_write_premium,effective_cheap_reads,effective_expiry,/);
    assert.equal(csv[3].split(",")[11], "1"); // raw call 2: expired
  });
});
