import { spawnSync } from 'node:child_process';
import type { TestContext } from 'node:test';
import { skipUnlessCI } from '../helpers/skip.js';

// States checked per scenario, and the sampling seed: STEWARD_CRASH_CAP and STEWARD_CRASH_SEED
// override them (a failing run prints its seed, so it can be replayed).
export function crashCap(): number {
  return Number(process.env.STEWARD_CRASH_CAP) || 150;
}
// States checked per mutation test: enough to meet a violation, which is all it must show.
export function mutationCap(): number {
  return Math.min(crashCap(), 50);
}
export function crashSeed(): number {
  return Number(process.env.STEWARD_CRASH_SEED) || 7;
}

// strace is needed to record a run. Without it the test is skipped with a reason, except under
// CI=true, where a missing strace fails (.ci/run installs it).
export function requireStrace(t: TestContext): boolean {
  const ok = spawnSync('strace', ['-V'], { stdio: 'ignore' }).status === 0;
  if (ok) return true;
  skipUnlessCI(t, 'strace is not installed (apt-get install strace): the crash explorer cannot record a run');
  return false;
}
