import * as z from './zod-mini.js';

// apps.<app>.memoryMax (docs/design.md §17 "Memory"): a byte count as an integer, or a string of
// digits with an optional binary suffix K, M, G or T (`512M` = 512 MiB), as systemd's MemoryMax=
// and the kernel's own files take them. Anything else is refused: a limit an operator set to
// protect a host must never be read as something else than what was meant.

// Below this a process cannot start at all (an idle `node` is ~40 MB), so a smaller limit is a
// typo (`64K` for `64M`), never a wish: refused rather than an app that is OOM-killed at once.
export const MEMORY_MAX_MIN_BYTES = 1024 * 1024;
// The kernel stores a limit in pages as a 64-bit count; above 2^53 a JSON number is not exact.
export const MEMORY_MAX_MAX_BYTES = Number.MAX_SAFE_INTEGER;

const UNITS: Record<string, number> = { '': 1, K: 1024, M: 1024 ** 2, G: 1024 ** 3, T: 1024 ** 4 };
const SIZE_RE = /^([0-9]{1,16})([KMGT]?)$/;

// The byte count that `value` names, or a sentence saying why it names none.
export function parseMemorySize(value: unknown): number | string {
  let bytes: number;
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) return 'a whole number of bytes, or a string like "512M"';
    bytes = value;
  } else if (typeof value === 'string') {
    const m = SIZE_RE.exec(value);
    if (!m) return `${JSON.stringify(value.slice(0, 40))} is not a size: digits with an optional K, M, G or T (like "512M")`;
    bytes = Number(m[1]) * (UNITS[m[2] ?? ''] ?? 1);
    if (!Number.isSafeInteger(bytes)) return `${JSON.stringify(value)} is too large`;
  } else {
    return 'a whole number of bytes, or a string like "512M"';
  }
  if (bytes <= 0) return 'must be above 0 (leave memoryMax out for no limit)';
  if (bytes < MEMORY_MAX_MIN_BYTES) return `${bytes} bytes is below the smallest limit, 1M (1048576 bytes): no process starts in that`;
  return bytes;
}

// The schema of memoryMax: takes a number or a string, gives bytes.
export const memoryMaxSchema = z.pipe(
  z.unknown(),
  z.transform((v: unknown, ctx) => {
    const r = parseMemorySize(v);
    if (typeof r === 'number') return r;
    ctx.issues.push({ code: 'custom', message: r, input: v });
    return z.NEVER;
  }),
);

// A byte count as people write it (the largest binary unit that divides it): 536870912 is "512M".
export function formatMemorySize(bytes: number): string {
  for (const unit of ['T', 'G', 'M', 'K'] as const) {
    const n = UNITS[unit] as number;
    if (bytes >= n && bytes % n === 0) return `${bytes / n}${unit}`;
  }
  return String(bytes);
}
