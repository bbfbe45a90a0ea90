import assert from "node:assert/strict";
import { test } from "node:test";
import { scaleReads } from "./scale-reads.mjs";

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
