// Soak: agents on two XTDB nodes that share one PostgreSQL log (issue 14,
// part 3). Not part of the test command.
//
//   node bench/soak/soak.mjs [--minutes 30] [--agents 4] [--think-ms 250]
//                            [--outage-s 15] [--nodes url1,url2] [--keep]
//
// Starts PostgreSQL + 2 nodes with `bash xtdb/cluster.sh start 2 --fresh`
// (unless --nodes names running ones; the fault steps then still use
// cluster.sh, so they must be its nodes), opens `--agents` ContextManagers
// (cache layout, half on each node) in one shared workspace, and replays
// synthetic sessions: each turn an agent reads or edits one of its own
// files or a shared one (pi's tool call + result appended to its
// transcript), then calls transformContext. Faults, at fixed fractions of
// the run: PostgreSQL stopped for --outage-s at 20 % and at 70 % (the store
// unreachable from both nodes), node 2 SIGKILLed at 45 % and restarted.
//
// At the end (store up, every session flushed and closed): versions
// expected vs stored. Expected = every content an agent wrote to one of its
// own files and then reported with observeEdit (nobody else writes those);
// stored = that file's history on node 1 and node 2 (both awaited to the
// last tx). Edits reported while the store was unreachable are counted
// apart (they are kept by the session's outage queue). Shared files, which
// every agent edits: the latest version is the disk's and no older content
// follows a newer one. Also p50/p99/max per call kind and memory over time
// (this process's RSS, each node JVM's and PostgreSQL's).
//
// The addon is the repo root build; a release build can be supplied with
// NAPI_RS_NATIVE_LIBRARY_PATH (see bench/node/common.mjs).

import { execFile, execFileSync } from "node:child_process";
import { promisify } from "node:util";
import { mkdtempSync, readFileSync, writeFileSync, mkdirSync, rmSync, existsSync, readdirSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { scm, stats, f2, loadavg, rssKiB } from "../node/common.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const CLUSTER = path.join(ROOT, "xtdb/cluster.sh");
const STATE = process.env.XTDB_CLUSTER_DIR ?? path.join(ROOT, "xtdb/cluster");

function args(argv) {
  const o = { minutes: 30, agents: 4, thinkMs: 250, outageS: 15, nodes: null, keep: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = () => argv[++i];
    if (a === "--minutes") o.minutes = Number(v());
    else if (a === "--agents") o.agents = Number(v());
    else if (a === "--think-ms") o.thinkMs = Number(v());
    else if (a === "--outage-s") o.outageS = Number(v());
    else if (a === "--nodes") o.nodes = v().split(",");
    else if (a === "--keep") o.keep = true;
    else throw new Error(`unknown argument ${a}`);
  }
  if (!(o.minutes > 0) || !(o.agents >= 2)) throw new Error("--minutes > 0 and --agents >= 2");
  return o;
}

const opts = args(process.argv.slice(2));
const cluster = (...a) => execFileSync("bash", [CLUSTER, ...a], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
// Faults run while the agents do: never block the event loop on them.
const clusterAsync = async (...a) => (await promisify(execFile)("bash", [CLUSTER, ...a], { encoding: "utf8" })).stdout;
const now = () => performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (msg) => console.log(`[${((now() - t0) / 1000).toFixed(0).padStart(5)} s] ${msg}`);

// ---- memory of this process, the node JVMs and PostgreSQL ----
function pidRssKiB(pid) {
  try {
    const s = readFileSync(`/proc/${pid}/status`, "utf8");
    return Number(s.match(/^VmRSS:\s+(\d+)/m)?.[1] ?? 0);
  } catch {
    return 0;
  }
}
function nodeRss(i) {
  const f = path.join(STATE, `node-${i}`, "node.pid");
  return existsSync(f) ? pidRssKiB(readFileSync(f, "utf8").trim()) : 0;
}
function pgRss() {
  // The postmaster and its backends (children of the pid in postmaster.pid).
  const f = path.join(STATE, "pg/data/postmaster.pid");
  if (!existsSync(f)) return 0;
  let main;
  try {
    main = readFileSync(f, "utf8").split("\n")[0].trim();
  } catch {
    return 0;
  }
  let total = pidRssKiB(main);
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const st = readFileSync(`/proc/${d}/stat`, "utf8");
      const ppid = st.slice(st.lastIndexOf(")") + 2).split(" ")[1];
      if (ppid === main) total += pidRssKiB(d);
    } catch {
      /* gone */
    }
  }
  return total;
}

// ---- set-up ----
let t0 = now();
let urls = opts.nodes;
let startedCluster = false;
if (!urls) {
  log("starting PostgreSQL + 2 XTDB nodes (xtdb/cluster.sh start 2 --fresh)");
  urls = cluster("start", "2", "--fresh").trim().split("\n");
  startedCluster = true;
}
log(`nodes: ${urls.join(" ")}`);
const ws = mkdtempSync(path.join(os.tmpdir(), "scm-soak-"));
const OWN_FILES = 4;
const SHARED = ["shared/config.json", "shared/notes.md", "shared/lib.ts"];
mkdirSync(path.join(ws, "shared"), { recursive: true });
let sharedSeq = 0;
const sharedContent = (rel, who) => `${String(++sharedSeq).padStart(8, "0")} ${rel} by ${who}\n${"x".repeat(400)}\n`;
for (const rel of SHARED) writeFileSync(path.join(ws, rel), sharedContent(rel, "setup"));

const agents = [];
for (let a = 0; a < opts.agents; a++) {
  const node = a % 2;
  const dir = path.join(ws, `agent${a}`);
  mkdirSync(dir, { recursive: true });
  const own = [];
  for (let f = 0; f < OWN_FILES; f++) {
    const rel = `agent${a}/file${f}.py`;
    writeFileSync(path.join(ws, rel), `# ${rel} v0\n`);
    own.push(rel);
  }
  const cm = await scm.ContextManager.open({
    sessionId: `soak-${process.pid}-${a}`,
    store: { kind: "xtdb", url: urls[node], timeoutMs: 5000 },
    workspaceRoot: ws,
    defaultFilesystemId: `soak-fs-${process.pid}`,
    layout: "cache",
  });
  agents.push({ a, node, cm, own, versions: new Map(own.map((r) => [r, 0])), expected: [], messages: [], ts: 0, calls: 0, errors: 0, outageEdits: 0 });
}
log(`${agents.length} agents open (${agents.filter((g) => g.node === 0).length} on node 1, ${agents.filter((g) => g.node === 1).length} on node 2); workspace ${ws}`);

// ---- the replay ----
const lat = { read: [], edit: [], transform: [] };
const memory = [];
const durationMs = opts.minutes * 60_000;
let stopping = false;
let storeDown = false;
/** Shared-file contents (their number) an agent reported while the store was away. */
const offlineShared = new Set();

function sampleMemory() {
  const m = { t: (now() - t0) / 1000, self: rssKiB().rss, node1: nodeRss(1), node2: nodeRss(2), pg: pgRss() };
  memory.push(m);
  return m;
}

const rand = (n) => Math.floor(Math.random() * n);

async function turn(g) {
  const callId = `c${g.calls++}`;
  const r = Math.random();
  let tool, rel, result;
  if (r < 0.35) {
    // Edit one of its own files: a new version only this agent writes.
    rel = g.own[rand(g.own.length)];
    const v = g.versions.get(rel) + 1;
    g.versions.set(rel, v);
    const text = `# ${rel} v${v}\n${"y = 1\n".repeat(20 + (v % 50))}`;
    writeFileSync(path.join(ws, rel), text);
    const t = now();
    result = await g.cm.observeEdit(rel);
    lat.edit.push(now() - t);
    tool = "edit";
    if (result.ok) {
      // Reported while the store was away (PostgreSQL stopped, or this agent's node down).
      const offline = storeDown || / store unreachable/.test(result.message) || g.cm.lastError != null;
      g.expected.push({ rel, text, offline });
      if (offline) g.outageEdits++;
    } else g.errors++;
  } else if (r < 0.5) {
    rel = SHARED[rand(SHARED.length)];
    const text = sharedContent(rel, `agent${g.a}`);
    writeFileSync(path.join(ws, rel), text);
    const t = now();
    result = await g.cm.observeEdit(rel);
    lat.edit.push(now() - t);
    tool = "edit";
    if (!result.ok) g.errors++;
    else if (storeDown || / store unreachable/.test(result.message) || g.cm.lastError != null) offlineShared.add(text.slice(0, 8));
  } else {
    rel = Math.random() < 0.5 ? g.own[rand(g.own.length)] : SHARED[rand(SHARED.length)];
    const t = now();
    result = await g.cm.read(rel);
    lat.read.push(now() - t);
    tool = "read";
    if (!result.ok) g.errors++;
  }
  const ts = 1_700_000_000_000 + ++g.ts;
  g.messages.push(
    { role: "user", content: `turn ${callId}: look at ${rel}`, timestamp: ts },
    {
      role: "assistant",
      content: [{ type: "toolCall", id: callId, name: tool, arguments: { path: rel } }],
      api: "faux", provider: "faux", model: "faux-1", usage: { input: 10, output: 5 }, stopReason: "toolUse", timestamp: ts,
    },
    { role: "toolResult", toolCallId: callId, toolName: tool, content: [{ type: "text", text: tool === "read" ? readFileSync(path.join(ws, rel), "utf8") : "ok" }], isError: false, timestamp: ts },
  );
  const t = now();
  // A new array each call, as pi passes it.
  await g.cm.transformContext([...g.messages]);
  lat.transform.push(now() - t);
}

async function agentLoop(g) {
  while (!stopping) {
    try {
      await turn(g);
    } catch (e) {
      g.errors++;
      if (g.errors < 5) log(`agent ${g.a}: ${e.code ?? ""} ${e.message}`);
    }
    await sleep(opts.thinkMs);
  }
}

async function faults() {
  const at = (frac) => sleep(Math.max(0, t0 + durationMs * frac - now()));
  const outage = async (n) => {
    log(`fault: PostgreSQL stopped (${n}) for ${opts.outageS} s`);
    storeDown = true;
    await clusterAsync("pg-stop");
    await sleep(opts.outageS * 1000);
    await clusterAsync("pg-start");
    storeDown = false;
    log(`fault: PostgreSQL back (${n})`);
  };
  await at(0.2);
  if (stopping) return;
  await outage(1);
  await at(0.45);
  if (stopping) return;
  log("fault: node 2 SIGKILLed");
  await clusterAsync("kill", "2");
  await sleep(5000);
  const t = now();
  await clusterAsync("restart", "2");
  log(`fault: node 2 restarted and caught up in ${((now() - t) / 1000).toFixed(1)} s`);
  await at(0.7);
  if (stopping) return;
  await outage(2);
}

t0 = now();
sampleMemory();
const memTimer = setInterval(sampleMemory, Math.max(5000, durationMs / 30));
const loops = agents.map(agentLoop);
const faultRun = faults();
await sleep(durationMs);
stopping = true;
await Promise.all(loops);
await faultRun;
clearInterval(memTimer);
sampleMemory();
log(`replay done: ${agents.reduce((s, g) => s + g.calls, 0)} turns`);

// ---- drain and verify ----
// Object ids now: a closed manager no longer resolves paths.
const objectId = new Map();
for (const rel of [...SHARED, ...agents.flatMap((g) => g.own)]) objectId.set(rel, agents[0].cm.resolve(rel).objectId);
for (const g of agents) {
  // The store is up again: queued writes land (retry until they do, bounded).
  for (let i = 0; i < 20; i++) {
    try {
      await g.cm.flush();
      if (!g.cm.stats().hasPending) break;
    } catch (e) {
      log(`agent ${g.a}: flush: ${e.code} ${e.message}`);
    }
    // Bounded retry of the drain; not a consistency wait (flush awaits its tx).
    await sleep(1000);
  }
  await g.cm.close();
}
const s1 = await scm.openStore({ kind: "xtdb", url: urls[0], timeoutMs: 30000 });
const s2 = await scm.openStore({ kind: "xtdb", url: urls[1], timeoutMs: 30000 });
const last = Math.max(await s1.latestTxId(), await s2.latestTxId());
for (const u of urls) {
  const r = await fetch(`${u}/_xtdb/await-tx?txId=${last}&timeout=120000`, { headers: { accept: "application/json" } });
  if (!r.ok) throw new Error(`await-tx ${last} on ${u}: HTTP ${r.status}`);
}
const contents = (h) => h.map((v) => v.doc?.content ?? null);
let expectedOnline = 0, expectedOffline = 0, lostOnline = 0, lostOffline = 0, storedVersions = 0, disagree = 0;
for (const g of agents) {
  for (const rel of g.own) {
    const id = objectId.get(rel);
    const [h1, h2] = [await s1.history(id), await s2.history(id)];
    if (JSON.stringify(h1) !== JSON.stringify(h2)) disagree++;
    const stored = new Set(contents(h1));
    storedVersions += h1.length;
    for (const e of g.expected.filter((x) => x.rel === rel)) {
      if (e.offline) {
        expectedOffline++;
        if (!stored.has(e.text)) lostOffline++;
      } else {
        expectedOnline++;
        if (!stored.has(e.text)) lostOnline++;
      }
    }
  }
}
let sharedStale = 0, sharedBackwards = 0;
for (const rel of SHARED) {
  const id = objectId.get(rel);
  const h = contents(await s1.history(id)).filter(Boolean);
  const nums = h.map((c) => Number(c.slice(0, 8)));
  for (let i = 1; i < nums.length; i++) {
    if (nums[i] > nums[i - 1]) continue;
    sharedBackwards++;
    const queued = offlineShared.has(h[i].slice(0, 8)) ? " (reported during an outage: written by the session's outage queue)" : "";
    console.log(`  ${rel}: version ${i} is #${nums[i]} after #${nums[i - 1]}${queued}`);
  }
  if (h.at(-1) !== readFileSync(path.join(ws, rel), "utf8")) sharedStale++;
}

// ---- report ----
console.log(`\n# soak: ${opts.agents} agents x 2 nodes x ${opts.minutes} min (think ${opts.thinkMs} ms, outages ${opts.outageS} s)`);
console.log(`- ${new Date().toISOString()} · nproc ${os.cpus().length} · loadavg ${loadavg()} · node ${process.version} · addon ${process.env.NAPI_RS_NATIVE_LIBRARY_PATH ?? "repo root build"}`);
console.log(`- turns: ${agents.map((g) => g.calls).join(" / ")} · failed ops: ${agents.map((g) => g.errors).join(" / ")}`);
console.log(`- own-file versions, store reachable: expected ${expectedOnline}, lost ${lostOnline}`);
console.log(`- own-file versions reported during an outage: expected ${expectedOffline}, lost ${lostOffline}`);
console.log(`- stored versions of own files: ${storedVersions}; histories differing between nodes: ${disagree}`);
console.log(`- shared files: stale latest ${sharedStale}, older-after-newer or duplicate ${sharedBackwards}`);
console.log(`\n| call | n | p50 ms | p99 ms | max ms |\n|---|---|---|---|---|`);
for (const [k, v] of Object.entries(lat)) {
  if (!v.length) continue;
  const s = stats(v);
  console.log(`| ${k} | ${s.n} | ${f2(s.p50)} | ${f2(s.p99)} | ${f2(s.max)} |`);
}
console.log(`\n| t s | soak process RSS MiB | node 1 MiB | node 2 MiB | PostgreSQL MiB |\n|---|---|---|---|---|`);
const mib = (k) => (k / 1024).toFixed(0);
for (const m of memory) console.log(`| ${m.t.toFixed(0)} | ${mib(m.self)} | ${mib(m.node1)} | ${mib(m.node2)} | ${mib(m.pg)} |`);

if (startedCluster && !opts.keep) cluster("stop");
rmSync(ws, { recursive: true, force: true });
process.exitCode = lostOnline + disagree + sharedStale + sharedBackwards === 0 ? 0 : 1;
