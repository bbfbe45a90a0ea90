// The user-facing reports of the pi package: /context and the lines of /ctx (the model never sees them).
import { isAbsolute, relative, sep } from "node:path";

/** How the files on disk are followed: directories watched, and how many are polled (network filesystems). */
function watcherLine({ watchedDirs, polledDirs }) {
	if (watchedDirs == null) return "off (changes on disk are seen when a file is read or activated)";
	const dirs = `${watchedDirs} ${watchedDirs === 1 ? "directory" : "directories"}`;
	return polledDirs > 0 ? `${dirs}, ${polledDirs} polled (a network filesystem, or watchPoll "always")` : dirs;
}

/** The /context report (user-facing only; the model never sees it). */
export function formatContext(snap, last, cwd, cache = null, aliases = null, stats = null) {
	const byId = new Map(snap.metadataPool.map((e) => [e.id, e]));
	const show = (p) => {
		if (!cwd || !p || !isAbsolute(p)) return p;
		const r = relative(cwd, p);
		return r && !r.startsWith(`..${sep}`) && r !== ".." && !isAbsolute(r) ? r : p;
	};
	const name = (e) => (e?.type === "file" ? show(e.path) : e?.tool ? `${e.tool}${e.args ? ` ${e.args}` : ""}` : e?.type ?? "?");
	const size = (e) => (e?.char_count != null ? `${e.char_count} chars` : "");
	const short = (id) => aliases?.get(id) ?? (id.length > 16 ? id.slice(0, 12) : id);
	const pinned = new Set(snap.pinnedSet);
	const lines = [];
	let activeChars = 0;
	lines.push(`Active (${snap.activeSet.length}):`);
	for (const id of snap.activeSet) {
		const e = byId.get(id);
		activeChars += e?.char_count ?? 0;
		lines.push(`  ${pinned.has(id) ? "📌" : "•"} ${short(id)} ${e?.type ?? ""} ${name(e)} ${size(e)}`.trimEnd());
	}
	const files = snap.metadataPool.filter((e) => e.type === "file");
	const stubs = files.filter((e) => e.state === "stub").length;
	const deleted = files.filter((e) => e.state === "deleted").length;
	const toolcalls = snap.metadataPool.length - files.length;
	lines.push(`Pool: ${snap.metadataPool.length} objects — ${files.length} files (${stubs} unread, ${deleted} deleted), ${toolcalls} tool outputs`);
	lines.push(`Pinned (${snap.pinnedSet.length}): ${snap.pinnedSet.map((id) => name(byId.get(id))).join(", ") || "none"}`);
	const totals = [`session index ${snap.sessionIndex.length}`, `active file text ${activeChars} chars`];
	if (last) totals.push(`last model call ~${last.tokens} tokens (pi alone: ~${last.rawTokens})`);
	lines.push(`Totals: ${totals.join(", ")}`);
	if (stats) lines.push(`Watcher: ${watcherLine(stats)}`);
	if (cache)
		lines.push(
			`Cache layout: ${cache.epochs} collapses, ${cache.folds + cache.hostFolds} folds; ${cache.collapsedResults} outputs and ${cache.collapsedArgs} write/edit/bash bodies collapsed to refs; ${cache.copies ? `${cache.copies} working copies (files edited from memory, shown as they are now); ` : ""}live output ~${cache.liveUnits} tokens${cache.sizeScale > 1 ? `; sizes ×${cache.sizeScale.toFixed(2)} (this codebase's reads are large)` : ""}`,
		);
	return lines.join("\n");
}
