import { promises as fsp } from 'node:fs';
import { StewardError } from '../core/errors.js';
import { readRegularFile } from '../platform/fs-atomic.js';
import { LAUNCHER, LIB_DIR, type Step } from './install-layout.js';
import { removeIfPresent, writeIfChanged } from './root-files.js';

// /usr/local/bin/agentctl: a sh launcher of the installed agentctl, so that `sudo agentctl ...`
// works after install (/usr/local/bin is on sudo's secure_path and on every login PATH). It runs
// the node the units run, on the code in /opt/steward/lib, never the checkout install ran from.

// The line that makes the file steward's: install rewrites and uninstall removes only such a file.
const MARK = '# steward: written by `agentctl install`, removed by `agentctl uninstall`';

// The launcher's bytes.
export function launcherScript(): Buffer {
  return Buffer.from(`#!/bin/sh\n${MARK}\nexec /usr/bin/node ${LIB_DIR}/bin/agentctl.js "$@"\n`);
}

// What is at `target`: 'absent', 'ours' (steward's launcher), or what someone else's file is.
async function inspect(target: string): Promise<string> {
  try {
    const file = await readRegularFile(target, 64 * 1024);
    if (!file) return 'absent';
    return file.bytes.toString('utf8').split('\n').includes(MARK) ? 'ours' : 'a file that is not steward\'s launcher';
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') return `a symlink to ${await fsp.readlink(target)} (npm link?)`;
    if (code === 'EINVAL' || code === 'EFBIG') return 'not steward\'s launcher';
    throw err;
  }
}

// Writes the launcher at `target`. Idempotent ('unchanged' when it is there as written). Someone
// else's file or symlink there is left as it is ('skipped'), as is a read-only /usr.
export async function installLauncher(target = LAUNCHER): Promise<Pick<Step, 'action' | 'detail'>> {
  const found = await inspect(target);
  if (found !== 'absent' && found !== 'ours') {
    return { action: 'skipped', detail: `${target} is ${found}: left as it is; run ${LIB_DIR}/bin/agentctl.js, or remove it and install again` };
  }
  try {
    return { action: await writeIfChanged(target, launcherScript(), 0o755), detail: `${target} (runs ${LIB_DIR}/bin/agentctl.js)` };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EROFS') {
      return { action: 'skipped', detail: `${target} is on a read-only file system: run ${LIB_DIR}/bin/agentctl.js` };
    }
    if (err instanceof StewardError && err.code === 'ROOT_UNSAFE') {
      // A launcher root runs must not sit where another user could swap it; the rest of the
      // install does not depend on it.
      return { action: 'skipped', detail: `${err.message}; run ${LIB_DIR}/bin/agentctl.js` };
    }
    throw err;
  }
}

// Removes the launcher at `target` if it is steward's; someone else's file is left ('skipped').
export async function removeLauncher(target = LAUNCHER): Promise<Pick<Step, 'action' | 'detail'>> {
  const found = await inspect(target);
  if (found === 'absent') return { action: 'absent', detail: target };
  if (found !== 'ours') return { action: 'skipped', detail: `${target} is ${found}: left as it is` };
  return { action: await removeIfPresent(target), detail: target };
}
