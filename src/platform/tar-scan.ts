import path from 'node:path';
import { unsafeMessage } from './tar-entry-rules.js';

const BLOCK = 512;
const META_CAP = 1024 * 1024;
// Types node-tar extracts or hands to our filter, plus the metadata we parse here. Anything
// else (sparse, volume, multi-volume, old GNU long names, 'X', unknown) node-tar skips
// silently without asking the filter, so it is refused here.
const KNOWN_TYPES = new Set(['0', '\0', '1', '2', '3', '4', '5', '6', '7', 'D', 'x', 'g', 'L', 'K']);
const COMPRESSED_MAGIC = [Buffer.from([0x1f, 0x8b]), Buffer.from([0x28, 0xb5, 0x2f, 0xfd])];

type State = 'header' | 'body' | 'meta' | 'eof';

function cString(b: Buffer, off: number, len: number): string {
  const nul = b.indexOf(0, off);
  return b.toString('utf8', off, nul === -1 || nul > off + len ? off + len : nul);
}

function parseOctal(b: Buffer, off: number, len: number): number | null {
  const s = b.toString('latin1', off, off + len).replace(/^ +/, '').replace(/[\0 ]+$/, '');
  if (s === '') return 0;
  return /^[0-7]+$/.test(s) ? parseInt(s, 8) : null;
}

// Octal, or GNU base-256 (first byte 0x80); a negative base-256 size is malformed.
function parseSize(b: Buffer, off: number): number | null {
  if (((b[off] ?? 0) & 0x80) === 0) return parseOctal(b, off, 12);
  if (b[off] !== 0x80) return null;
  let v = 0;
  for (let i = 1; i < 12; i++) v = v * 256 + (b[off + i] ?? 0);
  return Number.isSafeInteger(v) ? v : null;
}

function checksumOk(b: Buffer): boolean {
  const want = parseOctal(b, 148, 8);
  let sum = 8 * 0x20;
  for (let i = 0; i < BLOCK; i++) if (i < 148 || i >= 156) sum += b[i] ?? 0;
  return want === sum;
}

function escapesTree(p: string): boolean {
  return p.startsWith('/') || p.split('/').includes('..');
}

// Parses pax records "<len> <key>=<value>\n" strictly; returns [key, value] pairs or a rule broken.
export function parsePaxRecords(body: Buffer): Array<[string, Buffer]> | string {
  const out: Array<[string, Buffer]> = [];
  let pos = 0;
  while (pos < body.length) {
    const sp = body.indexOf(0x20, pos);
    const lenText = sp === -1 ? '' : body.toString('latin1', pos, sp);
    if (!/^[1-9][0-9]{0,8}$/.test(lenText)) return 'malformed pax record length';
    const end = pos + Number(lenText);
    if (end > body.length || end <= sp + 1 || body[end - 1] !== 0x0a) return 'malformed pax record';
    const rec = body.subarray(sp + 1, end - 1);
    const eq = rec.indexOf(0x3d);
    if (eq <= 0) return 'malformed pax record (no key)';
    out.push([rec.toString('utf8', 0, eq), rec.subarray(eq + 1)]);
    pos = end;
  }
  return out;
}

// An independent tar header scanner fed the same decompressed bytes as node-tar, first.
// It catches what node-tar hides: NUL bytes in pax and GNU long-name values (node-tar cuts
// them off silently), malformed pax records, pax path overrides that escape, headers
// node-tar skips without asking our filter, and an archive cut inside a header.
// It only ever adds refusals; write() and end() return a message when one is due.
export class TarScanner {
  entries = 0;
  private state: State = 'header';
  private partial: Buffer | null = null;
  private dataLeft = 0;
  private padLeft = 0;
  private metaType = '';
  private metaParts: Buffer[] = [];
  private zeroBlocks = 0;
  private first = true;
  private name = '';
  private pendingPath: string | undefined;
  private pendingLinkpath: string | undefined;
  private pendingSize: number | undefined;

  write(chunk: Buffer): string | null {
    const buf = this.partial ? Buffer.concat([this.partial, chunk]) : chunk;
    this.partial = null;
    let pos = 0;
    while (pos < buf.length && this.state !== 'eof') {
      if (this.state === 'header') {
        if (buf.length - pos < BLOCK) break;
        const rule = this.onHeader(buf.subarray(pos, pos + BLOCK));
        if (rule) return rule;
        pos += BLOCK;
      } else {
        const take = Math.min(this.dataLeft, buf.length - pos);
        if (this.state === 'meta' && take > 0) this.metaParts.push(Buffer.from(buf.subarray(pos, pos + take)));
        this.dataLeft -= take;
        pos += take;
        const pad = Math.min(this.padLeft, buf.length - pos);
        if (this.dataLeft === 0) {
          this.padLeft -= pad;
          pos += pad;
        }
        if (this.dataLeft === 0 && this.padLeft === 0) {
          const rule = this.state === 'meta' ? this.onMeta(Buffer.concat(this.metaParts)) : null;
          if (rule) return rule;
          this.state = 'header';
        }
      }
    }
    if (this.state === 'header' && pos < buf.length) this.partial = Buffer.from(buf.subarray(pos));
    return null;
  }

  // Called once all bytes are in: an archive cut inside a header or a body is refused.
  end(): string | null {
    if (this.state === 'body' || this.state === 'meta') {
      return unsafeMessage(this.name, 'the archive is truncated inside this entry');
    }
    if (this.partial && this.partial.length > 0) return unsafeMessage(null, 'the archive is truncated inside a header');
    return null;
  }

  private onHeader(h: Buffer): string | null {
    if (this.first) {
      this.first = false;
      if (COMPRESSED_MAGIC.some((m) => h.subarray(0, m.length).equals(m))) {
        return unsafeMessage(null, 'the tar stream is itself compressed (nested compression)');
      }
    }
    if (h.every((b) => b === 0)) {
      // Two zero blocks end the archive; anything after them is ignored, as node-tar does.
      if (++this.zeroBlocks === 2) this.state = 'eof';
      return null;
    }
    this.zeroBlocks = 0;
    const ustar = h.toString('latin1', 257, 263) === 'ustar\0';
    const prefix = ustar ? cString(h, 345, 155) : '';
    const nameField = cString(h, 0, 100);
    this.name = this.pendingPath ?? (prefix ? `${prefix}/${nameField}` : nameField);
    if (!checksumOk(h)) return unsafeMessage(this.name, 'header checksum is wrong');
    const type = String.fromCharCode(h[156] ?? 0);
    if (!KNOWN_TYPES.has(type)) return unsafeMessage(this.name, `entry type ${JSON.stringify(type)} is not allowed`);
    const size = parseSize(h, 124);
    if (size === null) return unsafeMessage(this.name, 'size field is malformed');

    if (type === 'x' || type === 'g' || type === 'L' || type === 'K') {
      if (size > META_CAP) return unsafeMessage(this.name, `metadata entry is larger than ${META_CAP} bytes`);
      this.metaType = type;
      this.metaParts = [];
      return this.startBody('meta', size);
    }
    this.entries++;
    const effSize = this.pendingSize ?? size;
    const dirish = type === '5' || ((type === '0' || type === '\0') && (this.pendingPath ?? nameField).endsWith('/'));
    // node-tar reads a folder's size as 0 whatever the header says: a body would desynchronize us.
    if (dirish && effSize > 0) return unsafeMessage(this.name, 'folder entry carries a body');
    // A plain header's target is what our filter sees too; an override gets a second look here.
    if (type === '2' && this.pendingLinkpath !== undefined && !this.linkStaysInside(this.name, this.pendingLinkpath)) {
      return unsafeMessage(this.name, `pax linkpath override ${JSON.stringify(this.pendingLinkpath)} points outside the tree`);
    }
    this.pendingPath = this.pendingLinkpath = this.pendingSize = undefined;
    return this.startBody('body', effSize);
  }

  private linkStaysInside(entryPath: string, linkpath: string): boolean {
    if (linkpath.startsWith('/')) return false;
    const resolved = path.posix.normalize(path.posix.join(path.posix.dirname(entryPath), linkpath));
    return resolved !== '..' && !resolved.startsWith('../');
  }

  private startBody(state: 'body' | 'meta', size: number): string | null {
    this.dataLeft = size;
    this.padLeft = (BLOCK - (size % BLOCK)) % BLOCK;
    this.state = size > 0 ? state : 'header';
    if (size === 0 && state === 'meta') return this.onMeta(Buffer.alloc(0));
    return null;
  }

  private onMeta(body: Buffer): null | string {
    this.state = 'header';
    if (this.metaType === 'L' || this.metaType === 'K') {
      const key = this.metaType === 'L' ? 'path' : 'linkpath';
      let end = body.length;
      while (end > 0 && body[end - 1] === 0) end--;
      if (body.subarray(0, end).includes(0)) return unsafeMessage(body.toString('utf8', 0, end), `GNU long ${key} holds a NUL byte`);
      return this.applyOverride(key, body.toString('utf8', 0, end), false);
    }
    const records = parsePaxRecords(body);
    if (typeof records === 'string') return unsafeMessage(this.name, records);
    const global = this.metaType === 'g';
    for (const [key, value] of records) {
      if (key.includes('\0')) return unsafeMessage(this.name, 'malformed pax record (NUL in its key)');
      if (value.includes(0)) return unsafeMessage(value.toString('utf8'), `pax record ${JSON.stringify(key)} holds a NUL byte`);
      const rule = this.applyOverride(key, value.toString('utf8'), global);
      if (rule) return rule;
    }
    return null;
  }

  private applyOverride(key: string, value: string, global: boolean): string | null {
    if (key === 'path') {
      if (escapesTree(value)) return unsafeMessage(value, "pax path override is absolute or has a '..' component");
      if (!global) this.pendingPath = value;
    } else if (key === 'linkpath') {
      if (value.startsWith('/')) return unsafeMessage(this.name, `pax linkpath override ${JSON.stringify(value)} is absolute`);
      if (global) return unsafeMessage(this.name, 'a global pax linkpath override is not allowed');
      this.pendingLinkpath = value;
    } else if (key === 'size') {
      if (global) return unsafeMessage(this.name, 'global pax size override is not allowed');
      if (!/^[0-9]{1,15}$/.test(value)) return unsafeMessage(this.name, 'pax size is malformed');
      this.pendingSize = Number(value);
    }
    return null;
  }
}
