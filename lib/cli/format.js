'use strict';
// Output helpers of the command-line tool: tables, sizes, times, the progress bar.

/** A plain text table: `columns` are `{ key, title, align? }`, rows are objects. */
function table(columns, rows) {
  const cells = rows.map((r) => columns.map((c) => String(r[c.key] ?? '')));
  const widths = columns.map((c, i) => Math.max(c.title.length, ...cells.map((row) => row[i].length)));
  const line = (values) =>
    values
      .map((v, i) => (columns[i].align === 'right' ? v.padStart(widths[i]) : v.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(columns.map((c) => c.title)), ...cells.map(line)].join('\n') + '\n';
}

/** `2026-11-25T00:15:43.173Z` → `2026-11-25 00:15:43` (UTC, as stored). */
const time = (iso) => (iso ? String(iso).replace('T', ' ').replace(/\.\d+Z$|Z$/, '') : '');

function bytes(n) {
  if (n == null) return 'unknown';
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u += 1;
  }
  return u === 0 ? `${v} B` : `${v.toFixed(1)} ${units[u]}`;
}

const int = (n) => (n == null ? '' : Number(n).toLocaleString('en-US'));

/**
 * A progress bar on stderr, drawn only when stderr is a terminal (scripts and pipes see nothing). `total` null:
 * a counter without a bar. Call `tick()` per item and `done()` at the end.
 */
function progress(label, total, stream = process.stderr) {
  const on = Boolean(stream.isTTY);
  let n = 0;
  let last = 0;
  const draw = () => {
    if (!on) return;
    const width = 24;
    const bar = total ? `[${'#'.repeat(Math.round((n / total) * width)).padEnd(width, '.')}] ${n}/${total}` : `${n}`;
    stream.write(`\r${label} ${bar}\u001b[K`);
  };
  return {
    tick(k = 1) {
      n += k;
      const now = Date.now();
      if (now - last > 80 || n === total) {
        last = now;
        draw();
      }
    },
    done() {
      if (on) stream.write('\r\u001b[K');
    },
  };
}

module.exports = { table, time, bytes, int, progress };
