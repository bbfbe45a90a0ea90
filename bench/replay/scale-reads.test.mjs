import assert from "node:assert/strict";
import { test } from "node:test";
import { padReads, scaleReads, shiftText } from "./scale-reads.mjs";

test("scaleReads repeats read outputs only, and keeps every other entry as it was", () => {
  const entries = [
    { type: "session", id: "s" },
    { type: "message", message: { role: "toolResult", toolName: "read", content: [{ type: "text", text: "a\n" }, { type: "image", data: "x" }] } },
    { type: "message", message: { role: "toolResult", toolName: "bash", content: [{ type: "text", text: "b\n" }] } },
    { type: "message", message: { role: "user", content: "read it" } },
  ];
  const out = scaleReads(entries.map((e) => JSON.stringify(e)).join("\n"), 3)
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));
  assert.equal(out[1].message.content[0].text, "a\na\na\n");
  assert.deepEqual(out[1].message.content[1], entries[1].message.content[1]);
  assert.deepEqual([out[0], out[2], out[3]], [entries[0], entries[2], entries[3]]);
  assert.throws(() => scaleReads("", 0), /integer ≥ 1/);
});

test("padReads pads whole reads with the file's first read, shifted, and leaves slices alone", () => {
  const call = (id, args) => ({ type: "message", message: { role: "assistant", content: [{ type: "toolCall", id, name: "read", arguments: args }] } });
  const result = (id, text) => ({ type: "message", message: { role: "toolResult", toolCallId: id, toolName: "read", content: [{ type: "text", text }] } });
  const entries = [
    call("a", { path: "f.ts" }),
    result("a", "const alpha = 1;\n"),
    call("b", { path: "f.ts", offset: 1, limit: 1 }),
    result("b", "const alpha = 1;"),
    call("c", { path: "f.ts" }),
    result("c", "const alpha = 2;\n"),
    call("d", { path: "g.ts" }),
    result("d", "line\n\n[Showing lines 1-2000 of 5000. Use offset=2001 to continue.]"),
  ];
  const out = padReads(entries.map((e) => JSON.stringify(e)).join("\n"), 3)
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l).message);
  const pad = shiftText("const alpha = 1;\n", 7) + shiftText("const alpha = 1;\n", 14);
  assert.equal(out[1].content[0].text, `const alpha = 1;\n${pad}`);
  assert.equal(out[3].content[0].text, "const alpha = 1;", "a slice stays");
  assert.equal(out[5].content[0].text, `const alpha = 2;\n${pad}`, "the same padding all session");
  assert.equal(out[7].content[0].text, entries[7].message.content[0].text, "a read pi cut short stays");
  assert.ok(!pad.includes("alpha") && !pad.includes("const"), pad);
  assert.equal(shiftText("Az9", 7), "Hg6");
});
