// Shared by the Node benches: the addon facade, percentiles, machine header.
// The addon is the repo root package (index.js); a release build can be
// supplied with NAPI_RS_NATIVE_LIBRARY_PATH=/path/to/self-context-manager.node
// (napi-rs's loader honours it), so a debug build in the repo root is not
// what gets measured.

import { createRequire } from "node:module";
import { execSync } from "node:child_process";
import { readFileSync } from "node:fs";
import os from "node:os";

const require = createRequire(import.meta.url);
export const scm = require("../../index.js");
/** The facade's key of its native handle (benches read what the addon answers). */
export const NATIVE = require("../../lib/native.js").NATIVE;

export function stats(samples) {
  const v = [...samples].sort((a, b) => a - b);
  const rank = (p) => v[Math.min(v.length, Math.max(1, Math.ceil((p / 100) * v.length))) - 1];
  return {
    n: v.length,
    p50: rank(50),
    p95: rank(95),
    p99: rank(99),
    max: v[v.length - 1],
    mean: v.reduce((a, b) => a + b, 0) / v.length,
  };
}

export const f3 = (x) => x.toFixed(3);
export const f2 = (x) => x.toFixed(2);
export const f1 = (x) => x.toFixed(1);
export const int = (x) => Math.round(x).toLocaleString("en-US");

export function loadavg() {
  return os.loadavg().map((x) => x.toFixed(2)).join(" ");
}

export function header(name, argv) {
  const cpu = os.cpus()[0]?.model ?? "?";
  const mem = `${(os.totalmem() / 2 ** 30).toFixed(1)} GiB`;
  const addon = process.env.NAPI_RS_NATIVE_LIBRARY_PATH ?? "repo root build";
  console.log(`# bench ${name}`);
  console.log(`- date: ${new Date().toISOString()} · machine: ${cpu}, nproc ${os.cpus().length}, RAM ${mem} · loadavg at start: ${loadavg()} · node ${process.version}`);
  console.log(`- command: node bench/node/${name}.mjs ${argv.join(" ")} · addon: ${addon}`);
}

export function unique(prefix) {
  return `${prefix}-${process.pid}-${process.hrtime.bigint()}`;
}

export function rssKiB() {
  const s = readFileSync("/proc/self/status", "utf8");
  const get = (k) => Number(s.match(new RegExp(`^${k}:\\s+(\\d+)`, "m"))?.[1] ?? 0);
  return { rss: get("VmRSS"), hwm: get("VmHWM") };
}

/** Deterministic printable text (same generator as the Rust benches). */
export function textBytes(len, seed) {
  let x = (BigInt(seed) * 0x9e3779b97f4a7c15n) & 0xffffffffffffffffn;
  x |= 1n;
  const mask = 0xffffffffffffffffn;
  let out = "";
  let col = 0;
  while (out.length < len) {
    x ^= (x << 13n) & mask;
    x ^= x >> 7n;
    x ^= (x << 17n) & mask;
    const c = Number(x % 32n);
    const b = c <= 25 ? String.fromCharCode(97 + c) : c <= 29 ? " " : "_";
    col++;
    if (col === 80) {
      out += "\n";
      col = 0;
    } else out += b;
  }
  return out.slice(0, len);
}

export function gitRev() {
  try {
    return execSync("git rev-parse --short HEAD", { encoding: "utf8" }).trim();
  } catch {
    return "?";
  }
}

/** Records what the addon answers to transformContext (the delta's `append`, `keep`) without changing it. */
export function spyDelta(cm) {
  const h = cm[NATIVE];
  // nativeMs: the synchronous tail call's own time (0 for the async forms).
  const seen = { append: "[]", keep: 0, nativeMs: 0 };
  const note = (d, nativeMs = 0) => {
    if (d) Object.assign(seen, { append: d.append, keep: d.keep, nativeMs });
    return d;
  };
  for (const name of ["transformContext", "transformContextTail", "transformContextWithStandIns"]) {
    const orig = h[name].bind(h);
    h[name] = async (...a) => note(await orig(...a));
  }
  const now = h.transformContextTailNow.bind(h);
  h.transformContextTailNow = (...a) => {
    const t0 = performance.now();
    const d = now(...a);
    return note(d, performance.now() - t0);
  };
  return seen;
}
