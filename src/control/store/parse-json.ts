// JSON text from a column, or `fallback` when it does not parse (a row is never trusted blindly).
export function parseJson<T>(text: unknown, fallback: T): T {
  if (typeof text !== 'string') return fallback;
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
}
