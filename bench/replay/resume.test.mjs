// A resume changes nothing the model sees: both real sessions replayed through
// the addon, once straight through and once closing the manager and opening it
// again (same store, same session) every few calls; every call's payload must
// be byte-identical. (Resumed at call 50 of the recorded session, the plan
// document once lost its working copy for 129 calls: the edit check after a
// resume had no record of what the model was shown.)
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { REAL_SESSIONS } from "./lib/real-sessions.mjs";
import { loadStrategyFactory, replaySession } from "./lib/run.mjs";

for (const { file, name, skip } of REAL_SESSIONS) {
  for (const [layout, every] of [["cache", 5], ["spec", 17]]) {
    test(`${name}, ${layout} layout: resumed every ${every} calls, every call's context is byte-identical`, { skip }, async () => {
      const factory = await loadStrategyFactory("self-context-manager");
      const as = (label, options) => ({ name: label, options, factory: (o) => ({ ...factory(o), name: label }) });
      const r = await replaySession({ file, text: readFileSync(file, "utf8"), strategies: [as("straight", { layout }), as("resumed", { layout, resumeEvery: every })] });
      assert.deepEqual(r.skipped, []);
      const straight = r.rows.filter((x) => x.strategy === "straight");
      const resumed = r.rows.filter((x) => x.strategy === "resumed");
      assert.equal(resumed.length, straight.length);
      const differ = straight.filter((x, i) => x.payload !== resumed[i].payload).map((x) => x.call);
      assert.deepEqual(differ, [], `calls whose context differs after resumes`);
    });
  }
}
