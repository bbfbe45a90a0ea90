// `self-context-manager report`: one self-contained HTML page, checked in a real headless Chromium (Debian's
// package, driven over the DevTools pipe by __test__/browser.mjs): it loads with no network request, shows the
// token chart and the calls, a click on a call shows exactly what the model saw, a collapsed ref expands in place.
// The screenshot is kept in __test__/artifacts/report.png (git-ignored).
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT, tempDir, uid } from './helpers.mjs';
import { cli, lines, record } from './cli-helpers.mjs';
import { findChromium, launch } from './browser.mjs';

const chromium = findChromium();
const ARTIFACTS = path.join(ROOT, '__test__/artifacts');

describe.skipIf(!chromium)(`report in headless Chromium${chromium ? '' : ' (skipped: no chromium; bash scripts/setup-chromium.sh)'}`, () => {
  let file;
  let outs;
  let browser;
  let sessionId;
  beforeAll(async () => {
    const dir = tempDir('scm-report-');
    const store = { kind: 'embedded', path: path.join(dir, 'store.sqlite') };
    sessionId = uid('report');
    outs = await record(store, dir, sessionId, 8);
    file = path.join(dir, 'out', 'report.html');
    mkdirSync(path.dirname(file));
    const r = await cli(['report', sessionId, '-o', 'out/report.html', '--store', store.path], { cwd: dir });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain(`wrote ${file}`);
    browser = await launch(chromium);
    await browser.page.goto(pathToFileURL(file).href);
  }, 120_000);
  afterAll(() => browser?.close());

  it('is one self-contained file: no external reference, no request', async () => {
    const html = readFileSync(file, 'utf8');
    expect(html).not.toMatch(/<(script|link|img)[^>]+(src|href)=/i);
    // The SVG namespace name is an identifier, never fetched.
    expect(html.replaceAll('http://www.w3.org/2000/svg', '')).not.toMatch(/https?:\/\//);
    expect(await browser.page.networkLog()).toEqual([]);
  });

  it('shows one bar and one row per call, with pi alone beside each', async () => {
    const page = browser.page;
    expect(await page.evaluate('document.querySelectorAll("#chart g.bar").length')).toBe(outs.length);
    expect(await page.evaluate('document.querySelectorAll("#calls tbody tr").length')).toBe(outs.length);
    expect(await page.evaluate('document.querySelectorAll("#chart polyline").length')).toBe(1);
    // At least one collapse is marked under its bar.
    expect(await page.evaluate('document.querySelectorAll("#chart g.bar path").length')).toBeGreaterThan(0);
    expect(await page.evaluate('document.querySelectorAll("#live rect").length')).toBeGreaterThan(outs.length);
  });

  it('a click on a call shows exactly the messages the model saw; a collapsed ref expands in place', async () => {
    const page = browser.page;
    const last = outs.length - 1;
    await page.evaluate(`document.querySelector('#calls tr[data-call="${last}"]').click()`);
    expect(await page.evaluate('document.querySelector("#detail h2").textContent')).toBe(`Call ${last}: what the model saw`);
    expect(await page.evaluate('document.querySelectorAll("#detail .msg").length')).toBe(outs[last].length);
    const text = await page.evaluate('document.querySelector("#detail").innerText');
    expect(text).toContain(`toolResult t${last} (bash)`);
    expect(text).toContain(`out${last} line 0`);
    // Older outputs are collapsed to refs; one click shows the output under the ref.
    const ref = await page.evaluate('document.querySelector("#detail button.ref")?.dataset.ref');
    expect(ref).toMatch(/^t\d+$/);
    const n = ref.slice(1);
    expect(text).not.toContain(`out${n} line 5 of`);
    await page.evaluate(`document.querySelector('#detail button.ref[data-ref="${ref}"]').click()`);
    const expanded = await page.evaluate(`document.querySelector('#detail pre.expanded[data-expanded="${ref}"]').textContent`);
    expect(expanded).toBe(lines(20, `out${n}`));
    await page.evaluate(`document.querySelector('#detail button.ref[data-ref="${ref}"]').scrollIntoView()`);
    mkdirSync(ARTIFACTS, { recursive: true });
    writeFileSync(path.join(ARTIFACTS, 'report.png'), await page.screenshot());
    await page.evaluate('window.scrollTo(0, 0)');
    writeFileSync(path.join(ARTIFACTS, 'report-top.png'), await page.screenshot());
  });

  it('keeps each distinct message once, and every call resolves to exactly what the model saw', async () => {
    // Consecutive calls share most of their messages: the page stores each once and each call as references.
    const html = readFileSync(file, 'utf8');
    expect(html.split('look around').length - 1).toBe(1);
    const seen = await browser.page.evaluate('JSON.stringify(D.calls.map((_, i) => messagesOf(i)))');
    expect(JSON.parse(seen)).toEqual(outs);
  });

  it('a click on a bar shows that call', async () => {
    await browser.page.evaluate('document.querySelector(\'#chart g.bar[data-call="2"]\').dispatchEvent(new MouseEvent("click", { bubbles: true }))');
    expect(await browser.page.evaluate('document.querySelector("#detail h2").textContent')).toBe('Call 2: what the model saw');
    expect(await browser.page.evaluate('document.querySelectorAll("#detail .msg").length')).toBe(outs[2].length);
  });
});
