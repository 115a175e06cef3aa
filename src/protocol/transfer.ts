import type { StageResult, StageTransfer } from './schemas.js';

// How a stage's bytes came (docs/design.md §20), for the update answer and the CLI: what it fetched
// and reused; `staged` when the release was staged before and nothing was fetched.
export function transferOf(r: StageResult): StageTransfer {
  if (r.reused || r.via === undefined) return { via: 'staged', fetchedBytes: 0, reusedBytes: 0 };
  return { via: r.via, fetchedBytes: r.fetchedBytes ?? 0, reusedBytes: r.reusedBytes ?? 0, ...(r.patch ? { patch: r.patch } : {}) };
}
