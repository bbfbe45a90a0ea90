// Variant sets for prototype-sweep.mjs (label, strategy file, options).
const v = (label, strategy, options = {}) => ({ label, strategy, options });
const I = "prototype-inline";

export const SETS = {
  spec: [
    v("strawman", "strawman"),
    v("masking", "masking"),
    v("spec", "prototype-spec"),
    v("spec/honour", "prototype-spec", { compaction: "honour" }),
    v("spec/honour/seq", "prototype-spec", { compaction: "honour", ids: "seq" }),
    v("spec/honour/seq/nopool", "prototype-spec", { compaction: "honour", ids: "seq", pool: "none" }),
  ],
  first: [
    v("strawman", "strawman"),
    v("inline/sliding", I, { window: "sliding" }),
    v("inline/default", I),
    v("inline/h10k", I, { high: 10000 }),
    v("inline/h40k", I, { high: 40000 }),
    v("inline/args-none", I, { args: "none" }),
    v("inline/args-all", I, { args: "all" }),
    v("inline/thinking-keep", I, { thinking: "keep" }),
    v("inline/nodedupe", I, { dedupe: "0" }),
    v("inline/honour", I, { compaction: "honour" }),
    v("inline/ignore", I, { compaction: "ignore" }),
    v("inline/pool-top", I, { pool: "top" }),
    v("inline/pool-append", I, { pool: "append" }),
    v("inline/long", I, { ids: "long" }),
    v("inline/prefix", I, { ids: "prefix" }),
  ],
  second: [
    v("inline/default", I),
    v("inline/callids", I, { callIds: "short" }),
    v("inline/min60", I, { minCollapse: 60 }),
    v("inline/args-all", I, { args: "all" }),
    v("inline/keep2", I, { keep: 2 }),
    v("inline/keep8", I, { keep: 8 }),
    v("inline/low4k", I, { low: 4000 }),
    v("inline/low8k", I, { low: 8000 }),
    v("inline/h15k", I, { high: 15000 }),
    v("inline/A", I, { callIds: "short", minCollapse: 60, args: "all" }),
    v("inline/A/h10k", I, { callIds: "short", minCollapse: 60, args: "all", high: 10000 }),
    v("inline/A/h15k", I, { callIds: "short", minCollapse: 60, args: "all", high: 15000 }),
    v("inline/A/h15k/low4k", I, { callIds: "short", minCollapse: 60, args: "all", high: 15000, low: 4000 }),
  ],
};
SETS.all = [...SETS.spec];
