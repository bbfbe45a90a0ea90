// `prototype-spec`: the spec's layout, as written (SSOT §4, memory-system-v0 §6.4, §19, §21):
//   [system][metadata pool: one line per known object][chat, every tool result
//    replaced by "toolcall_ref id=… tool=… status=…"][ACTIVE CONTENT at the tail]
// Active set = auto-activation window: the `perTurn` most recent tool outputs of
// each of the last `turns` turns (turn = a user message and the model calls until
// the next one; the current turn counts as one). A read's output is its file
// object (no double injection: one block per file, the newest read).
// The pool and the tail are rebuilt on every call.
//
// Options: ids=long|prefix|seq (default long: 64-hex identity_hash), perTurn=5,
// turns=3, compaction=ignore|honour (default ignore: the engine owns the chat,
// memory-system-v0 §22.7), pool=top|none, label.

import { Ids, Registry, Transcript, textMessage, shortArgs, Memo } from "./prototype-common.mjs";

export const SPEC_HEADER =
  "Context manager: every file and tool output is an object with an id. Tool results in the chat are refs " +
  "(toolcall_ref); the content of active objects is in the ACTIVE CONTENT block at the end. " +
  "Tools: activate(id), deactivate(id), pin(id), unpin(id), read(path).";

export default function create(options = {}) {
  const o = {
    ids: options.ids ?? "long",
    perTurn: Number(options.perTurn ?? 5),
    turns: Number(options.turns ?? 3),
    compaction: options.compaction ?? "ignore",
    pool: options.pool ?? "top",
  };
  const name = options.label ?? "prototype-spec";
  let reg, tr;
  const memo = new Memo();
  let maxActive = 0;
  let poolLines = 0;

  function ref(tc) {
    return `toolcall_ref id=${tc.id} tool=${tc.name} status=${tc.isError ? "error" : "ok"}`;
  }

  return {
    name,
    description: `spec layout: pool on top (${o.pool}), refs in chat, active content at tail; window ${o.perTurn}/turn × ${o.turns} turns; ids ${o.ids}; pi compaction ${o.compaction}`,
    async init(ctx) {
      reg = new Registry(new Ids(o.ids, ctx.sessionId ?? "s"));
      tr = new Transcript(o.compaction);
    },
    async transform(messages) {
      reg.ingest(messages);
      const chat = tr.update(messages);
      const cur = reg.turn;

      // auto-activation window
      const byTurn = new Map();
      for (const tc of reg.list) {
        if (!tc.result || tc.turn <= cur - o.turns) continue;
        const a = byTurn.get(tc.turn) ?? [];
        a.push(tc);
        byTurn.set(tc.turn, a);
      }
      const active = [];
      for (const a of byTurn.values()) active.push(...a.slice(-o.perTurn));
      active.sort((x, y) => x.seq - y.seq);
      // one block per file (its newest read), then toolcall blocks
      const blocks = [];
      const fileBlock = new Map();
      for (const tc of active) {
        if (tc.name === "read" && tc.file && !tc.isError) fileBlock.set(tc.file, tc);
      }
      for (const tc of active) {
        if (tc.name === "read" && tc.file && !tc.isError) {
          if (fileBlock.get(tc.file) !== tc) continue;
          blocks.push(`--- file id=${tc.file.id} path=${tc.file.path} ---\n${tc.resultText}`);
        } else blocks.push(`--- toolcall id=${tc.id} tool=${tc.name} status=${tc.isError ? "error" : "ok"} ---\n${tc.resultText}`);
      }
      maxActive = Math.max(maxActive, blocks.length);

      const out = [];
      if (o.pool === "top") {
        const lines = [];
        for (const f of reg.fileList) lines.push(`file id=${f.id} path=${f.path} chars=${f.chars}`);
        for (const tc of reg.list) if (tc.result) lines.push(`toolcall id=${tc.id} tool=${tc.name} status=${tc.isError ? "error" : "ok"} args=${shortArgs(tc)}`);
        poolLines = lines.length;
        out.push(textMessage(`${SPEC_HEADER}\n\nMETADATA POOL (${lines.length} objects)\n${lines.join("\n")}`));
      } else out.push(textMessage(SPEC_HEADER));
      for (const m of chat) {
        const tc = m.role === "toolResult" ? reg.byResult.get(m) : undefined;
        if (tc) out.push(memo.get(m, "ref", () => ({ ...m, content: [{ type: "text", text: ref(tc) }] })));
        else out.push(m);
      }
      if (blocks.length) out.push(textMessage(`ACTIVE CONTENT\n${blocks.join("\n")}`));
      return out;
    },
    stats() {
      return { maxActiveBlocks: maxActive, poolLinesAtEnd: poolLines };
    },
    async close() {},
  };
}
