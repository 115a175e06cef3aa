// The check of one file's text by one checker (a core/checker.ts Checker or a zod schema), kept
// per (checker, file) until the text changes. The supervisor reads the run record, the app state and the release marker on every
// pass (an exit's respawn waits on them) and `status` reads them on every heartbeat; the text
// is read each time, but a check of the same text gives the same answer, and it cost most
// of the time from an exit to its replacement's spawn after the reads themselves (issue 8
// row 4). Keyed by the whole text, not by the file's identity: nothing but the exact bytes
// decides. One entry per file (the last good text), so the memory is bounded by the files read.
// Every answer is a fresh copy: a caller that changes its result changes nothing kept.
const kept = new WeakMap<object, Map<string, { text: string; value: unknown }>>();

export function cachedParse<T>(checker: object, file: string, text: string): T | undefined {
  const hit = kept.get(checker)?.get(file);
  return hit && hit.text === text ? (structuredClone(hit.value) as T) : undefined;
}

// Keeps `value`, what `text` of `file` gave once every check passed.
export function keepParse<T>(checker: object, file: string, text: string, value: T): void {
  let m = kept.get(checker);
  if (!m) kept.set(checker, (m = new Map()));
  m.set(file, { text, value: structuredClone(value) });
}
