'use strict';
// Human-readable renderings of stored documents and of a model call's messages.

const HASHES = ['identity_hash', 'file_hash', 'content_hash', 'metadata_hash', 'object_hash'];

/** A document: its fields one per line, then its content (text objects) or the rest as JSON. */
function printDoc(ctx, doc) {
  const lines = [];
  const rest = {};
  for (const [k, v] of Object.entries(doc)) {
    if (k === 'content') continue;
    if (v === null || ['string', 'number', 'boolean'].includes(typeof v)) lines.push(`${k.padEnd(14)} ${v}`);
    else if (k === 'source' && v && typeof v === 'object') lines.push(`${'source'.padEnd(14)} ${v.filesystemId ?? ''}:${v.path ?? ''}`);
    else rest[k] = v;
  }
  lines.sort((a, b) => rank(a) - rank(b));
  ctx.print(lines.join('\n') + '\n');
  if (Object.keys(rest).length) ctx.print(JSON.stringify(rest, null, 2) + '\n');
  if (typeof doc.content === 'string') ctx.print(`--- content (${doc.content.length} chars)\n${doc.content}${doc.content.endsWith('\n') ? '' : '\n'}`);
}

const rank = (line) => (line.startsWith('xt/id') ? 0 : line.startsWith('type') ? 1 : HASHES.some((h) => line.startsWith(h)) ? 3 : 2);

/** One part of a message's content as text. */
function part(p) {
  if (typeof p === 'string') return p;
  switch (p?.type) {
    case 'text':
      return p.text;
    case 'thinking':
      return `(thinking) ${p.thinking ?? ''}`;
    case 'toolCall':
      return `→ ${p.name}(${JSON.stringify(p.arguments ?? {})})  [id ${p.id}]`;
    case 'image':
      return `[image ${p.mimeType ?? ''}]`;
    default:
      return JSON.stringify(p);
  }
}

/** The messages of a model call, each under a header line. */
function renderMessages(messages) {
  return messages
    .map((m, i) => {
      const who = m.role === 'toolResult' ? `toolResult ${m.toolCallId ?? ''} (${m.toolName ?? ''})` : m.role;
      const body = typeof m.content === 'string' ? m.content : (m.content ?? []).map(part).join('\n');
      return `── [${i}] ${who}\n${body}\n`;
    })
    .join('\n');
}

module.exports = { printDoc, renderMessages };
