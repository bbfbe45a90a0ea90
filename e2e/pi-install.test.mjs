// The package as users get it: `npm pack`, then `pi install npm:self-context-manager@file:<tarball>`
// into a fresh pi agent dir, on both pi lines; pi then loads the extension from its settings and the
// native addon works. Also: a package whose native addon cannot load leaves pi working as before.
// Run: node --test e2e/   (offline: the tarball is local, the package has no dependencies)
import { before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { delimiter, join } from "node:path";
import { LINES, FAUX_EXTENSION } from "./harness.mjs";
import {
	PI_LINES, REPO, tempBase, missingTools, runInstalledPi, convo, count, allText, messageText, header, toolResults, assertToolResultsPaired,
} from "./fixtures/scm-pi.mjs";

const BASE = tempBase("pi-install");
const anyLine = PI_LINES.some((l) => !missingTools(l));
let tarball;

before(() => {
	if (!anyLine) return;
	// npm pack is what `npm publish` uploads: the files list, the pi manifest and the .node must all be in it.
	const out = execFileSync("npm", ["pack", "--silent", "--pack-destination", BASE], { cwd: REPO, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
	tarball = join(BASE, out.trim().split("\n").at(-1));
	assert.ok(existsSync(tarball), `npm pack produced no tarball: ${out}`);
});

/** PATH without any directory that holds cargo or rustc: what a user without Rust has. */
function pathWithoutRust() {
	return (process.env.PATH ?? "").split(delimiter).filter((d) => d && !["cargo", "rustc"].some((b) => existsSync(join(d, b)))).join(delimiter);
}

/**
 * The release layout, built from this checkout: the main package without any .node (as `napi prepublish` publishes
 * it) and the linux-x64-gnu package from npm/linux-x64-gnu with the addon built here, both packed by npm.
 */
function releaseTarballs(dir) {
	const stage = join(dir, "stage");
	mkdirSync(stage, { recursive: true });
	execFileSync("tar", ["-xzf", tarball, "-C", stage]);
	for (const f of readdirSync(join(stage, "package"))) if (f.endsWith(".node")) rmSync(join(stage, "package", f));
	const main = join(dir, "self-context-manager-main.tgz");
	execFileSync("tar", ["-czf", main, "-C", stage, "package"]);
	const plat = join(dir, "linux-x64-gnu");
	mkdirSync(plat);
	for (const f of ["package.json", "README.md"]) writeFileSync(join(plat, f), readFileSync(join(REPO, "npm", "linux-x64-gnu", f)));
	const node = "self-context-manager.linux-x64-gnu.node";
	writeFileSync(join(plat, node), readFileSync(join(REPO, node)));
	const out = execFileSync("npm", ["pack", "--silent", "--pack-destination", dir], { cwd: plat, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
	return { main, plat: join(dir, out.trim().split("\n").at(-1)) };
}

/** `pi install` into a fresh agent dir; npm's global prefix (0.73 installs user packages with -g) stays in the test dir. */
function piInstall(line, dir, { from = tarball, path = process.env.PATH } = {}) {
	const l = LINES[line];
	const agentDir = join(dir, "agent");
	mkdirSync(agentDir, { recursive: true });
	const env = { ...process.env, PATH: path, PI_OFFLINE: "1", PI_TELEMETRY: "0", PI_CODING_AGENT_DIR: agentDir, npm_config_prefix: join(dir, "npm-global") };
	const log = execFileSync(l.node, [l.cli, "install", `npm:self-context-manager@file:${from}`], { cwd: dir, env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 120000 });
	const settingsFile = join(agentDir, "settings.json");
	const settings = JSON.parse(readFileSync(settingsFile, "utf8"));
	if (line === "0.73") {
		// 0.73 treats "@file:<tgz>" as a pinned version that never equals the installed "0.1.0", so at
		// start-up it would reinstall (skipped offline: the package is not loaded). A registry install
		// records name@version; use that entry for the same installed files.
		const version = JSON.parse(execFileSync("tar", ["-xzOf", from, "package/package.json"], { encoding: "utf8" })).version;
		writeFileSync(settingsFile, JSON.stringify({ ...settings, packages: [`npm:self-context-manager@${version}`] }, null, 2));
	}
	const installed = [join(agentDir, "npm", "node_modules", "self-context-manager"), join(dir, "npm-global", "lib", "node_modules", "self-context-manager")].find(existsSync);
	return { agentDir, env: { npm_config_prefix: env.npm_config_prefix }, log, settings, installed };
}


/**
 * pi's own start-up listing, as a user sees it: pi in interactive mode on a pseudo-terminal (util-linux `script`),
 * offline, scripted model; read until the "[Extensions]" section is printed, then the session is killed. Resolves
 * with that section's first line (ANSI sequences removed), or null when it did not appear before the deadline.
 */
async function startupExtensions(line, { cwd, agentDir, env }) {
	const l = LINES[line];
	const cmd = [l.node, l.cli, "-ns", "-nc", "--no-session", "--provider", "faux", "--model", "faux-1", "-e", FAUX_EXTENSION].map((a) => `'${a}'`).join(" ");
	const child = spawn("script", ["-qfec", cmd, "/dev/null"], {
		cwd,
		env: { ...process.env, ...env, PI_OFFLINE: "1", PI_TELEMETRY: "0", PI_CODING_AGENT_DIR: agentDir, TERM: "xterm", COLUMNS: "160", LINES: "40" },
		stdio: ["pipe", "pipe", "pipe"],
		detached: true,
	});
	let out = "";
	// Terminal escapes (OSC … BEL/ST, CSI …) removed; built with RegExp so the source holds no control characters.
	const ESC = String.fromCharCode(27);
	const BEL = String.fromCharCode(7);
	const osc = new RegExp(`${ESC}\\][^${BEL}${ESC}]*(${BEL}|${ESC}\\\\)`, "g");
	const csi = new RegExp(`${ESC}\\[[0-9;?]*[a-zA-Z]`, "g");
	const plain = () => out.replace(osc, "").replace(csi, "").replace(/\r/g, "");
	// The section's first line: after the heading, up to the line's end or its padding (1.x draws lines with cursor
	// moves instead of newlines).
	const section = () => /\[Extensions\][ \t]*\n?\s*(\S.*?)(?:\s{2,}|\n)/.exec(plain())?.[1].trim() ?? null;
	// Polled with a deadline: pi has no event for "start-up listing drawn" that a terminal client could await.
	const found = await new Promise((res) => {
		const timer = setTimeout(() => res(section()), 45000);
		child.stdout.on("data", (d) => {
			out += d;
			const s = section();
			if (s) { clearTimeout(timer); res(s); }
		});
		child.on("exit", () => { clearTimeout(timer); res(section()); });
	});
	try { process.kill(-child.pid, "SIGKILL"); } catch {}
	return found;
}

for (const line of PI_LINES) {
	const missing = missingTools(line);
	const opt = { skip: missing ? `pi ${line} not set up (${missing})` : false };
	describe(`pi ${line}: install`, () => {
		it("pi install from the npm pack tarball into a fresh agent dir: the extension and the native addon load", opt, async () => {
			const dir = mkdtempSync(join(BASE, `inst-${line}-`));
			const inst = piInstall(line, dir);
			assert.deepEqual(inst.settings.packages, [`npm:self-context-manager@file:${tarball}`]);
			assert.ok(inst.installed, `installed package not found under ${dir}`);
			assert.ok(readdirSync(inst.installed).some((f) => f.endsWith(".node")), "the .node addon is not in the package");

			const cwd = join(dir, "cwd");
			mkdirSync(cwd);
			writeFileSync(join(cwd, "a.md"), "ALPHA-TEXT\n");
			const r = await runInstalledPi({ line, cwd, agentDir: inst.agentDir, runDir: dir, env: inst.env, script: [{ toolCalls: [{ name: "read", args: { path: "a.md" } }] }, "ok"], prompt: "go" });
			assert.equal(r.exitCode, 0, r.stderr);
			assert.equal(r.captures.length, 2, r.stderr);
			for (const c of r.captures) assertToolResultsPaired(c);
			assert.ok(r.captures[0].tools.includes("activate"), `tools: ${r.captures[0].tools}`);
			// The default (cache) layout: the constant header first, the read's text inline as its result t1.
			const last = r.captures[1];
			assert.ok(header(last), `no header message: ${JSON.stringify(convo(last)[0])}`);
			assert.deepEqual(toolResults(last), [{ toolCallId: "t1", toolName: "read", text: "ALPHA-TEXT\n", isError: false, ref: null }]);
			assert.equal(count(allText(last), "ALPHA-TEXT"), 1);
			assert.ok(existsSync(join(cwd, ".scm", "store.sqlite")), "the embedded store was not created at its default location");
		});

		it("without Rust: the main package and the prebuilt linux-x64-gnu package, packed, installed on a PATH without cargo/rustc", opt, async () => {
			const dir = mkdtempSync(join(BASE, `norust-${line}-`));
			const path = pathWithoutRust();
			const { main, plat } = releaseTarballs(dir);
			const inst = piInstall(line, dir, { from: main, path });
			assert.ok(!readdirSync(inst.installed).some((f) => f.endsWith(".node")), "the main package must not carry the addon");
			// npm installs the platform package as the main package's optional dependency; from the registry once
			// published, here from its tarball into the same node_modules pi's install used.
			const prefix = line === "0.73" ? ["-g", "--prefix", join(dir, "npm-global")] : ["--prefix", join(inst.agentDir, "npm")];
			execFileSync("npm", ["install", "--no-audit", "--no-fund", "--no-save", ...prefix, plat], { cwd: dir, env: { ...process.env, PATH: path }, stdio: ["ignore", "pipe", "pipe"], timeout: 120000 });
			const cwd = join(dir, "cwd");
			mkdirSync(cwd);
			writeFileSync(join(cwd, "a.md"), "ALPHA-TEXT\n");
			const r = await runInstalledPi({ line, cwd, agentDir: inst.agentDir, runDir: dir, env: { ...inst.env, PATH: path }, script: [{ toolCalls: [{ name: "read", args: { path: "a.md" } }] }, "ok"], prompt: "go" });
			assert.equal(r.exitCode, 0, r.stderr);
			assert.doesNotMatch(r.stderr, /native addon failed to load/);
			assert.equal(r.captures.length, 2, r.stderr);
			assert.ok(r.captures[0].tools.includes("activate"), `tools: ${r.captures[0].tools}`);
			assert.deepEqual(toolResults(r.captures[1]), [{ toolCallId: "t1", toolName: "read", text: "ALPHA-TEXT\n", isError: false, ref: null }]);
			assert.ok(existsSync(join(cwd, ".scm", "store.sqlite")));
		});

		it("pi's list of loaded extensions names it self-context-manager (interactive start-up, on a terminal)", opt, async () => {
			const dir = mkdtempSync(join(BASE, `name-${line}-`));
			const inst = piInstall(line, dir);
			// As `pi install npm:self-context-manager` records it (the label pi shows is the package source, which
			// here would otherwise carry the tarball's path or a version).
			const settingsFile = join(inst.agentDir, "settings.json");
			writeFileSync(settingsFile, JSON.stringify({ ...JSON.parse(readFileSync(settingsFile, "utf8")), packages: ["npm:self-context-manager"] }, null, 2));
			const cwd = join(dir, "cwd");
			mkdirSync(cwd);
			const listed = await startupExtensions(line, { cwd, agentDir: inst.agentDir, env: inst.env });
			assert.ok(listed, "pi printed no [Extensions] section");
			// faux-provider.ts is the test's scripted model, loaded with -e.
			assert.deepEqual(listed.split(/,\s*/).sort(), ["faux-provider.ts", "self-context-manager"]);
		});

		it("a missing native addon: pi keeps working with its own context and says why", opt, async () => {
			const dir = mkdtempSync(join(BASE, `broken-${line}-`));
			const inst = piInstall(line, dir);
			for (const f of readdirSync(inst.installed)) if (f.endsWith(".node")) rmSync(join(inst.installed, f));
			const cwd = join(dir, "cwd");
			mkdirSync(cwd);
			writeFileSync(join(cwd, "a.md"), "ALPHA-TEXT\n");
			const r = await runInstalledPi({ line, cwd, agentDir: inst.agentDir, runDir: dir, env: inst.env, script: [{ toolCalls: [{ name: "read", args: { path: "a.md" } }] }, "ok"], prompt: "go" });
			assert.equal(r.exitCode, 0, r.stderr);
			assert.equal(r.captures.length, 2);
			for (const c of r.captures) assertToolResultsPaired(c);
			assert.match(r.stderr, /self-context-manager.*native addon failed to load/);
			// pi's own behaviour: built-in tools only, the file text in the tool result.
			assert.ok(!r.captures[0].tools.includes("activate"));
			assert.equal(messageText(convo(r.captures[1]).at(-1)), "ALPHA-TEXT\n");
			assert.equal(count(allText(r.captures[1]), "METADATA_POOL"), 0);
			assert.equal(header(r.captures[1]), null);
		});
	});
}
