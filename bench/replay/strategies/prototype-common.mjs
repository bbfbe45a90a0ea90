// Shared pieces of the layout prototypes (prototype-*.mjs): object ids, the
// object registry built from pi's messages, and the rendered text formats.
// Not a strategy itself (no default export). See docs/notes/layout-experiments.md.
//
// The prototypes model what the Rust engine would render. They only see pi's
// AgentMessages, so objects are derived from them:
//   - every tool call + its result is a toolcall object;
//   - every path a read/edit/write names is a file object; a read result or a
//     write's content is a version of it (edit creates a version whose text the
//     recording does not hold).

import { createHash } from "node:crypto";

export function textOf(content) {
  if (typeof content === "string") return content;
  return (content ?? []).filter((b) => b && b.type === "text").map((b) => b.text ?? "").join("\n");
}

export function lineCount(s) {
  if (!s) return 0;
  let n = 1;
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) === 10) n++;
  return n;
}

/** chars/4: the engine has no tokenizer; every threshold is in these units. */
export const est = (chars) => Math.ceil(chars / 4);

const sha = (s) => createHash("sha256").update(s).digest("hex");
// stable serialisation (sorted keys, no whitespace) as the spec defines it
export function stable(v) {
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(stable).join(",")}]`;
  return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${stable(v[k])}`).join(",")}}`;
}

/**
 * Id scheme for what the agent sees.
 *   long   : 64-hex identity_hash (what the spec stores as xt/id)
 *   prefix : shortest unique hex prefix of identity_hash, at least `prefixLen` chars, fixed once shown
 *   seq    : session-local alias, "t<n>" for toolcalls and "f<n>" for files, n in order of first sight
 */
export class Ids {
  constructor(scheme = "seq", sessionId = "session", prefixLen = 6) {
    this.scheme = scheme;
    this.sessionId = sessionId;
    this.prefixLen = prefixLen;
    this.counters = { t: 0, f: 0 };
    this.shown = new Set();
  }
  make(kind, key) {
    const full =
      kind === "f"
        ? sha(stable({ type: "file", source: { type: "filesystem", filesystemId: "fs0", path: key } }))
        : sha(stable({ type: "toolcall", "xt/id": `toolcall:${this.sessionId}:${key}` }));
    if (this.scheme === "long") return full;
    if (this.scheme === "seq") return `${kind}${++this.counters[kind]}`;
    let n = this.prefixLen;
    while (this.shown.has(full.slice(0, n))) n++;
    const id = full.slice(0, n);
    this.shown.add(id);
    return id;
  }
}

/**
 * Object registry fed with every call's messages (in order, idempotent per
 * message object). Toolcall objects are keyed by the toolCall block object
 * (repeated provider ids stay distinct); results are matched to the oldest
 * unanswered call with the same id.
 */
export class Registry {
  constructor(ids) {
    this.ids = ids;
    this.byBlock = new Map(); // toolCall block -> tc
    this.byResult = new Map(); // toolResult message -> tc
    this.list = []; // tcs in order of first sight
    this.files = new Map(); // path -> file
    this.fileList = [];
    this.pending = new Map(); // toolCallId -> [tc]
    this.seenMsg = new Set();
    this.turn = 0; // number of user messages seen
    this.msgTurn = new Map(); // message -> turn it belongs to
  }

  file(path) {
    let f = this.files.get(path);
    if (!f) {
      f = { id: this.ids.make("f", path), path, chars: 0, version: 0, lastText: null, seq: this.fileList.length };
      this.files.set(path, f);
      this.fileList.push(f);
    }
    return f;
  }

  ingest(messages) {
    const fresh = [];
    for (const m of messages) {
      if (this.seenMsg.has(m)) continue;
      this.seenMsg.add(m);
      fresh.push(m);
      if (m.role === "user") this.turn++;
      this.msgTurn.set(m, this.turn);
      if (m.role === "assistant") {
        (m.content ?? []).forEach((b, bi) => {
          if (b.type !== "toolCall") return;
          const a = b.arguments ?? {};
          const tc = {
            block: b,
            msg: m,
            bi,
            name: b.name,
            args: a,
            seq: this.list.length,
            turn: this.turn,
            id: null,
            result: null,
            resultText: "",
            resultChars: 0,
            isError: false,
            file: null,
            fileVersion: 0,
            argChars: argChars(b),
          };
          tc.id = this.ids.make("t", `${b.id}#${this.list.length}`);
          if (typeof a.path === "string" && (b.name === "read" || b.name === "edit" || b.name === "write")) tc.file = this.file(a.path);
          this.byBlock.set(b, tc);
          this.list.push(tc);
          const q = this.pending.get(b.id) ?? [];
          q.push(tc);
          this.pending.set(b.id, q);
        });
      } else if (m.role === "toolResult") {
        const q = this.pending.get(m.toolCallId);
        const tc = q?.shift();
        if (!tc) continue;
        tc.result = m;
        tc.resultText = textOf(m.content);
        tc.resultChars = tc.resultText.length;
        tc.isError = !!m.isError;
        this.byResult.set(m, tc);
        const f = tc.file;
        if (f && !tc.isError) {
          if (tc.name === "read") {
            f.lastRead = tc;
            // an unchanged re-read (same text as the last known version) is the same version
            if (f.lastText !== tc.resultText || f.dirty) {
              f.version++;
              f.lastText = tc.resultText;
              f.dirty = false;
            }
            f.chars = Math.max(f.chars, tc.resultChars);
          } else if (tc.name === "write") {
            f.version++;
            f.lastText = typeof tc.args.content === "string" ? tc.args.content : null;
            f.chars = f.lastText?.length ?? f.chars;
            f.dirty = false;
          } else if (tc.name === "edit") {
            f.version++;
            f.dirty = true; // content of the new version is not in the recording
            const d = (tc.args.newText?.length ?? 0) - (tc.args.oldText?.length ?? 0);
            f.chars = Math.max(0, f.chars + d);
          }
          tc.fileVersion = f.version;
        }
      }
    }
    return fresh;
  }
}

function argChars(b) {
  const a = b.arguments ?? {};
  if (b.name === "edit") return (a.oldText?.length ?? 0) + (a.newText?.length ?? 0);
  if (b.name === "write") return a.content?.length ?? 0;
  if (b.name === "bash") return a.command?.length ?? 0;
  return 0;
}

export function shortArgs(tc, max = 80) {
  const a = tc.args ?? {};
  let s;
  if (typeof a.path === "string") s = a.path + (a.offset != null ? ` offset=${a.offset}` : "") + (a.limit != null ? ` limit=${a.limit}` : "");
  else if (typeof a.command === "string") s = a.command.replace(/\s+/g, " ").trim();
  else s = JSON.stringify(a);
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/** Memo: (source object, signature string) -> derived object, so unchanged renders stay === across calls. */
export class Memo {
  constructor() {
    this.m = new WeakMap();
  }
  get(src, sig, make) {
    let by = this.m.get(src);
    if (!by) this.m.set(src, (by = new Map()));
    let x = by.get(sig);
    if (x === undefined) {
      x = make();
      by.set(sig, x);
    }
    return x;
  }
}

/** A user-role text message (pi `custom` message -> user text in convertToLlm). */
export function textMessage(text) {
  return { role: "custom", customType: "scm", content: [{ type: "text", text }], display: false, timestamp: 0 };
}

/**
 * The chat the engine renders, by compaction policy:
 *   honour : pi's messages as given (after a pi compaction: summary + kept + new)
 *   ignore : every message ever seen, in order of first sight, pi's summaries dropped
 *            (the product owns the chat; pi's compaction has no effect, memory-system-v0 §22.7)
 */
export class Transcript {
  constructor(mode = "honour") {
    this.mode = mode;
    this.all = [];
    this.seen = new Set();
  }
  update(messages) {
    if (this.mode === "honour") return messages;
    for (const m of messages) {
      if (this.seen.has(m)) continue;
      this.seen.add(m);
      if (m.role === "compactionSummary") continue;
      this.all.push(m);
    }
    return this.all;
  }
}
