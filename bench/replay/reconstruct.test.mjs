// Accountability on real sessions: after a replay through the addon, a
// call's reconstruction (`reconstructCall(n)`, from the store's history) is the
// context that call returned, to the byte. Both real sessions, both layouts. (The spec layout refused calls whose write had
// landed in one transaction with a later call's: "chat at tx 3 renders 7
// messages, call 1 showed 3", and its rebuilt messages had their keys in
// another order than the ones handed over.)
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { REAL_SESSIONS } from "./lib/real-sessions.mjs";
import { replaySession } from "./lib/run.mjs";
import { scaleReads } from "./scale-reads.mjs";

const { ContextManager } = await import(new URL("../../index.js", import.meta.url).href);

/** A strategy that keeps a hash of every call's context and, before it closes, compares each reconstruction. */
function checked(layout, found) {
  const hash = (x) => createHash("sha256").update(JSON.stringify(x)).digest("hex");
  let cm;
  let dir;
  const shown = [];
  return () => ({
    name: layout,
    async init(ctx) {
      dir = await mkdtemp(join(tmpdir(), "scm-reconstruct-"));
      cm = await ContextManager.open({ sessionId: ctx.sessionId, workspaceRoot: dir, store: { kind: "embedded", path: join(dir, "store.sqlite") }, layout, watch: false });
    },
    async transform(messages) {
      const out = await cm.transformContext(messages);
      shown.push(hash(out));
      return out;
    },
    async close() {
      // The first calls, every 10th and the last (each reconstruction reads the history up to its call).
      for (let n = 0; n < shown.length; n++) {
        if (n >= 6 && n % 10 !== 0 && n !== shown.length - 1) continue;
        try {
          if (hash(await cm.reconstructCall(n)) !== shown[n]) found.push(`${n}: differs`);
        } catch (e) {
          found.push(`${n}: ${e.code} ${e.message}`);
        }
      }
      await cm.close();
      await rm(dir, { recursive: true, force: true });
    },
  });
}

for (const { file, name, skip } of REAL_SESSIONS) {
  for (const layout of ["cache", "spec"]) {
    test(`${name}, ${layout} layout: its calls are reconstructed as they were shown`, { skip }, async () => {
      const found = [];
      const r = await replaySession({ file, text: readFileSync(file, "utf8"), strategies: [{ name: layout, factory: checked(layout, found) }] });
      assert.equal(r.rows.length, r.calls);
      assert.deepEqual(found.slice(0, 10), []);
    });
  }
}

// With reads twice as large the sizes scale with the median read (context/scale.rs): a reconstruction must
// derive the same scale at each call as the live session did.
{
  const { file, name, skip } = REAL_SESSIONS.find((s) => s.name === "pi-session-refactor.jsonl");
  test(`${name} with reads twice as large, cache layout: its calls are reconstructed as they were shown`, { skip }, async () => {
    const found = [];
    const r = await replaySession({ file, text: scaleReads(readFileSync(file, "utf8"), 2), strategies: [{ name: "cache", factory: checked("cache", found) }] });
    assert.equal(r.rows.length, r.calls);
    assert.deepEqual(found.slice(0, 10), []);
  });
}
