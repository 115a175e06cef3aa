// One `npm run package` at a time into a folder: a second would remove the first's .work folder
// under it and write the same .debs. The lock is the helper's (src/platform/lock.ts): a folder
// with its owner's identity, refreshed while held, taken over at once when its owner is dead (a
// build that was killed blocks nobody), never while it is alive.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { StewardError } from '../../src/core/errors.js';
import { acquireHelperLock } from '../../src/platform/lock.js';

export const BUILD_LOCK = '.package.lock';

// Runs `fn` holding `out`'s build lock, and gives it up when `fn` ends, however it ends. Another
// build holding it is BUSY, naming it.
export async function withBuildLock<T>(out: string, fn: () => Promise<T>): Promise<T> {
  mkdirSync(out, { recursive: true });
  let lost: Error | null = null;
  const held = await acquireHelperLock(path.join(out, BUILD_LOCK), {
    holder: 'npm run package',
    lockedCode: 'BUSY',
    // Another process took it (its folder was removed by hand, say): this build's output can no
    // longer be trusted to be its own.
    onCompromised: (err) => {
      lost = err;
    },
  }).catch((err: unknown) => {
    if (err instanceof StewardError && err.code === 'BUSY') throw new StewardError('BUSY', `${err.message}: wait for it to end, or build elsewhere with --out DIR`);
    throw err;
  });
  try {
    const result = await fn();
    if (lost) throw new StewardError('BUSY', `the build lock on ${out} was taken away during the build (${(lost as Error).message}): build again`);
    return result;
  } finally {
    await held.release();
  }
}
