// pax extended header records ('x' and 'g'), read as GNU tar reads them (by each record's
// length), and what node-tar would read otherwise: the tar scanner's rules for their values.
import { isUtf8 } from 'node:buffer';

// pax records steward never applies, whose values are binary by nature (an SELinux label ends
// in a NUL) or free text: extended attributes, ACLs, comments (git archive's commit id).
export const IGNORED_PAX_KEY = /^(SCHILY\.xattr\.|LIBARCHIVE\.xattr\.|SCHILY\.acl\.|RHT\.security\.selinux$|comment$)/;
// Keys GNU tar applies to every following entry when a global header ('g') holds them, where
// node-tar ignores them (path) or lets them override each entry's own (linkpath, size, mtime,
// atime): the two would extract different trees. Owners, comments and charsets change nothing.
export const GLOBAL_REFUSED = new Set(['path', 'linkpath', 'size', 'mtime', 'atime']);
export const SPARSE_KEY = /^GNU\.sparse\./;

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

// node-tar reads pax records line by line: a newline inside a value (an extended attribute's
// binary bytes may hold one) starts what it reads as a record of its own when the line's
// length prefix matches. GNU tar reads by length and never sees it. Such a value is refused.
export function hiddenRecordRule(key: string, value: Buffer): string | null {
  if (!value.includes(0x0a)) return null;
  const lines = value.toString('utf8').split('\n').slice(1);
  const hidden = lines.find((line) => parseInt(line, 10) === Buffer.byteLength(line) + 1);
  return hidden === undefined ? null : `its pax record ${JSON.stringify(key)} holds a newline and then what node-tar would read as a record of its own (${JSON.stringify(hidden)})`;
}

// What is wrong with a pax record's value, if anything: node-tar cuts values at a NUL, reads
// records line by line (a newline splits one) and drops one that is not UTF-8.
export function valueRule(key: string, value: Buffer): string | null {
  const shown = JSON.stringify(value.toString('utf8'));
  if (value.includes(0)) return `its pax record ${JSON.stringify(key)} holds a NUL byte (${shown})`;
  if (value.includes(0x0a)) return `its pax record ${JSON.stringify(key)} holds a newline (${shown})`;
  if (!isUtf8(value)) return `its pax record ${JSON.stringify(key)} is not valid UTF-8 (${shown})`;
  return null;
}
