import { isUtf8 } from 'node:buffer';
import path from 'node:path';
import { unsafeMessage } from './tar-entry-rules.js';
import { GLOBAL_REFUSED, hiddenRecordRule, IGNORED_PAX_KEY, parsePaxRecords, SPARSE_KEY, valueRule } from './tar-pax-records.js';

const BLOCK = 512;
const META_CAP = 1024 * 1024;
// Types node-tar extracts or hands to our filter, plus the metadata we parse here. Anything
// else (sparse, volume, multi-volume, old GNU long names, 'X', unknown) node-tar skips
// silently without asking the filter, so it is refused here.
const KNOWN_TYPES = new Set(['0', '\0', '1', '2', '3', '4', '5', '6', '7', 'D', 'x', 'g', 'L', 'K']);
// Why each unknown type is refused, where a plain "not allowed" would not say what to do.
const TYPE_RULES: Record<string, string> = {
  S: 'is a GNU sparse file (type "S"), which steward does not extract: archive it without --sparse',
};

// What the scanner read for one entry (a header that is not metadata), in archive order: the
// feed holds node-tar's reading of the same entry to it (same path, size and link target).
export interface ScannedEntry {
  path: string;
  type: string;
  size: number;
  linkpath: string | undefined;
}

const COMPRESSED_MAGIC = [Buffer.from([0x1f, 0x8b]), Buffer.from([0x28, 0xb5, 0x2f, 0xfd])];

type State = 'header' | 'body' | 'meta' | 'eof';

function cString(b: Buffer, off: number, len: number): string {
  const nul = b.indexOf(0, off);
  return b.toString('utf8', off, nul === -1 || nul > off + len ? off + len : nul);
}

// The bytes of a NUL-terminated header field.
function fieldBytes(b: Buffer, off: number, len: number): Buffer {
  const nul = b.indexOf(0, off);
  return b.subarray(off, nul === -1 || nul > off + len ? off + len : nul);
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

// An independent tar header scanner fed the same decompressed bytes as node-tar, first.
// It reads the headers as GNU tar does and refuses what node-tar would read otherwise, or
// hide: NUL bytes in pax and GNU long-name values (node-tar cuts them off silently), malformed
// pax records, a pax path or linkpath that is not valid UTF-8 or holds a newline (node-tar
// drops the record and uses the short name), names that are not UTF-8 (node-tar would write
// U+FFFD where GNU tar writes the bytes), sparse members (pax GNU.sparse.* records: node-tar
// would write the sparse map under the GNUSparseFile.0/ name), a global header's path (node-tar
// drops it, GNU tar applies it to every entry), a hardlink that declares a body (GNU tar reads
// none), pax path overrides that escape, headers node-tar skips without asking our filter, and
// an archive cut inside a header. What it read of each entry waits in `scanned` for the feed,
// which holds node-tar's reading to it. Extended attributes are ignored (steward never applies
// them). It only ever adds refusals; write() and end() return a message when one is due.
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
  // A pax header ('x') was read for the next entry: a second one before it is ambiguous.
  private pendingPax = false;
  // A rule a pax header broke, told with the name of the entry it is for (known at its header).
  private pendingRule: { rule: string; name?: string | undefined } | null = null;
  // The entries read and not yet taken by the feed (see takeEntry).
  private readonly scanned: ScannedEntry[] = [];
  private scannedHead = 0;

  // What the scanner read of the next entry node-tar hands over, or undefined if none is left.
  takeEntry(): ScannedEntry | undefined {
    if (this.scannedHead >= this.scanned.length) return undefined;
    const e = this.scanned[this.scannedHead++];
    if (this.scannedHead === this.scanned.length) {
      this.scanned.length = 0;
      this.scannedHead = 0;
    }
    return e;
  }

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
    if (!KNOWN_TYPES.has(type)) return unsafeMessage(this.name, TYPE_RULES[type] ?? `entry type ${JSON.stringify(type)} is not allowed`);
    const size = parseSize(h, 124);
    if (size === null) return unsafeMessage(this.name, 'size field is malformed');

    if (type === 'x' || type === 'g' || type === 'L' || type === 'K') {
      if (size > META_CAP) return unsafeMessage(this.name, `metadata entry is larger than ${META_CAP} bytes`);
      if (type === 'x' && this.pendingPax) return unsafeMessage(this.name, 'two pax headers in a row for one entry');
      this.metaType = type;
      this.metaParts = [];
      return this.startBody('meta', size);
    }
    if (this.pendingRule) return unsafeMessage(this.pendingRule.name ?? this.name, this.pendingRule.rule);
    this.entries++;
    // GNU tar writes these bytes as they are; node-tar would write U+FFFD for each bad sequence.
    if (this.pendingPath === undefined && !(isUtf8(fieldBytes(h, 0, 100)) && (!ustar || isUtf8(fieldBytes(h, 345, 155))))) {
      return unsafeMessage(this.name, 'its name is not valid UTF-8');
    }
    const linkish = type === '1' || type === '2';
    if (linkish && this.pendingLinkpath === undefined && !isUtf8(fieldBytes(h, 157, 100))) {
      return unsafeMessage(this.name, 'its link target is not valid UTF-8');
    }
    const effSize = this.pendingSize ?? size;
    const dirish = type === '5' || ((type === '0' || type === '\0') && (this.pendingPath ?? nameField).endsWith('/'));
    // node-tar reads a folder's size as 0 whatever the header says: a body would desynchronize us.
    if (dirish && effSize > 0) return unsafeMessage(this.name, 'folder entry carries a body');
    // GNU tar reads a hardlink's size as 0 ("links 0 size on tape"), node-tar reads that many
    // bytes: the two would read every later header from different places.
    if (type === '1' && effSize > 0) return unsafeMessage(this.name, `hardlink declares a ${effSize}-byte body (a hardlink has none)`);
    // A plain header's target is what our filter sees too; an override gets a second look here.
    if (type === '2' && this.pendingLinkpath !== undefined && !this.linkStaysInside(this.name, this.pendingLinkpath)) {
      return unsafeMessage(this.name, `pax linkpath override ${JSON.stringify(this.pendingLinkpath)} points outside the tree`);
    }
    const linkpath = linkish ? (this.pendingLinkpath ?? cString(h, 157, 100)) : undefined;
    this.scanned.push({ path: this.name, type, size: dirish ? 0 : effSize, linkpath });
    this.pendingPath = this.pendingLinkpath = this.pendingSize = undefined;
    this.pendingPax = false;
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
      const value = body.subarray(0, end);
      if (value.includes(0)) return unsafeMessage(body.toString('utf8', 0, end), `GNU long ${key} holds a NUL byte`);
      if (!isUtf8(value)) return unsafeMessage(value.toString('utf8'), `GNU long ${key} is not valid UTF-8`);
      return this.applyOverride(key, value.toString('utf8'));
    }
    const records = parsePaxRecords(body);
    if (typeof records === 'string') return unsafeMessage(this.name, records);
    if (this.metaType === 'g') return this.onGlobal(records);
    this.pendingPax = true;
    let sparseName: string | undefined;
    for (const [key, value] of records) {
      if (key.includes('\0')) return unsafeMessage(this.name, 'malformed pax record (NUL in its key)');
      if (IGNORED_PAX_KEY.test(key)) {
        const rule = hiddenRecordRule(key, value);
        if (rule) this.pendingRule ??= { rule };
        continue;
      }
      if (SPARSE_KEY.test(key)) {
        if (key === 'GNU.sparse.name' && isUtf8(value)) sparseName = value.toString('utf8');
        this.pendingRule ??= { rule: 'is a sparse file (pax GNU.sparse.* records), which steward does not extract: archive it without --sparse' };
        continue;
      }
      const rule = valueRule(key, value);
      if (rule) {
        // Told at the entry's own header, by the name node-tar and the header give it.
        this.pendingRule ??= { rule };
        continue;
      }
      const over = this.applyOverride(key, value.toString('utf8'));
      if (over) return over;
    }
    if (this.pendingRule && sparseName !== undefined) this.pendingRule.name = sparseName;
    return null;
  }

  // A global header applies to every entry after it: one that would make GNU tar and node-tar
  // extract different trees is refused, named by the header's own name (git archive writes
  // "pax_global_header"); what steward never applies is ignored.
  private onGlobal(records: Array<[string, Buffer]>): string | null {
    for (const [key, value] of records) {
      if (key.includes('\0')) return unsafeMessage(this.name, 'malformed pax record (NUL in its key)');
      if (IGNORED_PAX_KEY.test(key)) {
        const rule = hiddenRecordRule(key, value);
        if (rule) return unsafeMessage(this.name, rule);
        continue;
      }
      if (SPARSE_KEY.test(key)) return unsafeMessage(this.name, `global pax header holds the sparse record ${JSON.stringify(key)}, which steward does not extract`);
      if (GLOBAL_REFUSED.has(key)) {
        return unsafeMessage(this.name, `global pax header sets ${JSON.stringify(key)} for every entry after it (${JSON.stringify(value.toString('utf8'))}), which steward does not apply`);
      }
      const rule = valueRule(key, value);
      if (rule) return unsafeMessage(this.name, rule);
    }
    return null;
  }

  // Records a pax or GNU long-name override for the next entry. A path that escapes is refused
  // at once, named by itself; any other rule waits for the entry's header, which names it.
  private applyOverride(key: string, value: string): string | null {
    if (key === 'path') {
      if (escapesTree(value)) return unsafeMessage(value, "pax path override is absolute or has a '..' component");
      this.pendingPath = value;
    } else if (key === 'linkpath') {
      if (value.startsWith('/')) this.pendingRule ??= { rule: `pax linkpath override ${JSON.stringify(value)} is absolute` };
      this.pendingLinkpath = value;
    } else if (key === 'size') {
      if (!/^[0-9]{1,15}$/.test(value)) this.pendingRule ??= { rule: `pax size ${JSON.stringify(value)} is malformed` };
      else this.pendingSize = Number(value);
    }
    return null;
  }
}
