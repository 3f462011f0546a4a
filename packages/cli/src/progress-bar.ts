import { Transform } from 'node:stream';

/** Files at least this large get a progress bar (on a terminal only). */
export const PROGRESS_MIN_BYTES = 1024 * 1024;
const REDRAW_MS = 100;
const BAR_WIDTH = 30;
/** Erases the rest of the line, so a shorter redraw leaves no old characters behind. */
const ERASE_TO_END = '\u001b[K';

/** `512 B`, `1.5 KiB`, `20.0 MiB`: binary units, one decimal. */
export function humanBytes(bytes: number): string {
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

/**
 * `label [####------] 40% 8.0 MiB/20.0 MiB`, at most `columns - 1` wide: a line that wrapped
 * could not be redrawn with `\r`, so a long label is cut (with `…`) to fit the terminal.
 */
export function progressLine(label: string, done: number, total: number, columns = 80): string {
  const fraction = total > 0 ? Math.min(1, done / total) : 1;
  const filled = Math.round(fraction * BAR_WIDTH);
  const bar = `${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}`;
  const tail = ` [${bar}] ${Math.round(fraction * 100)}% ${humanBytes(done)}/${humanBytes(total)}`;
  const room = Math.max(1, columns - 1 - tail.length);
  const shown = label.length <= room ? label : `${label.slice(0, Math.max(0, room - 1))}…`;
  return `${shown}${tail}`.slice(0, Math.max(1, columns - 1));
}

/**
 * A pass-through stream that redraws one status line on `out` (a terminal) as bytes go by,
 * ending with the line at 100 % and a newline. Nothing is drawn for small files or when
 * `out` is not a terminal (logs and pipes stay clean).
 */
export function progressStream(out: NodeJS.WriteStream, label: string, total: number): Transform {
  const draw = out.isTTY && total >= PROGRESS_MIN_BYTES;
  let done = 0;
  let drawnAt = 0;
  const redraw = (end: string): void => {
    out.write(`\r${progressLine(label, done, total, out.columns || 80)}${ERASE_TO_END}${end}`);
  };
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      done += chunk.length;
      const now = Date.now();
      if (draw && now - drawnAt >= REDRAW_MS) {
        drawnAt = now;
        redraw('');
      }
      callback(null, chunk);
    },
    flush(callback) {
      if (draw) redraw('\n');
      callback();
    },
  });
}
