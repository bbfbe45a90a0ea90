#!/usr/bin/env node
// A recorded session with every `read` of a text file made through the shell
// instead: `cat F` for a whole read, `sed -n 'A,Bp' F` for a slice, the same
// output. Models that do not follow pi's "use read instead of cat or sed"
// work so; the product takes such a command as a read of the file
// (crates/scm-core/src/context/shell_read.rs), and this shows whether what
// the model sees and what it costs hold up (docs/benchmarks.md, "Session 30").
//
//   node bench/replay/shell-reads.mjs <session.jsonl> <out.jsonl>
//   node bench/replay/replay.mjs <out.jsonl> --strategies raw,masking,self-context-manager

import { readFile, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { editMessages } from "./lib/session.mjs";

const IMAGE = /\.(png|jpe?g|gif|webp)$/i;

/** A shell word for `p`: as is when plain, else single-quoted. */
const word = (p) => (/^[\w./@+-]+$/.test(p) ? p : `'${p.replace(/'/g, "'\\''")}'`);

/** The command that prints what `read` with these arguments shows, or null (an image, no path). */
export function shellCommand({ path, offset, limit } = {}) {
  if (typeof path !== "string" || path === "" || IMAGE.test(path)) return null;
  if (offset == null && limit == null) return `cat ${word(path)}`;
  const from = offset ?? 1;
  return `sed -n '${from},${limit == null ? "$" : from + limit - 1}p' ${word(path)}`;
}

/** The session's JSONL text with each read's call and result made a `bash` command's. */
export function shellReads(text) {
  const ids = new Set();
  return editMessages(text, (m) => {
    if (m.role === "assistant" && Array.isArray(m.content)) {
      for (const p of m.content) {
        if (p?.type !== "toolCall" || p.name !== "read") continue;
        const command = shellCommand(p.arguments);
        if (!command) continue;
        p.name = "bash";
        p.arguments = { command };
        ids.add(p.id);
      }
    } else if (m.role === "toolResult" && ids.has(m.toolCallId)) {
      m.toolName = "bash";
      delete m.details;
    }
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [input, output] = process.argv.slice(2);
  if (!input || !output) {
    console.error("usage: shell-reads.mjs <session.jsonl> <out.jsonl>");
    process.exit(2);
  }
  await writeFile(output, shellReads(await readFile(input, "utf8")));
}
