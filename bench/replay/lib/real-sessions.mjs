// The real pi sessions the replay tests run on: the workplace's recorded
// session (../shared/workloads) and the one kept in bench/replay/workloads.
// Each with its test name and the skip reason when its file is absent.
import { existsSync } from "node:fs";
import { basename } from "node:path";

export const REAL_SESSIONS = ["/work/shared/workloads/pi-session-refactor.jsonl", new URL("../workloads/pi-session-themes.jsonl", import.meta.url).pathname].map((file) => ({
  file,
  name: basename(file),
  skip: !existsSync(file) && `${file} not present`,
}));
