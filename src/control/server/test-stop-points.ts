// TEST ONLY. Named points where a steward-control process stops itself (SIGSTOP), so that a
// test can SIGKILL it exactly there (docs/design.md §13: killing an instance at any moment loses
// nothing and issues nothing twice). Armed by STEWARD_CONTROL_TEST_STOP_AT=<point>[:<n>] (stop
// the n-th time the point is reached; default the first), and only together with
// STEWARD_CONTROL_TEST_HOOKS=1: without it, a set STOP_AT is refused and serve does not start,
// so a stray variable on a production host cannot freeze the control plane.
import { writeSync } from 'node:fs';
import { StewardError } from '../../core/errors.js';

export const STOP_POINTS = [
  // A tick holds a run's lock and is about to issue a batch; nothing of it written yet.
  'issue-before',
  // Between two attempts of one batch.
  'issue-during',
  // Every attempt of the batch written, the tick's COMMIT not sent.
  'issue-before-commit',
  // The tick that issued has committed.
  'issue-after-commit',
  // A heartbeat batch holding verdicts is written, its COMMIT not sent.
  'heartbeat-before-commit',
] as const;

export type StopPoint = (typeof STOP_POINTS)[number];

// Called at each point; stops the process when it is the armed one.
export type StopPoints = (point: StopPoint) => void;

// The stop points `env` arms, or null when none is.
export function stopPointsFromEnv(env: NodeJS.ProcessEnv): StopPoints | null {
  const spec = env.STEWARD_CONTROL_TEST_STOP_AT;
  if (!spec) return null;
  if (env.STEWARD_CONTROL_TEST_HOOKS !== '1') {
    throw new StewardError('USAGE', 'STEWARD_CONTROL_TEST_STOP_AT is a test hook and is refused unless STEWARD_CONTROL_TEST_HOOKS=1 is set too; unset it');
  }
  const m = /^([a-z-]+)(?::([1-9]\d{0,5}))?$/.exec(spec);
  const armed = m?.[1] as StopPoint | undefined;
  if (!armed || !STOP_POINTS.includes(armed)) throw new StewardError('USAGE', `STEWARD_CONTROL_TEST_STOP_AT=${JSON.stringify(spec)}: not one of ${STOP_POINTS.join(', ')} (with :<n> for the n-th time)`);
  let left = Number(m![2] ?? 1);
  return (point) => {
    if (point !== armed || --left !== 0) return;
    // Why writeSync: the line must be out before the process stops, for the test to see it.
    writeSync(2, `steward-control test hook: stopped at ${point} pid=${process.pid}\n`);
    process.kill(process.pid, 'SIGSTOP');
  };
}
