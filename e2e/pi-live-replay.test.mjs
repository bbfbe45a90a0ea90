// A real recorded pi session played again through the real pi loop (bench/live/live-replay.mjs): the scripted
// model sends the recorded assistant messages, pi runs read/edit/write on a workspace rebuilt from the session,
// once without and once with the package (default layout, embedded store, watcher on). Checked on every pi line:
//   - the package changes no tool's outcome (same calls, same failed tool results as without it);
//   - every edit that succeeded in both runs had its anchor in view, as the replay benchmark defines it;
//   - the model is sent less than pi alone sends.
// Run: node --test e2e/pi-live-replay.test.mjs   (needs scripts/pi/setup.sh and a built addon)
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { liveReplay } from "../bench/live/live-replay.mjs";
import { PI_LINES, REPO, missingTools, tempBase } from "./fixtures/scm-pi.mjs";

tempBase("pi-live-replay");
const SESSION = join(REPO, "bench/replay/workloads/pi-session-themes.jsonl");
// The session's first 60 calls: its first edits, reads of files being edited, a fold-free stretch.
const CALLS = 60;

for (const line of PI_LINES) {
	const missing = missingTools(line);
	const opt = { skip: missing ? `pi ${line} not set up (${missing})` : false };
	describe(`pi ${line}: a recorded session through the real loop`, () => {
		it(`the first ${CALLS} calls: same tool outcomes as pi alone, every edit's anchor in view, fewer tokens`, opt, async () => {
			const s = await liveReplay(SESSION, { line, calls: CALLS });
			const [raw, scm] = ["raw", "self-context-manager"].map((n) => s.strategies.find((x) => x.strategy === n));
			for (const x of [raw, scm]) assert.equal(x.failed, null, `${x.strategy}: ${x.failed}\n${x.stderrTail}`);
			assert.equal(scm.calls, raw.calls, "the package made pi call the model a different number of times");
			assert.ok(raw.calls >= CALLS, `only ${raw.calls} calls`);
			assert.equal(scm.toolErrors, raw.toolErrors, "the package changed whether a tool call failed");
			assert.ok(raw.edits >= 10, `only ${raw.edits} edits succeeded in both runs`);
			assert.deepEqual(scm.missed, [], "edits whose anchor the model could not see");
			assert.ok(scm.totalRatio < 0.8, `total ${scm.totalRatio.toFixed(3)}× pi alone`);
		});
	});
}
