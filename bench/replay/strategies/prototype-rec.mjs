// `prototype-rec`: the recommended layout (prototype-inline with the REC options of
// prototype-variants.mjs), runnable by name in the harness:
//   node bench/replay/replay.mjs SESSION --strategies raw,masking,strawman,prototype-rec
// Any --opt prototype-rec.KEY=VALUE overrides one REC option.
import createInline from "./prototype-inline.mjs";
import { REC } from "./prototype-variants.mjs";

export default function create(options = {}) {
  return createInline({ ...REC, label: "prototype-rec", ...options });
}
