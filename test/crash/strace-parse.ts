// Parses the text `strace -f -y -s <big>` writes into one event per completed system call,
// in the order they completed. Pure: no I/O.
//
// Lines look like
//   4155  rename("/r/.a.tmp", "/r/a") = 0
//   4156  write(18</r/.a.tmp>, "hello\n", 6) = 6
//   4157  fsync(18</r> <unfinished ...>
//   4157  <... fsync resumed>)              = 0
// A call split by `<unfinished ...>` counts at its `resumed` line: that is when it took effect.

export type Arg =
  | { kind: 'str'; value: Buffer; truncated: boolean }
  | { kind: 'fd'; fd: number; path: string | null }
  | { kind: 'raw'; text: string };

export interface SyscallEvent {
  pid: number;
  name: string;
  args: Arg[];
  // The return value as a number (-1 for errors), and the path strace printed after an fd result.
  ret: number;
  retPath: string | null;
  // The line (1-based) where the call completed, to print with a violation.
  line: number;
  text: string;
}

const START_RE = /^(\d+)\s+([a-z_0-9]+)\((.*)$/;
const RESUMED_RE = /^(\d+)\s+<\.\.\. ([a-z_0-9]+) resumed>(.*)$/;
const UNFINISHED = ' <unfinished ...>';

// Every completed call of `text`; signals, exits and calls that never completed are skipped.
export function parseStrace(text: string): SyscallEvent[] {
  const pending = new Map<string, string>();
  const out: SyscallEvent[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    let pid: number;
    let name: string;
    let rest: string;
    const start = START_RE.exec(line);
    const resumed = start ? null : RESUMED_RE.exec(line);
    if (start) {
      pid = Number(start[1]);
      name = start[2] as string;
      rest = start[3] as string;
      if (rest.endsWith(UNFINISHED)) {
        pending.set(`${pid}:${name}`, rest.slice(0, -UNFINISHED.length));
        continue;
      }
    } else if (resumed) {
      pid = Number(resumed[1]);
      name = resumed[2] as string;
      const head = pending.get(`${pid}:${name}`);
      if (head === undefined) continue;
      pending.delete(`${pid}:${name}`);
      rest = head + (resumed[3] as string);
    } else {
      continue;
    }
    const ev = parseCall(pid, name, rest, i + 1, line);
    if (ev) out.push(ev);
  }
  return out;
}

// `rest` is everything after `name(`: the arguments, `)`, ` = ret` and maybe an errno text.
function parseCall(pid: number, name: string, rest: string, line: number, text: string): SyscallEvent | null {
  const { items, end } = splitArgs(rest, 0, ')');
  const tail = rest.slice(end + 1);
  const m = /^\s*=\s*(-?\d+|\?)(?:<(.*?)>)?/.exec(tail);
  if (!m || m[1] === '?') return null;
  return {
    pid,
    name,
    args: items.map(parseArg),
    ret: Number(m[1]),
    retPath: m[2] !== undefined ? unescapeC(m[2]).toString('utf8') : null,
    line,
    text,
  };
}

// Splits a comma-separated list at depth 0 up to the closing `close`, honouring quotes,
// brackets, braces and the `<path>` strace appends to fds.
export function splitArgs(s: string, from: number, close: string): { items: string[]; end: number } {
  const items: string[] = [];
  let depth = 0;
  let cur = '';
  let i = from;
  for (; i < s.length; i++) {
    const c = s[i] as string;
    if (c === '"') {
      const j = endOfString(s, i);
      cur += s.slice(i, j + 1);
      i = j;
      continue;
    }
    if (c === '<' && /(\d|AT_FDCWD)$/.test(cur)) {
      // An fd's path: `18</a/b>`; the path may hold anything but an unescaped '>'.
      const j = s.indexOf('>', i);
      cur += s.slice(i, j + 1);
      i = j;
      continue;
    }
    if (c === '[' || c === '{' || c === '(') depth++;
    else if (c === ']' || c === '}' || (c === ')' && depth > 0)) depth--;
    else if (depth === 0 && c === close) break;
    if (depth === 0 && c === ',') {
      items.push(cur.trim());
      cur = '';
      continue;
    }
    cur += c;
  }
  if (cur.trim() !== '' || items.length) items.push(cur.trim());
  return { items, end: i };
}

function endOfString(s: string, i: number): number {
  for (let j = i + 1; j < s.length; j++) {
    if (s[j] === '\\') j++;
    else if (s[j] === '"') return j;
  }
  return s.length - 1;
}

function parseArg(text: string): Arg {
  if (text.startsWith('"')) {
    const j = endOfString(text, 0);
    return { kind: 'str', value: unescapeC(text.slice(1, j)), truncated: text.slice(j + 1).startsWith('...') };
  }
  const fd = /^(-?\d+|AT_FDCWD)<(.*)>$/.exec(text);
  if (fd) return { kind: 'fd', fd: fd[1] === 'AT_FDCWD' ? -100 : Number(fd[1]), path: unescapeC(fd[2] as string).toString('utf8') };
  if (/^-?\d+$/.test(text)) return { kind: 'fd', fd: Number(text), path: null };
  return { kind: 'raw', text };
}

// The bytes of a C string body as strace prints it: \n \t \r \v \f \" \\, \xHH and octal \NNN.
export function unescapeC(body: string): Buffer {
  const out: number[] = [];
  for (let i = 0; i < body.length; i++) {
    const c = body[i] as string;
    if (c !== '\\') {
      for (const b of Buffer.from(c, 'utf8')) out.push(b);
      continue;
    }
    const n = body[++i] as string;
    const simple: Record<string, number> = { n: 10, t: 9, r: 13, v: 11, f: 12, '"': 34, '\\': 92, a: 7, b: 8 };
    if (n in simple) out.push(simple[n] as number);
    else if (n === 'x') {
      out.push(parseInt(body.slice(i + 1, i + 3), 16));
      i += 2;
    } else if (/[0-7]/.test(n)) {
      let digits = n;
      while (digits.length < 3 && /[0-7]/.test(body[i + 1] ?? '')) digits += body[++i];
      out.push(parseInt(digits, 8));
    } else {
      for (const b of Buffer.from('\\' + n, 'utf8')) out.push(b);
    }
  }
  return Buffer.from(out);
}
