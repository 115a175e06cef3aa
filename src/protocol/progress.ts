// One step of a long op (stage, update, rollback, recover), in the one shape it keeps from
// staging and the transaction, through the socket (docs/design.md §7: the line is
// {"id", "event":"progress", ...this}) to agentctl's progress bar. The platform adapters below
// staging count bytes only; staging names the phase and the attempt.
export interface Progress {
  attemptId: string;
  // fetch, extract, commit; stop-old, swap, start; stop-new, swap-back, start-old. From the
  // socket it is any text.
  phase: string;
  // Absent when unknown.
  bytes?: number;
  total?: number;
}
