import { Transform } from 'node:stream';

/** Files at least this large get a progress bar (on a terminal only). */
export const PROGRESS_MIN_BYTES = 1024 * 1024;
const REDRAW_MS = 100;
const BAR_WIDTH = 30;

function human(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit] ?? 'TiB'}`;
}

export function progressLine(label: string, done: number, total: number): string {
  const fraction = total > 0 ? Math.min(1, done / total) : 1;
  const filled = Math.round(fraction * BAR_WIDTH);
  const bar = `${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}`;
  return `${label} [${bar}] ${Math.round(fraction * 100)}% ${human(done)}/${human(total)}`;
}

/**
 * A pass-through stream that redraws one status line on `out` (a terminal) as bytes go by.
 * Nothing is drawn for small files or when `out` is not a terminal (logs stay clean).
 */
export function progressStream(out: NodeJS.WriteStream, label: string, total: number): Transform {
  const draw = out.isTTY && total >= PROGRESS_MIN_BYTES;
  let done = 0;
  let drawnAt = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      done += chunk.length;
      const now = Date.now();
      if (draw && now - drawnAt >= REDRAW_MS) {
        drawnAt = now;
        out.write(`\r${progressLine(label, done, total)}`);
      }
      callback(null, chunk);
    },
    flush(callback) {
      if (draw) out.write(`\r${progressLine(label, done, total)}\n`);
      callback();
    },
  });
}
