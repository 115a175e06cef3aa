// How failed authentications slow a source down (docs/design.md §12: slowed, never locked out).
// A failure is answered only after a delay that doubles with the source's recent failures; a
// right token is answered at once, whatever failures came before it. A source with
// MAX_PENDING_FAILURES failures still waiting for their answer gets 429 for its next
// credentials, unchecked, until one of them is answered: so guesses sent in parallel are
// bounded too (32 per 10 s at most), and so are the store writes they cost.
// Failures older than the window are forgotten, and a success does not reset the count (else
// a holder of one valid token could clear the way for guessing another).
export const FAILURE_WINDOW_MS = 15 * 60_000;
export const FAILURE_DELAY_BASE_MS = 250;
export const FAILURE_DELAY_CAP_MS = 10_000;
export const MAX_PENDING_FAILURES = 32;

// The delay before answering a source's `failures`-th recent failure: none for the first, then
// 250 ms, 500 ms, 1 s, ... up to 10 s.
export function failureDelayMs(failures: number): number {
  if (!Number.isSafeInteger(failures) || failures <= 1) return 0;
  return Math.min(FAILURE_DELAY_CAP_MS, FAILURE_DELAY_BASE_MS * 2 ** Math.min(failures - 2, 30));
}
