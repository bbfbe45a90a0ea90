// A real recorded pi session played again through the real pi loop (bench/live/live-replay.mjs): the scripted
// model sends the recorded assistant messages, pi runs read/edit/write on a workspace rebuilt from the session,
// once without and once with the package (default layout, embedded store, watcher on). Checked on every pi line:
//   - the package changes no tool's outcome (same calls, same failed tool results as without it);
//   - an edit that succeeded in both runs had its anchor in view (the replay benchmark's rule), but for the
//     first edit of a file made from memory after a long gap: the model quotes a file it last saw 80–190 calls
//     before (pi alone keeps everything); the next call shows the file as it is now, so the edits after it see
//     what they quote (102 of the 105 edits; 101 before session 35, 99 before session 34, 97 before session 33,
//     87 before session 32);
//   - the model is sent less than pi alone sends, within issue 10's standard-price target.
// Run: node --test e2e/pi-live-replay.test.mjs   (needs scripts/pi/setup.sh and a built addon)
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { liveReplay } from "../bench/live/live-replay.mjs";
import { PI_LINES, REPO, missingTools, tempBase } from "./fixtures/scm-pi.mjs";

tempBase("pi-live-replay");
const SESSION = join(REPO, "bench/replay/workloads/pi-session-themes.jsonl");
// The whole session (439 calls live; about 20 s a line): `theme.ts` edited from memory at calls 106–108 (its
// last read at call 20) and again at 248–254 (its copy kept since session 34: edits after greps in between had
// made it a file the agent reads before it edits), `docs/theme.md` at 117 (since session 35: the slice read just
// before shows the small file whole) and at 258 and 413 (its small working copy kept since session 33),
// `dark.json` at 406 (since session 34), `README.md` at 425.
// An edit hidden right after another hidden edit of the same file would mean the copy did not come.
const NEAR = 20;

for (const line of PI_LINES) {
	const missing = missingTools(line);
	const opt = { skip: missing ? `pi ${line} not set up (${missing})` : false };
	describe(`pi ${line}: a recorded session through the real loop`, () => {
		it("same tool outcomes as pi alone, edits' anchors in view, fewer tokens", opt, async () => {
			const s = await liveReplay(SESSION, { line });
			const [raw, scm] = ["raw", "self-context-manager"].map((n) => s.strategies.find((x) => x.strategy === n));
			for (const x of [raw, scm]) assert.equal(x.failed, null, `${x.strategy}: ${x.failed}\n${x.stderrTail}`);
			assert.equal(scm.calls, raw.calls, "the package made pi call the model a different number of times");
			assert.ok(raw.calls >= 400, `only ${raw.calls} calls`);
			assert.equal(scm.toolErrors, raw.toolErrors, "the package changed whether a tool call failed");
			assert.ok(raw.edits >= 100, `only ${raw.edits} edits succeeded in both runs`);
			const missed = JSON.stringify(scm.missed);
			// Only a file's first edit from memory after a gap misses (before session 32: theme.ts at 106, 107, 108).
			for (const [i, m] of scm.missed.entries()) {
				const before = scm.missed.slice(0, i).find((o) => o.path === m.path && m.call - o.call <= NEAR);
				assert.equal(before, undefined, `${m.path} hidden at ${m.call}, right after ${before?.call}: ${missed}`);
			}
			assert.ok(scm.supported >= scm.edits - 3, `${scm.supported} / ${scm.edits} edits' anchors in view: ${missed}`);
			assert.ok(scm.totalRatio < 0.3, `total ${scm.totalRatio.toFixed(3)}× pi alone`);
			assert.ok(scm.priceRatios.standard <= 0.3, `standard ${scm.priceRatios.standard.toFixed(3)}× pi alone`);
		});
	});
}
