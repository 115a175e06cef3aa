// The parse of one file's text by one schema, kept per (schema, file) until the text changes.
// The supervisor reads the run record, the app state and the release marker on every pass (an
// exit's respawn waits on them) and `status` reads them on every heartbeat; the text is read
// each time, but a check of the same text gives the same answer, and it cost most
// of the time from an exit to its replacement's spawn after the reads themselves (issue 8
// row 4). Keyed by the whole text, not by the file's identity: nothing but the exact bytes
// decides. One entry per file (the last good text), so the memory is bounded by the files read.
// Every answer is a fresh copy: a caller that changes its result changes nothing kept.
const kept = new WeakMap<object, Map<string, { text: string; value: unknown }>>();

export function cachedParse<T>(schema: object, file: string, text: string): T | undefined {
  const hit = kept.get(schema)?.get(file);
  return hit && hit.text === text ? (structuredClone(hit.value) as T) : undefined;
}

// Keeps `value`, what `text` of `file` gave once every check passed.
export function keepParse<T>(schema: object, file: string, text: string, value: T): void {
  let m = kept.get(schema);
  if (!m) kept.set(schema, (m = new Map()));
  m.set(file, { text, value: structuredClone(value) });
}
