import { StewardError } from '../../core/errors.js';

// Refuses a request whose rollout window has closed (docs/design.md §11): a stage or update carrying
// `notAfter` that would start at or after it, on the helper's own clock. A refusal: nothing is
// changed, and an attemptId gets a `refused` receipt WINDOW_CLOSED.
export function refuseClosedWindow(app: string, version: string | null, notAfter: number | undefined, now: number): void {
  if (notAfter === undefined || now < notAfter) return;
  throw new StewardError('WINDOW_CLOSED', `${app}${version ? ` ${version}` : ''}: its rollout window closed at ${new Date(notAfter).toISOString()} (now ${new Date(now).toISOString()}); the control plane asks again in the next window`);
}
