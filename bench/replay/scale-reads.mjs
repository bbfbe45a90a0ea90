#!/usr/bin/env node
// A recorded session with every `read` output repeated k times: a rough
// stand-in for the same work on files k times as large (the edits still
// quote lines the reads show; raw pi and masking send k times the text).
// The cache layout's size knobs are absolute, so this shows how its figures
// move on a codebase with bigger files (docs/benchmarks.md, "How robust the
// figures are").
//
//   node bench/replay/scale-reads.mjs <session.jsonl> <k> <out.jsonl> [--pad]
//   node bench/replay/replay.mjs <out.jsonl> --strategies raw,masking,self-context-manager
//
// Repeating a read makes every line of it occur k times, so an edit's
// `oldText` no longer matches once in what the read showed, and a context
// manager that follows a file through its edits loses it. `--pad` is the
// stand-in without that flaw: every whole-file read (no offset/limit, not
// truncated by pi) gets k − 1 copies of the file's *first* whole read
// appended, each copy's letters and digits shifted (so none of its lines
// occurs in the file's real text, and no edit quotes it), the same padding
// for that file all session long, as the untouched rest of a larger file
// would be. Ranged reads stay as they were.

import { readFile, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { editMessages } from "./lib/session.mjs";

/** The session's JSONL text with each successful or failed read's text output repeated k times. */
export function scaleReads(text, k) {
  if (!Number.isInteger(k) || k < 1) throw new Error(`k must be an integer ≥ 1, got ${k}`);
  return editMessages(text, (m) => {
    if (m.role === "toolResult" && m.toolName === "read" && Array.isArray(m.content)) {
      for (const b of m.content) if (b?.type === "text" && typeof b.text === "string") b.text = b.text.repeat(k);
    }
  });
}

/** `text` with letters and digits shifted by `by` (1 ≤ by; never a multiple of 26 or 10). */
export function shiftText(text, by) {
  const rot = (c, base, n) => String.fromCharCode(base + ((c - base + by) % n));
  let out = "";
  for (const ch of text) {
    const c = ch.charCodeAt(0);
    if (c >= 97 && c <= 122) out += rot(c, 97, 26);
    else if (c >= 65 && c <= 90) out += rot(c, 65, 26);
    else if (c >= 48 && c <= 57) out += rot(c, 48, 10);
    else out += ch;
  }
  return out;
}

/** pi's note at the end of a read it cut short ("[Showing lines 1-2000 of 5000. Use offset=2001 to continue.]"). */
const TRUNCATED = /\[(Showing lines|\d+ more lines in file)/;

/**
 * The session's JSONL text with every whole-file read padded to k times its
 * first whole read's size (see the header).
 */
export function padReads(text, k) {
  if (!Number.isInteger(k) || k < 1) throw new Error(`k must be an integer ≥ 1, got ${k}`);
  const calls = new Map(); // toolCallId → arguments
  const padding = new Map(); // path → the text appended to its whole reads
  return editMessages(text, (m) => {
    if (m.role === "assistant" && Array.isArray(m.content)) {
      for (const b of m.content) if (b?.type === "toolCall") calls.set(b.id, b.arguments ?? {});
    }
    if (m.role === "toolResult" && m.toolName === "read" && !m.isError && Array.isArray(m.content)) {
      const args = calls.get(m.toolCallId) ?? {};
      const whole = args.offset === undefined && args.limit === undefined;
      const texts = m.content.filter((b) => b?.type === "text" && typeof b.text === "string");
      if (whole && typeof args.path === "string" && texts.length === 1 && !TRUNCATED.test(texts[0].text)) {
        const first = texts[0].text;
        if (!padding.has(args.path)) {
          const sep = first.endsWith("\n") ? "" : "\n";
          let pad = "";
          for (let c = 1; c < k; c++) pad += sep + shiftText(first, 7 * c);
          padding.set(args.path, pad);
        }
        texts[0].text = first + padding.get(args.path);
      }
    }
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const pad = args.includes("--pad");
  const [input, k, output] = args.filter((a) => a !== "--pad");
  if (!input || !output || !/^[1-9]\d*$/.test(k ?? "")) {
    console.error("usage: scale-reads.mjs <session.jsonl> <k: integer ≥ 1> <out.jsonl> [--pad]");
    process.exit(2);
  }
  const scale = pad ? padReads : scaleReads;
  await writeFile(output, scale(await readFile(input, "utf8"), Number(k)));
}
