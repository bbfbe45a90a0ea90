// Session loading and per-call context reconstruction, following pi's own
// semantics (coding-agent SessionManager.buildSessionContext + messages.ts).
//
// * v1 files (no id/parentId, compaction.firstKeptEntryIndex) are migrated the
//   way pi migrates them: sequential ids, parentId = previous entry, and
//   firstKeptEntryIndex (an index into the file's lines, header included)
//   becomes firstKeptEntryId.
// * Tree files: the active path is the walk from the leaf (the last entry in
//   file order, as pi's SessionManager sets it on load) to the root.
// * Every assistant message on that path is one model call. The context of the
//   call is what pi's buildSessionContext returns for the entries before it:
//   with a compaction on the path, [compaction summary, entries from
//   firstKeptEntryId up to the compaction, entries after the compaction].
// * context_edit entries (pi 1.x) replace (`replacement: {content}`) or omit
//   (`replacement: null`) an earlier entry's message in later contexts.
// * `custom`, `label`, `session_info`, `model_change`, `thinking_level_change`
//   entries carry no LLM context.

export const COMPACTION_SUMMARY_PREFIX =
  "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
export const COMPACTION_SUMMARY_SUFFIX = "\n</summary>";
export const BRANCH_SUMMARY_PREFIX =
  "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
export const BRANCH_SUMMARY_SUFFIX = "</summary>";

/** Parse JSONL text into raw file entries (malformed lines are skipped, like pi). */
export function parseJsonl(text) {
  const out = [];
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    try {
      out.push(JSON.parse(line));
    } catch {
      /* skip malformed line */
    }
  }
  return out;
}

/**
 * Normalise file entries to the tree format.
 * Returns { header, entries (without header, each with id/parentId), format: "v1"|"tree" }.
 */
/**
 * A session's JSONL text with `edit(message)` applied to each message entry's message, in order (it changes
 * the message in place); every other entry and blank lines dropped as they were. For the session variants
 * (`scale-reads.mjs`, `shell-reads.mjs`).
 */
export function editMessages(text, edit) {
  const out = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const e = JSON.parse(line);
    if (e.type === "message" && e.message) edit(e.message);
    out.push(JSON.stringify(e));
  }
  return `${out.join("\n")}\n`;
}

export function normalizeEntries(fileEntries) {
  const header = fileEntries.find((e) => e.type === "session") ?? null;
  const body = fileEntries.filter((e) => e.type !== "session");
  const isTree = body.length > 0 && body.every((e) => typeof e.id === "string" && "parentId" in e);
  if (isTree) {
    return { header, entries: body, format: "tree" };
  }
  // v1 -> v2 migration (pi's migrateV1ToV2), on copies.
  const copies = fileEntries.map((e) => ({ ...e }));
  let prev = null;
  let n = 0;
  for (const e of copies) {
    if (e.type === "session") continue;
    e.id = `e${n++}`;
    e.parentId = prev;
    prev = e.id;
  }
  for (const e of copies) {
    if (e.type === "compaction" && typeof e.firstKeptEntryIndex === "number") {
      const target = copies[e.firstKeptEntryIndex];
      if (target && target.type !== "session") e.firstKeptEntryId = target.id;
      delete e.firstKeptEntryIndex;
    }
  }
  return { header, entries: copies.filter((e) => e.type !== "session"), format: "v1" };
}

/** Path from root to leaf (leaf = last entry in file order unless given). */
export function activePath(entries, leafId) {
  const byId = new Map(entries.map((e) => [e.id, e]));
  let cur = leafId ? byId.get(leafId) : entries[entries.length - 1];
  const path = [];
  const seen = new Set();
  while (cur && !seen.has(cur.id)) {
    seen.add(cur.id);
    path.push(cur);
    cur = cur.parentId ? byId.get(cur.parentId) : undefined;
  }
  return path.reverse();
}

// Synthesised messages (compaction summary, custom_message, branch_summary) are
// created once per entry, so every call that includes them shares one object.
const synthesized = new WeakMap();
function once(entry, make) {
  let m = synthesized.get(entry);
  if (m === undefined) {
    m = make();
    synthesized.set(entry, m);
  }
  return m;
}

function entryToMessage(entry) {
  if (entry.type === "message") return entry.message;
  if (entry.type === "custom_message" || entry.type === "branch_summary") return once(entry, () => entryToMessageNew(entry));
  return undefined;
}

function entryToMessageNew(entry) {
  if (entry.type === "custom_message") {
    return {
      role: "custom",
      customType: entry.customType,
      content: entry.content,
      display: entry.display,
      timestamp: Date.parse(entry.timestamp) || 0,
    };
  }
  if (entry.type === "branch_summary" && entry.summary) {
    return { role: "branchSummary", summary: entry.summary, fromId: entry.fromId, timestamp: Date.parse(entry.timestamp) || 0 };
  }
  return undefined;
}

const edited = new WeakMap(); // replacement object -> edited message (stable across calls)
function applyEdit(message, edit) {
  if (edit === undefined) return message;
  if (edit === null) return undefined; // omitted
  if (typeof edit !== "object") return message;
  let m = edited.get(edit);
  if (m === undefined) {
    m = applyEditNew(message, edit);
    edited.set(edit, m);
  }
  return m;
}

function applyEditNew(message, edit) {
  if ("content" in edit) {
    if (message.role === "bashExecution") return { ...message, output: typeof edit.content === "string" ? edit.content : textOf(edit.content) };
    return { ...message, content: edit.content };
  }
  return message;
}

function textOf(content) {
  if (typeof content === "string") return content;
  return (content ?? []).filter((b) => b.type === "text").map((b) => b.text).join("\n");
}

/**
 * pi's buildSessionContext over path[0..end) (exclusive), with context edits.
 * Returns AgentMessage[] (roles: user, assistant, toolResult, bashExecution,
 * custom, compactionSummary, branchSummary).
 */
export function buildContext(path, end = path.length) {
  let compactionIdx = -1;
  const edits = new Map();
  for (let i = 0; i < end; i++) {
    const e = path[i];
    if (e.type === "compaction") compactionIdx = i;
    else if (e.type === "context_edit" && e.targetId) edits.set(e.targetId, e.replacement ?? null);
  }
  const messages = [];
  const push = (entry) => {
    let m = entryToMessage(entry);
    if (m === undefined) return;
    if (edits.size && edits.has(entry.id)) m = applyEdit(m, edits.get(entry.id));
    if (m !== undefined) messages.push(m);
  };
  if (compactionIdx >= 0) {
    const c = path[compactionIdx];
    messages.push(
      once(c, () => ({ role: "compactionSummary", summary: c.summary, tokensBefore: c.tokensBefore, timestamp: Date.parse(c.timestamp) || 0 })),
    );
    let found = false;
    for (let i = 0; i < compactionIdx; i++) {
      if (path[i].id === c.firstKeptEntryId) found = true;
      if (found) push(path[i]);
    }
    for (let i = compactionIdx + 1; i < end; i++) push(path[i]);
  } else {
    for (let i = 0; i < end; i++) push(path[i]);
  }
  return messages;
}

/** Deep-freeze plain data so strategies cannot mutate the recording by accident. */
export function deepFreeze(o) {
  if (o && typeof o === "object" && !Object.isFrozen(o)) {
    Object.freeze(o);
    for (const v of Object.values(o)) deepFreeze(v);
  }
  return o;
}

/**
 * When a call's request was sent, in ms: the assistant message's own
 * `timestamp` (pi sets it when the request starts streaming), else the entry's
 * (when the finished message was appended); null when neither parses.
 */
export function requestTime(message, entry) {
  for (const t of [message?.timestamp, entry?.timestamp]) {
    const v = typeof t === "number" ? t : typeof t === "string" ? Date.parse(t) : NaN;
    if (Number.isFinite(v)) return v;
  }
  return null;
}

/**
 * Load a session from JSONL text and reconstruct the context of every model call.
 * Returns { header, format, entries, path, calls: [{ index, entryId, pathIndex,
 *   messages, usage, stopReason, model, compactionsBefore, time }] , compactions }.
 */
export function loadSession(text, { leafId } = {}) {
  const fileEntries = parseJsonl(text);
  const { header, entries, format } = normalizeEntries(fileEntries);
  deepFreeze(entries);
  const path = activePath(entries, leafId);
  const calls = [];
  let compactions = 0;
  const compactionCalls = [];
  for (let k = 0; k < path.length; k++) {
    const e = path[k];
    if (e.type === "compaction") {
      compactions++;
      compactionCalls.push(calls.length); // index of the first call after it
      continue;
    }
    if (e.type !== "message" || e.message?.role !== "assistant") continue;
    const m = e.message;
    calls.push({
      index: calls.length,
      entryId: e.id,
      pathIndex: k,
      messages: buildContext(path, k),
      usage: m.usage ?? null,
      stopReason: m.stopReason,
      model: m.model,
      compactionsBefore: compactions,
      time: requestTime(m, e),
    });
  }
  return { header, format, entries, path, calls, compactionCalls };
}
