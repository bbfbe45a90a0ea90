// Context sufficiency (issue 10): edit-anchor visibility and the re-read
// penalty, plus effective cost under several price models.
//
// Edit-anchor visibility. Every *successful* recorded `edit` (its recorded tool
// result is not an error) had to quote text of the file in `oldText`, and the
// model wrote it from what it saw. The edit is *supported* at its call (the
// model call whose assistant message contains the edit tool call) when at
// least 90% of its anchor lines occur in the plain text of that call's
// context. Anchor lines: the lines of `oldText`, trimmed, of 8+ characters; an
// edit with no such line counts as supported. An edit tool call is one edit:
// the top-level `oldText` and every `edits[].oldText` (pi's newer edit tool)
// contribute their lines together. "Occur" is a substring test on the call's
// plain text: text and thinking blocks, every string inside tool-call
// arguments, tool-result text — of the provider messages (after pi's
// convertToLlm + pi-ai's transformMessages, the same messages the tokens are
// counted on). The call's own assistant message is not part of its context.
//
// Penalty. An unsupported edit is, in a live run, a failed edit or an extra
// read; it is charged as one re-read of that file: the tokens of the most
// recent recorded read output of that file before the call (falling back to
// the most recent recorded `write` content when the file was never read), all
// uncached.

import { posix } from "node:path";
import { contentText } from "./tokens.mjs";

export const ANCHOR_MIN_CHARS = 8;
export const SUPPORT_SHARE = 0.9;

/** Anchor lines of one oldText: trimmed lines of 8+ characters. */
export function anchorLines(oldText) {
  if (typeof oldText !== "string") return [];
  const out = [];
  for (const line of oldText.split("\n")) {
    const t = line.trim();
    if (t.length >= ANCHOR_MIN_CHARS) out.push(t);
  }
  return out;
}

/** All oldText strings of an edit tool call's arguments (top-level and `edits[]`). */
export function editOldTexts(args) {
  const out = [];
  if (!args || typeof args !== "object") return out;
  if (typeof args.oldText === "string") out.push(args.oldText);
  if (Array.isArray(args.edits)) for (const e of args.edits) if (e && typeof e.oldText === "string") out.push(e.oldText);
  return out;
}

/** Anchor lines of an edit tool call (all its oldTexts together). */
export function editAnchorLines(args) {
  return editOldTexts(args).flatMap(anchorLines);
}

function pushStrings(v, parts) {
  if (typeof v === "string") parts.push(v);
  else if (Array.isArray(v)) for (const x of v) pushStrings(x, parts);
  else if (v && typeof v === "object") for (const x of Object.values(v)) pushStrings(x, parts);
}

/** Plain text of one provider message (see the header); memoised per object. */
const plainMemo = new WeakMap();
export function messagePlainText(m) {
  let s = plainMemo.get(m);
  if (s !== undefined) return s;
  const parts = [];
  if (typeof m.content === "string") parts.push(m.content);
  else if (Array.isArray(m.content)) {
    for (const b of m.content) {
      if (!b) continue;
      if (b.type === "text") parts.push(b.text ?? "");
      else if (b.type === "thinking") {
        if (!b.redacted && b.thinking) parts.push(b.thinking);
      } else if (b.type === "toolCall") pushStrings(b.arguments, parts);
    }
  }
  s = parts.join("\n");
  plainMemo.set(m, s);
  return s;
}

/** Plain text of a call's context: its provider messages' plain texts, joined. */
export function contextPlainText(providerMessages) {
  return providerMessages.map(messagePlainText).join("\n");
}

/** The set of trimmed lines of a message's plain text; memoised per object. */
const lineSetMemo = new WeakMap();
function messageLineSet(m) {
  let set = lineSetMemo.get(m);
  if (set === undefined) {
    set = new Set();
    for (const line of messagePlainText(m).split("\n")) set.add(line.trim());
    lineSetMemo.set(m, set);
  }
  return set;
}

/**
 * A call's context, indexed for the substring test without joining its text:
 * `has(line)` is `contextPlainText(messages).includes(line)` for a line without
 * "\n" (such a line cannot span two messages). A line that is a whole trimmed
 * line of some message is found in that message's line set (the common case:
 * read output, an earlier edit's newText); only the others are searched for
 * message by message. Joining and scanning every call's text cost about as much
 * as the rest of the replay (1 s on the recorded session).
 */
export function contextIndex(providerMessages) {
  return {
    has(line) {
      for (const m of providerMessages) if (messageLineSet(m).has(line)) return true;
      for (const m of providerMessages) if (messagePlainText(m).includes(line)) return true;
      return false;
    },
  };
}

/**
 * Is an edit supported by this context (its plain text, or a contextIndex)?
 * @param {string[]} lines anchor lines
 * @param {string | {has:(line:string)=>boolean}} context
 * @returns {{lines:number, visible:number, supported:boolean}}
 */
export function anchorVisibility(lines, context) {
  const has = typeof context === "string" ? (l) => context.includes(l) : (l) => context.has(l);
  let visible = 0;
  for (const l of lines) if (has(l)) visible++;
  return { lines: lines.length, visible, supported: lines.length === 0 || visible >= SUPPORT_SHARE * lines.length };
}

function normPath(p, cwd) {
  if (typeof p !== "string" || !p) return null;
  let s = p.trim();
  if (s.startsWith("@")) s = s.slice(1);
  return cwd ? posix.resolve(cwd, s) : posix.normalize(s);
}

/**
 * The successful edits of a loaded session, grouped by the call that made them,
 * each with its anchor lines and the re-read penalty (tokens) it would cost.
 * @param {{path:object[], calls:object[], header?:object}} session from loadSession
 * @param {(text:string)=>number} countTokens
 * @returns {Map<number, {id:string, path:string, lines:string[], penalty:number, penaltySource:string}[]>}
 */
export function sessionEdits(session, countTokens) {
  const cwd = session.header?.cwd;
  const results = new Map(); // toolCallId -> toolResult message
  for (const e of session.path) if (e.type === "message" && e.message?.role === "toolResult") results.set(e.message.toolCallId, e.message);
  const callAt = new Map(session.calls.map((c) => [c.pathIndex, c.index]));
  const lastRead = new Map(); // file -> toolResult text (most recent successful read so far)
  const lastWrite = new Map(); // file -> written content
  const readCalls = new Map(); // toolCallId -> file (read calls awaiting their result)
  const byCall = new Map();
  for (let k = 0; k < session.path.length; k++) {
    const e = session.path[k];
    if (e.type !== "message") continue;
    const m = e.message;
    if (m?.role === "toolResult") {
      const file = readCalls.get(m.toolCallId);
      if (file && !m.isError) lastRead.set(file, contentText(m.content));
      continue;
    }
    if (m?.role !== "assistant" || !Array.isArray(m.content)) continue;
    const callIndex = callAt.get(k);
    for (const b of m.content) {
      if (b?.type !== "toolCall") continue;
      const file = normPath(b.arguments?.path ?? b.arguments?.file_path, cwd);
      if (b.name === "read" && file) readCalls.set(b.id, file);
      if (b.name === "edit" && callIndex !== undefined) {
        const r = results.get(b.id);
        if (!r || r.isError) continue; // only successful edits count
        let penaltySource = "none";
        let penalty = 0;
        if (lastRead.has(file)) {
          penalty = countTokens(lastRead.get(file));
          penaltySource = "read";
        } else if (lastWrite.has(file)) {
          penalty = countTokens(lastWrite.get(file));
          penaltySource = "write";
        }
        const list = byCall.get(callIndex) ?? [];
        list.push({ id: b.id, path: file ?? "", lines: editAnchorLines(b.arguments), penalty, penaltySource });
        byCall.set(callIndex, list);
      }
      // A write is recorded as the file's content once its result is known; taking it
      // here (before the result) only matters for a later edit, which comes after it.
      if (b.name === "write" && file && typeof b.arguments?.content === "string") {
        const r = results.get(b.id);
        if (r && !r.isError) lastWrite.set(file, b.arguments.content);
      }
    }
  }
  return byCall;
}

// ---------------------------------------------------------------------------
// Price models. cost = uncached × uncached price + cached × cached price, in
// "uncached-token equivalents"; with a TTL, a call that starts more than ttlMs
// after the previous call (recorded request times) finds the cache expired and
// is all uncached, for every strategy.

export const CACHE_TTL_MS = 5 * 60 * 1000;
export const PRICE_MODELS = Object.freeze([
  Object.freeze({ key: "standard", label: "standard (1.0 / 0.1)", uncached: 1, cached: 0.1 }),
  Object.freeze({ key: "writePremium", label: "cache-write premium (1.25 / 0.1)", uncached: 1.25, cached: 0.1 }),
  Object.freeze({ key: "cheapReads", label: "cheap reads (1.25 / 0.025)", uncached: 1.25, cached: 0.025 }),
  Object.freeze({ key: "expiry", label: "cache expiry (1.0 / 0.1, cold after 5 min)", uncached: 1, cached: 0.1, ttlMs: CACHE_TTL_MS }),
]);

/**
 * Cost of one call under a price model.
 * @param {{uncached:number, cached:number, ttlMs?:number}} model
 * @param {number} total  input tokens of the call
 * @param {number} cached tokens served by the prefix cache (LCP with the previous call)
 * @param {number|null} gapMs time since the previous call's request (null: first call / unknown)
 * @param {number} [penalty] re-read tokens charged uncached
 */
export function priceCall(model, total, cached, gapMs, penalty = 0) {
  const expired = model.ttlMs !== undefined && gapMs !== null && gapMs !== undefined && gapMs > model.ttlMs;
  const c = expired ? 0 : cached;
  const effective = (total - c) * model.uncached + c * model.cached;
  return { effective, penalised: effective + penalty * model.uncached, expired };
}
