// The few tar (ustar) entries the provider exchanges with the engine's archive endpoints:
// regular files with an owner and mode out, regular files by name back in.
const BLOCK = 512;

/**
 * The engine sets each extracted file's mtime from its archive, and the agent notices a new key
 * by its mtime: whole seconds would let two rotations in one second look like none. So every
 * file gets a pax `mtime` with milliseconds, strictly later than the one before.
 */
let lastMtimeMs = 0;
function nextMtimeMs(): number {
  lastMtimeMs = Math.max(Date.now(), lastMtimeMs + 1);
  return lastMtimeMs;
}

export interface TarFile {
  /** A plain name (no directories): files land in the directory the archive is put into. */
  readonly name: string;
  readonly content: Buffer;
  readonly mode: number;
  readonly uid: number;
  readonly gid: number;
}

function writeField(header: Buffer, offset: number, length: number, text: string): void {
  header.write(text, offset, Math.min(length, Buffer.byteLength(text)), 'utf8');
}

/** Octal, zero-padded, NUL-terminated: what every tar reader accepts. */
function octal(value: number, length: number): string {
  return `${value.toString(8).padStart(length - 1, '0')}\0`;
}

interface Header {
  readonly name: string;
  readonly mode: number;
  readonly uid: number;
  readonly gid: number;
  readonly size: number;
  readonly mtimeSeconds: number;
  /** '0' a regular file, 'x' the pax record of the file that follows. */
  readonly type: '0' | 'x';
}

function headerOf(entry: Header): Buffer {
  const header = Buffer.alloc(BLOCK);
  writeField(header, 0, 100, entry.name);
  writeField(header, 100, 8, octal(entry.mode, 8));
  writeField(header, 108, 8, octal(entry.uid, 8));
  writeField(header, 116, 8, octal(entry.gid, 8));
  writeField(header, 124, 12, octal(entry.size, 12));
  writeField(header, 136, 12, octal(entry.mtimeSeconds, 12));
  header.fill(' ', 148, 156);
  header.write(entry.type, 156);
  writeField(header, 257, 6, 'ustar\0');
  writeField(header, 263, 2, '00');
  let sum = 0;
  for (const byte of header) sum += byte;
  writeField(header, 148, 8, `${sum.toString(8).padStart(6, '0')}\0 `);
  return header;
}

function padding(length: number): Buffer {
  return Buffer.alloc((BLOCK - (length % BLOCK)) % BLOCK);
}

/** One pax record: `<length> <key>=<value>\n`, the length counting its own digits. */
function paxRecord(key: string, value: string): Buffer {
  const body = ` ${key}=${value}\n`;
  let length = body.length + 1;
  while (String(length).length + body.length !== length) length = String(length).length + body.length;
  return Buffer.from(`${length}${body}`, 'utf8');
}

function fileEntry(file: TarFile): Buffer[] {
  if (!/^[A-Za-z0-9._-]{1,90}$/.test(file.name)) throw new Error(`not a plain file name: ${file.name}`);
  const mtimeMs = nextMtimeMs();
  const mtimeSeconds = Math.floor(mtimeMs / 1000);
  const pax = paxRecord('mtime', `${mtimeSeconds}.${String(mtimeMs % 1000).padStart(3, '0')}`);
  const owner = { mode: 0o644, uid: file.uid, gid: file.gid, mtimeSeconds };
  return [
    headerOf({ ...owner, name: `PaxHeaders/${file.name}`, size: pax.length, type: 'x' }),
    pax,
    padding(pax.length),
    headerOf({ ...file, size: file.content.length, mtimeSeconds, type: '0' }),
    file.content,
    padding(file.content.length),
  ];
}

export function packTar(files: readonly TarFile[]): Buffer {
  return Buffer.concat([...files.flatMap(fileEntry), Buffer.alloc(2 * BLOCK)]);
}

/** A file read back from an archive, as it was written. */
export type TarEntry = TarFile;

function readText(block: Buffer, offset: number, length: number): string {
  const field = block.subarray(offset, offset + length);
  const end = field.indexOf(0);
  return field.subarray(0, end === -1 ? length : end).toString('utf8');
}

function readOctal(block: Buffer, offset: number, length: number): number {
  const text = readText(block, offset, length).trim();
  return text === '' ? 0 : Number.parseInt(text, 8);
}

/** Regular files only (pax and directory entries are skipped); names as written, prefix joined. */
export function unpackTar(archive: Buffer): TarEntry[] {
  const entries: TarEntry[] = [];
  for (let offset = 0; offset + BLOCK <= archive.length;) {
    const header = archive.subarray(offset, offset + BLOCK);
    if (header.every((byte) => byte === 0)) break;
    const size = readOctal(header, 124, 12);
    const type = readText(header, 156, 1);
    const prefix = readText(header, 345, 155);
    const name = readText(header, 0, 100);
    const content = archive.subarray(offset + BLOCK, offset + BLOCK + size);
    if (type === '0' || type === '')
      entries.push({
        name: prefix === '' ? name : `${prefix}/${name}`,
        content: Buffer.from(content),
        mode: readOctal(header, 100, 8),
        uid: readOctal(header, 108, 8),
        gid: readOctal(header, 116, 8),
      });
    offset += BLOCK + size + padding(size).length;
  }
  return entries;
}
