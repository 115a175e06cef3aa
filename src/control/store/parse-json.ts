import { labelsSchema } from '../../core/control-api.js';
import type { Labels } from '../../core/labels.js';

// JSON text from a column, or `fallback` when it does not parse (a row is never trusted blindly).
export function parseJson<T>(text: unknown, fallback: T): T {
  if (typeof text !== 'string') return fallback;
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
}

// A labels column: the labels it holds, or none when it holds no valid labels.
export function parseLabels(text: unknown): Labels {
  const labels = labelsSchema.safeParse(parseJson<unknown>(text, {}));
  return labels.success ? labels.data : {};
}
