// A real recorded pi session played again through the real pi loop (bench/live/live-replay.mjs): the scripted
// model sends the recorded assistant messages, pi runs read/edit/write on a workspace rebuilt from the session,
// once without and once with the package (default layout, embedded store, watcher on). Checked on every pi line:
//   - the package changes no tool's outcome (same calls, same failed tool results as without it);
//   - an edit that succeeded in both runs had its anchor in view (the replay benchmark's rule), but for the
//     first edit of a file made from memory: the model quotes a file it read 80 calls before (pi alone keeps
//     everything); the next call shows the file as it is now, so the edits after it see what they quote;
//   - the model is sent less than pi alone sends.
// Run: node --test e2e/pi-live-replay.test.mjs   (needs scripts/pi/setup.sh and a built addon)
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { liveReplay } from "../bench/live/live-replay.mjs";
import { PI_LINES, REPO, missingTools, tempBase } from "./fixtures/scm-pi.mjs";

tempBase("pi-live-replay");
const SESSION = join(REPO, "bench/replay/workloads/pi-session-themes.jsonl");
// The session's first 120 calls: its first edits, folds, and `theme.ts` edited from memory at calls 106–108
// (its last read at call 20), `docs/theme.md` at 117.
const CALLS = 120;

for (const line of PI_LINES) {
	const missing = missingTools(line);
	const opt = { skip: missing ? `pi ${line} not set up (${missing})` : false };
	describe(`pi ${line}: a recorded session through the real loop`, () => {
		it(`the first ${CALLS} calls: same tool outcomes as pi alone, edits' anchors in view, fewer tokens`, opt, async () => {
			const s = await liveReplay(SESSION, { line, calls: CALLS });
			const [raw, scm] = ["raw", "self-context-manager"].map((n) => s.strategies.find((x) => x.strategy === n));
			for (const x of [raw, scm]) assert.equal(x.failed, null, `${x.strategy}: ${x.failed}\n${x.stderrTail}`);
			assert.equal(scm.calls, raw.calls, "the package made pi call the model a different number of times");
			assert.ok(raw.calls >= CALLS, `only ${raw.calls} calls`);
			assert.equal(scm.toolErrors, raw.toolErrors, "the package changed whether a tool call failed");
			assert.ok(raw.edits >= 10, `only ${raw.edits} edits succeeded in both runs`);
			// At most the first edit from memory of each file misses (before: theme.ts at 106, 107 and 108).
			const files = scm.missed.map((m) => m.path);
			assert.equal(new Set(files).size, files.length, `a file's edits hidden after its first: ${JSON.stringify(scm.missed)}`);
			assert.ok(scm.missed.length <= 2, JSON.stringify(scm.missed));
			assert.ok(scm.totalRatio < 0.8, `total ${scm.totalRatio.toFixed(3)}× pi alone`);
		});
	});
}
