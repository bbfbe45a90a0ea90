// A tiny DevTools-protocol client over chromium's --remote-debugging-pipe (no npm package, no port): enough to
// load a page, run script in it and take a screenshot. Messages are JSON, NUL-terminated, written to the browser's
// fd 3 and read from its fd 4.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The system chromium (Debian's package; scripts/setup-chromium.sh installs it), or null. */
export function findChromium() {
  for (const name of [process.env.SCM_CHROMIUM, 'chromium', 'chromium-browser', 'google-chrome']) {
    if (!name) continue;
    try {
      return execFileSync('sh', ['-c', `command -v "${name}"`], { encoding: 'utf8' }).trim() || null;
    } catch {}
  }
  return null;
}

export async function launch(binary, { width = 1200, height = 900 } = {}) {
  const profile = mkdtempSync(path.join(os.tmpdir(), 'scm-chromium-'));
  const child = spawn(
    binary,
    ['--headless=new', '--remote-debugging-pipe', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-extensions', `--user-data-dir=${profile}`, `--window-size=${width},${height}`, 'about:blank'],
    { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const [, , , toBrowser, fromBrowser] = child.stdio;
  let next = 1;
  const pending = new Map();
  const listeners = [];
  let buf = '';
  fromBrowser.on('data', (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\0')) >= 0) {
      const msg = JSON.parse(buf.slice(0, i));
      buf = buf.slice(i + 1);
      if (msg.id && pending.has(msg.id)) {
        const { resolve, reject } = pending.get(msg.id);
        pending.delete(msg.id);
        if (msg.error) reject(new Error(`${msg.error.message} (${JSON.stringify(msg.error)})`));
        else resolve(msg.result);
      } else for (const l of listeners) l(msg);
    }
  });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  exited.then(() => {
    for (const { reject } of pending.values()) reject(new Error(`chromium exited: ${stderr.slice(-500)}`));
  });
  const send = (method, params = {}, sessionId) =>
    new Promise((resolve, reject) => {
      const id = next++;
      pending.set(id, { resolve, reject });
      toBrowser.write(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }) + '\0');
    });
  const event = (method, sessionId) =>
    new Promise((resolve) => {
      const l = (m) => {
        if (m.method === method && (!sessionId || m.sessionId === sessionId)) {
          listeners.splice(listeners.indexOf(l), 1);
          resolve(m.params);
        }
      };
      listeners.push(l);
    });

  const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
  const { sessionId } = await send('Target.attachToTarget', { targetId, flatten: true });
  await send('Page.enable', {}, sessionId);
  await send('Emulation.setDeviceMetricsOverride', { width, height, deviceScaleFactor: 1, mobile: false }, sessionId);
  const page = {
    async goto(url) {
      const loaded = event('Page.loadEventFired', sessionId);
      await send('Page.navigate', { url }, sessionId);
      await loaded;
    },
    /** Evaluates `expression` in the page; resolves with its (JSON) value, rejects on an exception. */
    async evaluate(expression) {
      const r = await send('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true }, sessionId);
      if (r.exceptionDetails) throw new Error(`page: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`);
      return r.result.value;
    },
    async screenshot() {
      const { data } = await send('Page.captureScreenshot', { format: 'png', captureBeyondViewport: false }, sessionId);
      return Buffer.from(data, 'base64');
    },
    /** Requests that left the page (a self-contained page makes none). */
    async networkLog() {
      return page.evaluate('performance.getEntriesByType("resource").map((e) => e.name)');
    },
  };
  return {
    page,
    async close() {
      try {
        await send('Browser.close');
      } catch {}
      await exited;
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
