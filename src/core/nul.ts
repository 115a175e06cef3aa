// A NUL character (U+0000) in what a client sends. No name, id, label, selector or cursor of
// steward holds one, and PostgreSQL's text cannot: a NUL reaching a query fails there (500)
// where SQLite answers, so the control plane refuses it where input arrives, before any backend
// sees it, and both backends answer the same (the admin operations' parseInput and decodeCursor,
// the heartbeat's claimed nodeId).

export function hasNul(s: string): boolean {
  return s.includes('\u0000');
}

// Where `v` (an input: strings, numbers, arrays and objects of them) holds a NUL character, as a
// path (`nodeId`, `args[0]`), or null when it holds none.
export function nulPath(v: unknown, at = ''): string | null {
  if (typeof v === 'string') return hasNul(v) ? at || 'the input' : null;
  if (Array.isArray(v)) {
    for (const [i, x] of v.entries()) {
      const p = nulPath(x, `${at}[${i}]`);
      if (p !== null) return p;
    }
    return null;
  }
  if (v !== null && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      if (hasNul(k)) return `${at ? `${at}.` : ''}${JSON.stringify(k).slice(0, 64)}`;
      const p = nulPath(x, at ? `${at}.${k}` : k);
      if (p !== null) return p;
    }
  }
  return null;
}
