#!/usr/bin/env node
// A recorded session with every `read` output repeated k times: a rough
// stand-in for the same work on files k times as large (the edits still
// quote lines the reads show; raw pi and masking send k times the text).
// The cache layout's size knobs are absolute, so this shows how its figures
// move on a codebase with bigger files (docs/benchmarks.md, "How robust the
// figures are").
//
//   node bench/replay/scale-reads.mjs <session.jsonl> <k> <out.jsonl>
//   node bench/replay/replay.mjs <out.jsonl> --strategies raw,masking,self-context-manager

import { readFile, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";

/** The session's JSONL text with each successful or failed read's text output repeated k times. */
export function scaleReads(text, k) {
  if (!Number.isInteger(k) || k < 1) throw new Error(`k must be an integer ≥ 1, got ${k}`);
  const out = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const e = JSON.parse(line);
    const m = e.type === "message" ? e.message : null;
    if (m?.role === "toolResult" && m.toolName === "read" && Array.isArray(m.content)) {
      for (const b of m.content) if (b?.type === "text" && typeof b.text === "string") b.text = b.text.repeat(k);
    }
    out.push(JSON.stringify(e));
  }
  return `${out.join("\n")}\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [input, k, output] = process.argv.slice(2);
  if (!input || !output || !/^[1-9]\d*$/.test(k ?? "")) {
    console.error("usage: scale-reads.mjs <session.jsonl> <k: integer ≥ 1> <out.jsonl>");
    process.exit(2);
  }
  await writeFile(output, scaleReads(await readFile(input, "utf8"), Number(k)));
}
