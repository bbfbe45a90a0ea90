// `prototype-inline`: content inline at the point of the event, collapsed in
// batched epochs. See docs/notes/layout-experiments.md for the experiments.
//
// Layout: [system][header (+ file pool, option)][chat]. A tool result shows its
// content where it happened while it is live; collapsed it is a one-line ref
// with the toolcall's id. Nothing is ever appended after the newest message.
//
// Epoch: when the live region (content that may still collapse, in chars/4)
// exceeds `high`, everything but the newest `keep` tool calls (or the newest
// that fit in `low` tokens) and anything pinned is collapsed in one batch. Between
// epochs the rendered context only grows at the end, so the prompt-cache prefix
// breaks only at epochs (and at pi compactions, which force one).
//
// Options (strings from --opt):
//   ids=seq|prefix|long        id scheme (seq: t12/f3; prefix: 6+ hex of identity_hash; long: 64 hex)
//   high=N                      epoch when live > N (chars/4 estimate), default 20000
//   keep=N                      tool calls kept live at an epoch, default 4
//   low=N                       instead of keep: keep the newest tool calls that fit in N (chars/4); 0 = off
//   minCollapse=N               results/args shorter than N chars never collapse (a ref would cost as much), default 200
//   args=none|editwrite|all     collapse tool-call arguments too: edit/write bodies, and (all) bash commands > bashMax chars
//   bashMax=N                   default 300
//   thinking=keep|drop          at an epoch, drop thinking blocks of assistant messages older than the kept region
//   dedupe=0|1                  a re-read with identical text of a still-live read becomes "[t9: identical to t4 above]"
//   compaction=honour|fold|ignore  pi compaction: use its summary (fold: plus a ref line to the folded turns) or keep the full chat
//   pool=none|top|append        file pool: none; rewritten on top at each epoch; or appended as a delta at each epoch
//   window=epoch|sliding        sliding = spec auto-collapse window (perTurn/turns) applied on every call, for comparison
//   perTurn=5 turns=3           the sliding window
//   ref=min|verbose|spec        ref text style
//   callIds=provider|short      short: the provider tool-call ids (toolu_…, ~12 tokens, twice per call) are
//                               replaced by the toolcall's own id in both the call and its result
//   squash=0|1                  at an epoch, turns before the current one whose tool calls are all collapsed are
//                               rendered as one assistant message: its texts + one digest line per tool call
//                               (tool_use/tool_result pairs removed). LLM-free bound on the chat skeleton.
//   foldAt=N                    engine-owned compaction, simulated (use with compaction=ignore: pi would not compact,
//                               its gauge sees our small contexts): right after an epoch, if the rendered messages
//                               still exceed N (chars/4), everything before the kept region (or before the current
//                               turn's user message, if later) is replaced by one summary (a stand-in text of
//                               summaryChars chars; a real one comes from the host's compaction).
//   foldKeep=N                  keep about N (chars/4) of the most recent chat after a fold (default 0: only the kept region)
//   summaryChars=N              default 4000 (pi's two recorded summaries: 4,291 and 3,649 chars)
//   pinPlace=inline|block       pinned content stays where it happened (inline), or moves at every epoch into
//                               one block right after the newest message at that epoch (its ref stays in place)
//   keepEdited=0|1              at an epoch also keep the newest read/write of every file a kept edit touches
//   pin=REGEX                   simulate pins: tool calls on paths matching REGEX are pinned (never collapse)
//   label=NAME

import { Ids, Registry, Transcript, Memo, textMessage, textOf, lineCount, est, shortArgs } from "./prototype-common.mjs";

export const INLINE_HEADER =
  "Context manager: files and tool outputs are objects with ids (t… tool calls, f… files). Older tool outputs and " +
  "edit/write bodies are collapsed to refs like [t12 · 340 lines]; activate(id) shows one again (pin(id) keeps it), " +
  "deactivate(id)/unpin(id) undo. read(path) reads a file.";

export default function create(options = {}) {
  const num = (k, d) => (options[k] === undefined ? d : Number(options[k]));
  const o = {
    ids: options.ids ?? "seq",
    high: num("high", 20000),
    keep: num("keep", 4),
    low: num("low", 0),
    minCollapse: num("minCollapse", 200),
    args: options.args ?? "editwrite",
    bashMax: num("bashMax", 300),
    thinking: options.thinking ?? "drop",
    dedupe: options.dedupe === undefined ? true : options.dedupe === "1" || options.dedupe === true,
    compaction: options.compaction ?? "fold",
    pool: options.pool ?? "none",
    window: options.window ?? "epoch",
    perTurn: num("perTurn", 5),
    turns: num("turns", 3),
    ref: options.ref ?? "min",
    pin: options.pin ? new RegExp(options.pin) : null,
    callIds: options.callIds ?? "provider",
    squash: options.squash === "1" || options.squash === true,
    pinPlace: options.pinPlace ?? "inline",
    keepEdited: options.keepEdited === "1" || options.keepEdited === true,
    foldAt: num("foldAt", 0),
    foldKeep: num("foldKeep", 0),
    summaryChars: num("summaryChars", 4000),
  };
  const name = options.label ?? "prototype-inline";
  const shortIds = o.callIds === "short";
  let reg, tr;
  const memo = new Memo();
  // state changed only at epochs (or per call with window=sliding)
  const collapsed = new Set(); // tc whose result is a ref
  const argsCollapsed = new Set(); // tc whose arguments are refs
  const noThinking = new Set(); // assistant messages rendered without thinking
  const dedupOf = new Map(); // tc -> earlier tc with the identical text
  let poolTop = null; // rendered pool text (pool=top)
  const poolAppends = []; // [anchor message, text] (pool=append)
  let poolListed = 0; // files listed so far (pool=append)
  let epochs = 0;
  let forced = 0;
  let prevChatHead = null;
  const squashed = new Set(); // turn numbers rendered squashed
  let foldAtMsg = null; // first transcript message kept after the last simulated fold
  let folds = 0;
  const foldCalls = [];
  let callNo = -1;

  // pin(file) keeps its newest read live; older reads of it collapse (no double injection)
  const pinned = (tc) => !!(o.pin && tc.name === "read" && tc.file && o.pin.test(tc.file.path) && tc.file.lastRead === tc);
  const collapsibleArgs = (tc) =>
    o.args !== "none" &&
    ((tc.name === "edit" || tc.name === "write") ? tc.argChars >= o.minCollapse : o.args === "all" && tc.name === "bash" && tc.argChars > o.bashMax);
  const collapsibleResult = (tc) => tc.result && tc.resultChars >= o.minCollapse;

  function liveEst() {
    let n = 0;
    for (const tc of reg.list) {
      if (pinned(tc)) continue;
      if (collapsibleResult(tc) && !collapsed.has(tc) && !dedupOf.has(tc)) n += est(tc.resultChars);
      if (collapsibleArgs(tc) && !argsCollapsed.has(tc)) n += est(tc.argChars);
    }
    return n;
  }

  function keptSet(list) {
    // newest tool calls kept live: `keep` by count, or what fits in `low`
    const kept = new Set();
    let budget = 0;
    for (let i = list.length - 1; i >= 0; i--) {
      const tc = list[i];
      if (o.low > 0) {
        const size = est(tc.resultChars) + (collapsibleArgs(tc) ? est(tc.argChars) : 0);
        if (kept.size && budget + size > o.low) break;
        budget += size;
      } else if (kept.size >= o.keep) break;
      kept.add(tc);
    }
    for (const tc of Array.from(kept)) if (dedupOf.has(tc)) kept.add(dedupOf.get(tc)); // a live "identical to" keeps its original
    if (o.keepEdited) {
      // files the kept tool calls edit: keep their newest read too (the agent is working on them)
      const files = new Set([...kept].filter((tc) => tc.name === "edit" && tc.file).map((tc) => tc.file));
      for (let i = list.length - 1; i >= 0 && files.size; i--) {
        const tc = list[i];
        if (tc.file && files.has(tc.file) && (tc.name === "read" || tc.name === "write")) {
          kept.add(tc);
          files.delete(tc.file);
        }
      }
    }
    return kept;
  }

  function epoch(chat) {
    const list = reg.list.filter((tc) => tc.result || tc.msg); // every tool call seen
    const kept = keptSet(list);
    let oldestKeptSeq = Infinity;
    for (const tc of kept) oldestKeptSeq = Math.min(oldestKeptSeq, tc.seq);
    for (const tc of list) {
      if (kept.has(tc) || pinned(tc)) continue;
      if (collapsibleResult(tc)) collapsed.add(tc);
      if (collapsibleArgs(tc)) argsCollapsed.add(tc);
    }
    if (o.thinking === "drop") {
      for (const m of chat) {
        if (m.role !== "assistant") continue;
        const first = (m.content ?? []).find((b) => b.type === "toolCall");
        const tc = first && reg.byBlock.get(first);
        if (tc && tc.seq >= oldestKeptSeq) break;
        if (!tc && m === chat[chat.length - 1]) break;
        noThinking.add(m);
      }
    }
    if (o.squash) {
      const cur = reg.turn;
      const open = new Set(); // turns with a live tool call
      for (const tc of list) if (!collapsed.has(tc) && collapsibleResult(tc)) open.add(tc.turn);
      for (const tc of list) if (kept.has(tc) || pinned(tc)) open.add(tc.turn);
      for (const m of chat) {
        const t = reg.msgTurn.get(m);
        if (t !== undefined && t < cur && !open.has(t)) squashed.add(t);
      }
    }
    if (o.foldAt > 0) {
      // fold everything before the oldest kept tool call's assistant message, or before the current
      // turn's user message if that is later; then move the cut back so that about foldKeep (chars/4)
      // of recent chat stays, at a user or assistant message
      let cut = chat.length;
      for (let i = 0; i < chat.length; i++) {
        const m = chat[i];
        const first = m.role === "assistant" && (m.content ?? []).find((b) => b.type === "toolCall");
        if (first && kept.has(reg.byBlock.get(first))) {
          cut = i;
          break;
        }
      }
      let userIdx = -1;
      for (let i = chat.length - 1; i >= 0; i--)
        if (chat[i].role === "user") {
          userIdx = i;
          break;
        }
      if (userIdx > cut) cut = userIdx;
      if (o.foldKeep > 0) {
        let acc = 0;
        let i = cut;
        while (i > 0 && acc < o.foldKeep * 4) {
          i--;
          acc += msgChars(chat[i]);
        }
        while (i > 0 && chat[i].role === "toolResult") i--;
        if (i < cut) cut = i;
      }
      foldUser = userIdx >= 0 && userIdx < cut ? chat[userIdx] : null;
      pendingFold = cut;
    }
    renderPool(chat);
    if (o.pin && o.pinPlace === "block") {
      pinAnchor = chat[chat.length - 1];
      pinnedUpTo = reg.list.length - 1;
    }
    epochs++;
  }
  let pinAnchor = null;
  let pinnedUpTo = -1;
  let pendingFold = -1;
  let foldUser = null; // the current turn's user message, kept after the summary when the fold cuts mid-turn
  // chars of one chat message as rendered now (refs ~40 chars)
  function msgChars(m) {
    if (m.role === "toolResult") {
      const tc = reg.byResult.get(m);
      return tc && (collapsed.has(tc) || dedupOf.has(tc)) ? 40 : textOf(m.content).length;
    }
    if (m.role === "assistant") {
      let n = 0;
      for (const b of m.content ?? []) {
        if (b.type === "text") n += b.text?.length ?? 0;
        else if (b.type === "thinking" && !noThinking.has(m)) n += b.thinking?.length ?? 0;
        else if (b.type === "toolCall") {
          const tc = reg.byBlock.get(b);
          n += 40 + (tc && argsCollapsed.has(tc) ? 60 : JSON.stringify(b.arguments ?? {}).length);
        }
      }
      return n;
    }
    return m.role === "compactionSummary" ? m.summary.length : textOf(m.content).length;
  }
  const FILLER = "The user asked for a refactoring of the coding agent; the assistant read the relevant modules, edited several files, ran the checks and recorded progress. ";
  const summaryText = () => {
    let t = "";
    while (t.length < o.summaryChars) t += FILLER;
    return `[Earlier turns are folded into this summary; their tool calls and files keep their ids (activate to view).]\n${t.slice(0, o.summaryChars)}`;
  };
  let foldMsg = null;

  function slidingWindow() {
    const cur = reg.turn;
    const byTurn = new Map();
    for (const tc of reg.list) {
      const a = byTurn.get(tc.turn) ?? [];
      a.push(tc);
      byTurn.set(tc.turn, a);
    }
    const live = new Set();
    for (const [t, a] of byTurn) if (t > cur - o.turns) for (const tc of a.slice(-o.perTurn)) live.add(tc);
    collapsed.clear();
    argsCollapsed.clear();
    for (const tc of reg.list) {
      if (live.has(tc) || pinned(tc)) continue;
      if (collapsibleResult(tc)) collapsed.add(tc);
      if (collapsibleArgs(tc)) argsCollapsed.add(tc);
    }
  }

  const poolLine = (f) => `${f.id} ${f.path} (${f.chars} chars)`;
  function renderPool(chat) {
    if (o.pool === "top") {
      poolTop = reg.fileList.length ? `FILES (${reg.fileList.length})\n${reg.fileList.map(poolLine).join("\n")}` : null;
    } else if (o.pool === "append") {
      const fresh = reg.fileList.slice(poolListed);
      poolListed = reg.fileList.length;
      if (fresh.length) poolAppends.push([chat[chat.length - 1], `FILES +${fresh.length}\n${fresh.map(poolLine).join("\n")}`]);
    }
  }

  // ---- text formats ----
  function resultRef(tc) {
    const lines = lineCount(tc.resultText);
    if (o.ref === "spec") return `toolcall_ref id=${tc.id} tool=${tc.name} status=${tc.isError ? "error" : "ok"}`;
    if (o.ref === "verbose") return `[collapsed ${tc.name} result ${tc.id}: ${shortArgs(tc)} — ${lines} lines; activate("${tc.id}") to view]`;
    return `[${tc.id} · ${lines} lines]`;
  }
  const argRef = (tc, s) => (o.ref === "verbose" ? `[collapsed ${tc.id}: ${lineCount(s)} lines; activate("${tc.id}")]` : `[${tc.id} · ${lineCount(s)} lines]`);
  function collapseArgs(tc) {
    const a = { ...tc.args };
    if (tc.name === "edit") {
      if (typeof a.oldText === "string") a.oldText = argRef(tc, a.oldText);
      if (typeof a.newText === "string") a.newText = argRef(tc, a.newText);
    } else if (tc.name === "write") {
      if (typeof a.content === "string") a.content = argRef(tc, a.content);
    } else if (tc.name === "bash") {
      const first = a.command.split("\n")[0];
      a.command = `${first.length > 80 ? `${first.slice(0, 79)}…` : first} … ${argRef(tc, a.command)}`;
    }
    return a;
  }

  function renderAssistant(m) {
    const blocks = m.content ?? [];
    const dropTh = noThinking.has(m);
    let sig = dropTh ? "T" : "";
    for (const b of blocks) if (b.type === "toolCall") sig += argsCollapsed.has(reg.byBlock.get(b)) ? "c" : "e";
    if (!sig.includes("c") && !dropTh && !shortIds) return m;
    return memo.get(m, sig, () => ({
      ...m,
      content: blocks
        .filter((b) => !(dropTh && b.type === "thinking"))
        .map((b) => {
          if (b.type !== "toolCall") return b;
          const tc = reg.byBlock.get(b);
          const x = argsCollapsed.has(tc) ? { ...b, arguments: collapseArgs(tc) } : b;
          return shortIds ? { ...x, id: tc.id } : x;
        }),
    }));
  }

  function renderResult(m) {
    const tc = reg.byResult.get(m);
    if (!tc) return m;
    const idf = shortIds ? { toolCallId: tc.id } : {};
    if (collapsed.has(tc) || (o.pinPlace === "block" && pinned(tc) && pinAnchor && tc.seq <= pinnedUpTo)) return memo.get(m, "c", () => ({ ...m, ...idf, content: [{ type: "text", text: resultRef(tc) }] }));
    const d = dedupOf.get(tc);
    if (d) return memo.get(m, `d${d.id}`, () => ({ ...m, ...idf, content: [{ type: "text", text: `[${tc.id}: identical to ${d.id} above]` }] }));
    return shortIds ? memo.get(m, "e", () => ({ ...m, ...idf })) : m;
  }

  // pinned content whose place was folded away (pi compaction or engine fold) is re-rendered right after the summary
  function foldedPins(view) {
    if (!o.pin) return [];
    const present = new Set(view);
    const pins = reg.list.filter((tc) => pinned(tc) && tc.result && !present.has(tc.result) && !(o.pinPlace === "block" && tc.seq <= pinnedUpTo));
    if (!pins.length) return [];
    const sig = `fpins:${pins.map((tc) => tc.id).join(",")}`;
    return [memo.get(view[0], sig, () => textMessage(`PINNED\n${pins.map((tc) => `--- file id=${tc.file.id} path=${tc.file.path} (${tc.id}) ---\n${tc.resultText}`).join("\n")}`))];
  }

  const squashMemo = new Map();
  function renderSquashed(sq) {
    const key = sq.msgs;
    const sig = `${sq.turn}:${sq.msgs.length}`;
    let x = squashMemo.get(sig);
    if (x) return x;
    const lines = [];
    let last = null;
    for (const m of sq.msgs) {
      if (m.role !== "assistant") continue;
      if (m.stopReason === "aborted" || m.stopReason === "error") continue;
      last = m;
      for (const b of m.content ?? []) {
        if (b.type === "text" && b.text?.trim()) lines.push(b.text.trim());
        else if (b.type === "toolCall") {
          const tc = reg.byBlock.get(b);
          if (!tc) continue;
          const res = tc.result ? ` · ${lineCount(tc.resultText)} lines${tc.isError ? " · error" : ""}` : "";
          lines.push(`(${tc.id} ${tc.name} ${shortArgs(tc, 60)}${res})`);
        }
      }
    }
    x = { ...last, role: "assistant", content: [{ type: "text", text: lines.join("\n") }], stopReason: "stop" };
    squashMemo.set(sig, x);
    void key;
    return x;
  }

  function detectDedupe(fresh) {
    if (!o.dedupe) return;
    for (const m of fresh) {
      const tc = m.role === "toolResult" ? reg.byResult.get(m) : undefined;
      if (!tc || tc.name !== "read" || tc.isError || !tc.file) continue;
      // the newest earlier read of the same file with the same args and identical text, still live
      const key = JSON.stringify(tc.args);
      for (let i = tc.seq - 1; i >= 0; i--) {
        const p = reg.list[i];
        if (p.file !== tc.file) continue;
        if (p.name !== "read") break; // an edit/write in between: different version
        if (JSON.stringify(p.args) !== key) continue;
        if (p.resultText === tc.resultText && !collapsed.has(p) && !dedupOf.has(p)) dedupOf.set(tc, p);
        break;
      }
    }
  }

  let foldKeptUser = null;
  const viewOf = (chat) => (foldAtMsg ? [foldMsg, ...(foldKeptUser ? [foldKeptUser] : []), ...chat.slice(chat.indexOf(foldAtMsg))] : chat);
  function render(chat) {
    const view = viewOf(chat);

    const out = [textMessage(poolTop ? `${INLINE_HEADER}\n\n${poolTop}` : INLINE_HEADER)];
    const appendAt = new Map(poolAppends);
    let sq = null; // squashed turn being accumulated
    const flushSq = () => {
      if (sq) out.push(renderSquashed(sq));
      sq = null;
    };
    for (const m of view) {
      const t = reg.msgTurn.get(m);
      if (squashed.size && squashed.has(t) && (m.role === "assistant" || m.role === "toolResult")) {
        if (!sq || sq.turn !== t) {
          flushSq();
          sq = { turn: t, msgs: [] };
        }
        sq.msgs.push(m);
        continue;
      }
      flushSq();
      if (m.role === "compactionSummary" && o.compaction === "fold") {
        out.push(
          memo.get(m, "fold", () => ({
            ...m,
            summary: `[Earlier turns are folded into this summary; their tool calls and files keep their ids (activate to view).]\n${m.summary}`,
          })),
        );
        out.push(...foldedPins(view));
      } else if (m.role === "toolResult") out.push(renderResult(m));
      else if (m.role === "assistant") out.push(renderAssistant(m));
      else {
        out.push(m);
        if (m === foldMsg) out.push(...foldedPins(view));
      }
      const a = appendAt.get(m);
      if (a) out.push(memo.get(m, a, () => textMessage(a)));
      if (m === pinAnchor) {
        const pins = reg.list.filter((tc) => pinned(tc) && tc.result && tc.seq <= pinnedUpTo);
        const sig = `pins:${pins.map((tc) => tc.id).join(",")}`;
        if (pins.length) out.push(memo.get(m, sig, () => textMessage(`PINNED\n${pins.map((tc) => `--- file id=${tc.file.id} path=${tc.file.path} (${tc.id}) ---\n${tc.resultText}`).join("\n")}`)));
      }
    }
    flushSq();
    return out;
  }

  // content chars that are live (expanded collapsible results and args, pinned content): not what a fold removes
  function liveChars(chat) {
    let n = 0;
    const view = viewOf(chat);
    const present = new Set(view);
    for (const m of view) {
      if (m.role === "toolResult") {
        const tc = reg.byResult.get(m);
        if (tc && collapsibleResult(tc) && !collapsed.has(tc) && !dedupOf.has(tc)) n += tc.resultChars;
      } else if (m.role === "assistant") {
        for (const b of m.content ?? []) {
          const tc = b.type === "toolCall" && reg.byBlock.get(b);
          if (tc && collapsibleArgs(tc) && !argsCollapsed.has(tc)) n += tc.argChars;
        }
      }
    }
    // pinned content rendered in blocks (block placement, or re-rendered after a fold)
    for (const tc of reg.list) if (pinned(tc) && tc.result && (!present.has(tc.result) || (o.pinPlace === "block" && tc.seq <= pinnedUpTo))) n += tc.resultChars;
    return n;
  }

  function renderedChars(msgs) {
    let n = 0;
    for (const m of msgs) {
      if (m.role === "assistant")
        for (const b of m.content ?? []) n += b.type === "text" ? b.text.length : b.type === "thinking" ? (b.thinking ?? "").length : b.type === "toolCall" ? JSON.stringify(b.arguments ?? {}).length + 40 : 0;
      else if (m.role === "compactionSummary") n += m.summary.length;
      else n += textOf(m.content).length;
    }
    return n;
  }

  return {
    name,
    description: `inline content, ${o.window === "sliding" ? `sliding window ${o.perTurn}/${o.turns}` : `epochs at live > ${o.high} (chars/4), keep ${o.low ? `≤${o.low} tokens` : o.keep}`}; args ${o.args}; thinking ${o.thinking}; dedupe ${o.dedupe}; pi compaction ${o.compaction}; pool ${o.pool}; ids ${o.ids}; ref ${o.ref}`,
    async init(ctx) {
      reg = new Registry(new Ids(o.ids, ctx.sessionId ?? "s"));
      tr = new Transcript(o.compaction === "ignore" ? "ignore" : "honour");
    },
    async transform(messages, callIndex) {
      callNo = callIndex;
      const fresh = reg.ingest(messages);
      detectDedupe(fresh);
      const chat = tr.update(messages);
      let compacted = false;
      if (chat[0] !== prevChatHead && chat[0]?.role === "compactionSummary") compacted = true;
      prevChatHead = chat[0];

      if (o.window === "sliding") slidingWindow();
      else if (compacted) {
        // the prefix breaks here anyway: a free epoch (and the appended pool restarts)
        poolListed = 0;
        epoch(chat);
        forced++;
      } else if (liveEst() > o.high) epoch(chat);
      if (o.pool !== "none" && o.window === "sliding") renderPool(chat);

      let out = render(chat);
      if (pendingFold >= 0) {
        // engine-owned fold: right after an epoch, if the rendered context is still over budget
        if (est(renderedChars(out) - liveChars(chat)) > o.foldAt && pendingFold < chat.length && chat[pendingFold] !== foldAtMsg) {
          foldAtMsg = chat[pendingFold];
          foldKeptUser = foldUser;
          foldMsg = textMessage(`${summaryText()} (fold ${++folds})`);
          foldCalls.push(callNo);
          poolListed = 0; // the pool is listed again after the summary
          renderPool(chat);
          out = render(chat);
        }
        pendingFold = -1;
      }
      return out;
    },
    /** What activate(id) would show: a toolcall's arguments and full output, or a file's newest known text. */
    lookup(id) {
      const tc = reg.list.find((t) => t.id === id);
      if (tc) return { id, kind: "toolcall", tool: tc.name, args: tc.args, content: tc.resultText, isError: tc.isError };
      const f = reg.fileList.find((x) => x.id === id);
      if (f) return { id, kind: "file", path: f.path, content: f.lastText };
      return null;
    },
    stats() {
      return {
        epochs,
        forcedByCompaction: forced,
        collapsedResults: collapsed.size,
        collapsedArgs: argsCollapsed.size,
        dedupes: dedupOf.size,
        ...(o.squash ? { squashedTurns: squashed.size } : {}),
        ...(o.foldAt ? { folds: `${folds} (calls ${foldCalls.join(" ")})` } : {}),
      };
    },
    async close() {},
  };
}
