// `masking`: observation masking, the published baseline (e.g. Lindenbauer et
// al., "The Complexity Trap", 2025): keep the newest N tool results verbatim and
// replace the content of every older tool result with a one-line placeholder.
// Recomputed on every call, so the masking frontier moves with each new tool
// result and the prompt-cache prefix breaks just before it on every call.
//
// Options: keep (default 10), placeholder (default "[output omitted]").

export default function createMasking(options = {}) {
  const keep = Number(options.keep ?? 10);
  const placeholder = String(options.placeholder ?? "[output omitted]");
  // One masked object per original message, so identical inputs stay identical.
  const masked = new WeakMap();
  const maskOf = (m) => {
    let x = masked.get(m);
    if (!x) {
      x = { ...m, content: [{ type: "text", text: placeholder }] };
      masked.set(m, x);
    }
    return x;
  };
  return {
    name: "masking",
    description: `observation masking: newest ${keep} tool results kept, older ones -> "${placeholder}"`,
    async init() {},
    async transform(messages) {
      let seen = 0;
      const out = Array.from({ length: messages.length });
      for (let i = messages.length - 1; i >= 0; i--) {
        const m = messages[i];
        if (m.role === "toolResult") {
          seen++;
          out[i] = seen > keep ? maskOf(m) : m;
        } else out[i] = m;
      }
      return out;
    },
    async close() {},
  };
}
