// Canonical serialisation of one model call, o200k tokenisation with
// memoisation, longest-common-prefix caching and effective-cost arithmetic.
//
// A call is serialised as a sequence of segments:
//   [system] [tools] [message 1] ... [message n]
// and its token sequence is the concatenation of the segments' token arrays
// (each segment is tokenised on its own; segments start at a role header, so
// this is what a chat template does as well). Segment texts:
//   system      "### system\n" + prompt + "\n\n"
//   tools       "### tools\n" + one JSON object {name, description, parameters} per line + "\n\n"
//   user        "### user\n" + text blocks joined by "\n" + "\n\n"          (images: "[image]")
//   assistant   "### assistant\n" + for each block:
//                 thinking  "<thinking>\n" + text + "\n</thinking>\n"  (signatures are not text)
//                 text      text + "\n"
//                 toolCall  '<tool_call id="ID" name="NAME">' + JSON.stringify(arguments) + "</tool_call>\n"
//               + "\n"
//   toolResult  "### tool_result NAME id=ID[ error]\n" + text blocks joined by "\n" + "\n\n"
// Provider messages are what lib/llm.mjs produces (user/assistant/toolResult only).

import { encode } from "gpt-tokenizer/encoding/o200k_base";

export const IMAGE_PLACEHOLDER = "[image]";
const ENCODE_OPTS = { disallowedSpecial: new Set() }; // special-token strings count as plain text

export function contentText(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  const parts = [];
  for (const b of content) {
    if (!b) continue;
    if (b.type === "text") parts.push(b.text ?? "");
    else if (b.type === "image") parts.push(IMAGE_PLACEHOLDER);
  }
  return parts.join("\n");
}

export function toolCallText(b) {
  return `<tool_call id="${b.id}" name="${b.name}">${JSON.stringify(b.arguments ?? {})}</tool_call>\n`;
}

export function serializeMessageUncached(m) {
  switch (m.role) {
    case "user":
      return `### user\n${contentText(m.content)}\n\n`;
    case "assistant": {
      let s = "### assistant\n";
      const blocks = typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content ?? [];
      for (const b of blocks) {
        if (b.type === "thinking") {
          if (b.redacted) s += "<thinking>[redacted]</thinking>\n";
          else if (b.thinking) s += `<thinking>\n${b.thinking}\n</thinking>\n`;
        } else if (b.type === "text") s += `${b.text ?? ""}\n`;
        else if (b.type === "toolCall") s += toolCallText(b);
        else if (b.type === "image") s += `${IMAGE_PLACEHOLDER}\n`;
      }
      return `${s}\n`;
    }
    case "toolResult":
      return `### tool_result ${m.toolName} id=${m.toolCallId}${m.isError ? " error" : ""}\n${contentText(m.content)}\n\n`;
    default:
      return `### ${m.role}\n${contentText(m.content)}\n\n`;
  }
}

const serialized = new WeakMap();
export function serializeMessage(m) {
  let s = serialized.get(m);
  if (s === undefined) {
    s = serializeMessageUncached(m);
    serialized.set(m, s);
  }
  return s;
}

export function systemSegment(systemPrompt) {
  return `### system\n${systemPrompt}\n\n`;
}
export function toolsSegment(tools) {
  return `### tools\n${tools.map((t) => JSON.stringify({ name: t.name, description: t.description, parameters: t.parameters })).join("\n")}\n\n`;
}

/** Tokeniser with a string -> token-array memo (identical text => identical array object). */
export class Tokenizer {
  constructor() {
    this.memo = new Map();
    this.encodedChars = 0;
    this.encodeMs = 0;
  }
  tokens(text) {
    let t = this.memo.get(text);
    if (t === undefined) {
      const t0 = performance.now();
      t = Uint32Array.from(encode(text, ENCODE_OPTS));
      this.encodeMs += performance.now() - t0;
      this.encodedChars += text.length;
      this.memo.set(text, t);
    }
    return t;
  }
  count(text) {
    return this.tokens(text).length;
  }
}

/**
 * Segments (token arrays) of one call.
 * @param {Tokenizer} tok
 * @param {{system:string, tools:object[]}} preamble
 * @param {object[]} providerMessages
 */
export function callSegments(tok, preamble, providerMessages) {
  const segs = [tok.tokens(systemSegment(preamble.system)), tok.tokens(toolsSegment(preamble.tools))];
  for (const m of providerMessages) segs.push(tok.tokens(serializeMessage(m)));
  return segs;
}

export function segmentsLength(segs) {
  let n = 0;
  for (const s of segs) n += s.length;
  return n;
}

/** Longest common prefix, in tokens, of two calls given as segment lists. */
export function lcpSegments(a, b) {
  if (!a || !b) return 0;
  let n = 0;
  const k = Math.min(a.length, b.length);
  for (let i = 0; i < k; i++) {
    const x = a[i];
    const y = b[i];
    if (x === y) {
      n += x.length;
      continue;
    }
    // Segments differ: continue token-wise across segment boundaries.
    return n + lcpFlat(a, i, b, i);
  }
  if (a.length === b.length) return n;
  return n; // one call is a segment-prefix of the other
}

// token-wise LCP of the concatenations a[i..] and b[j..]
function lcpFlat(a, i, b, j) {
  let n = 0;
  let ai = i, ao = 0, bi = j, bo = 0;
  while (ai < a.length && bi < b.length) {
    const x = a[ai];
    const y = b[bi];
    if (ao >= x.length) { ai++; ao = 0; continue; }
    if (bo >= y.length) { bi++; bo = 0; continue; }
    if (x[ao] !== y[bo]) return n;
    n++; ao++; bo++;
  }
  return n;
}

/** Plain LCP of two token arrays (reference implementation, used by tests). */
export function lcpArrays(a, b) {
  const k = Math.min(a.length, b.length);
  let i = 0;
  while (i < k && a[i] === b[i]) i++;
  return i;
}

export const CACHE_READ_FACTOR = 0.1;

/** cached/uncached/effective for one call given its total and the LCP with the previous call. */
export function callCost(total, cached, readFactor = CACHE_READ_FACTOR) {
  const uncached = total - cached;
  return { total, cached, uncached, effective: uncached + readFactor * cached };
}
