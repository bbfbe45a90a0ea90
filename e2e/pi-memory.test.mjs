// Memory across sessions through real pi (issue 12), both pi lines, scripted faux model, embedded store,
// spec layout: session 1 writes a note and ends; session 2 (a new pi session on the same store) finds it
// with search and activates it by the id the search returned, and sees its content, then the linked files'
// metadata lines (not their content), and expands one of them. Then, in the default layout: expand over a grep's
// hits and over an earlier session's chat.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { join } from "node:path";
import { PI_LINES, tempBase, workspace, again, runScm, missingTools, failInfo, call, step, allText, toolResults, count, REPO } from "./fixtures/scm-pi.mjs";

const BASE = tempBase("pi-memory");
const addon = createRequire(import.meta.url)(join(REPO, "index.js"));
const SPEC = { SCM_LAYOUT: "spec" };

for (const line of PI_LINES) {
	describe(`pi ${line}: memory across sessions`, { skip: missingTools(line) ?? false }, () => {
		it("session 2 finds session 1's note with search, activates it by id, sees its links as metadata lines and expands one", async () => {
			const ws = workspace(BASE, { "src/a.ts": "export const a = 1; // A-BODY-MARKER\n", "src/b.ts": "export const b = 2; // B-BODY-MARKER\n" });
			const word = `zq${Date.now().toString(36)}`;
			const note = `# Plan\nThe ${word} migration touches [[../src/a.ts]] and [b](../src/b.ts).\nNOTE-BODY-MARKER\n`;
			const r1 = await runScm({
				line, ...ws, env: SPEC,
				script: [step(call("write", { path: "notes/plan.md", content: note })), "written"],
				prompt: "write the plan",
			});
			assert.equal(r1.exitCode, 0, failInfo(r1));

			const resolver = new addon.Resolver({ workspaceRoot: ws.cwd });
			const noteId = resolver.resolve("notes/plan.md").objectId;
			const [aId, bId] = ["src/a.ts", "src/b.ts"].map((p) => resolver.resolve(p).objectId);
			const r2 = await runScm({
				line, ...again(ws), env: SPEC,
				script: [
					step(call("search", { query: word })),
					step(call("activate", { id: noteId })),
					step(call("expand", { id: noteId, positions: [2] })),
					"done",
				],
				prompt: "what was the plan?",
			});
			assert.equal(r2.exitCode, 0, failInfo(r2));
			assert.ok(r2.captures[0].tools.includes("search"), `tools: ${r2.captures[0].tools}`);
			assert.ok(!allText(r2.captures[0]).includes("NOTE-BODY-MARKER"), "a new session starts without the note");
			const activated = r2.captures.at(-2);
			// Spec layout: results are refs in the chat; the search output is an active toolcall's content.
			assert.deepEqual(toolResults(activated).map((x) => x.text.match(/tool=(\w+) status=(\w+)/)?.slice(1)), [["search", "ok"], ["activate", "ok"]]);
			const texts = allText(activated);
			assert.match(texts, new RegExp(`1 objects match "${word}"[^\\n]*\\n- id=${noteId} file path=\\S*notes/plan\\.md`));
			assert.ok(texts.includes("NOTE-BODY-MARKER"), "the activated note's content is in context");
			// Its links: one metadata line per linked file, content not loaded.
			assert.match(texts, new RegExp(`- link id=${aId} file path=\\S*src/a\\.ts type=ts chars=0 \\[unread\\]`));
			assert.match(texts, new RegExp(`- link id=${bId} file path=\\S*src/b\\.ts type=ts chars=0 \\[unread\\]`));
			assert.ok(!texts.includes("A-BODY-MARKER") && !texts.includes("B-BODY-MARKER"), "links are metadata only");
			// expand the second link: b.ts is read and active, a.ts is not.
			const after = allText(r2.captures.at(-1));
			assert.ok(after.includes("B-BODY-MARKER"), "the expanded file's content is in context");
			assert.ok(!after.includes("A-BODY-MARKER"), "only the selected link");
		});

		// Default layout and tools, as users get them: expand follows the files a command found and a chat's tool
		// calls (memory-system-v0 §9).
		it("expand lists the files a grep found as metadata, loads one; a later session lists and loads the first one's tool calls", async () => {
			const ws = workspace(BASE, {
				"src/a.ts": "// match-me\nexport const a = 'A-CONTENT-MARKER';\n",
				"src/b.ts": "// match-me\nexport const b = 'B-CONTENT-MARKER';\n",
			});
			const r1 = await runScm({
				line, ...ws,
				script: [
					step(call("bash", { command: "grep -rl match-me src | sort" })),
					step(call("expand", { id: "t1", metadata: true })),
					step(call("expand", { id: "t1", path: "*b.ts" })),
					"done",
				],
				prompt: "find the files that match",
			});
			assert.equal(r1.exitCode, 0, failInfo(r1));
			const listed = r1.captures[2];
			const listing = toolResults(listed).at(-1).text;
			assert.match(listing, /2 links of toolcall:\S+, metadata only/, listing);
			assert.match(listing, /path=\S*src\/a\.ts: listed \(position 1: file type=ts chars=\d+ \[unread\]\)/, listing);
			assert.match(listing, /path=\S*src\/b\.ts: listed \(position 2: file type=ts/, listing);
			assert.ok(!allText(listed).includes("CONTENT-MARKER"), "metadata only: no file's content");
			const loaded = allText(r1.captures[3]);
			assert.equal(count(loaded, "B-CONTENT-MARKER"), 1, "the selected hit is shown once");
			assert.ok(!loaded.includes("A-CONTENT-MARKER"), "only the selected hit");

			const chat = `chat:${r1.sessionId}`;
			const r2 = await runScm({
				line, ...again(ws),
				script: [step(call("expand", { id: chat, metadata: true })), step(call("expand", { id: chat, positions: [1] })), "done"],
				prompt: "what did the last session run?",
			});
			assert.equal(r2.exitCode, 0, failInfo(r2));
			assert.ok(!allText(r2.captures[0]).includes("src/b.ts"), "a new session starts without the grep's output");
			const calls = toolResults(r2.captures[1]).at(-1).text;
			assert.match(calls, /position 1: toolcall tool=bash status=ok chars=18 args=grep -rl match-me src \| sort/, calls);
			assert.match(calls, /position 3: toolcall tool=expand/, calls);
			const after = allText(r2.captures[2]);
			assert.equal(count(after, "src/a.ts\nsrc/b.ts"), 1, `the first session's grep output is shown once: ${after.slice(-1500)}`);
		});
	});
}
