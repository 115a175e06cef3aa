import { closeSync, constants as C, fchmodSync, fchownSync, mkdirSync, openSync } from 'node:fs';
import path from 'node:path';
import { toStewardError } from '../../core/errors.js';
import type { StartSpec } from './runner.js';

// Creates the app's state folder (docs/design.md §2: /var/lib/steward-apps/<app>) 0750, owned by the
// app user. The chown goes through an fd opened with O_NOFOLLOW, so a symlink the app user
// put in its place cannot hand root's chown to another path.
// Synchronous: every start (a respawn's included) waits on it, and these are a few local
// metadata calls of microseconds each, where each async call was a thread-pool round trip
// (issue 8 row 4: 0.2-0.5 ms each on a loaded 2-core host, more than the calls themselves).
export function prepareStateDirSync(spec: StartSpec, isRoot: boolean, what: string): void {
  try {
    // The folder usually exists (every start after the first): one mkdir says so; its parent
    // is made only when it is missing.
    if (!mkdirUnlessExists(spec.stateDir)) {
      mkdirSync(path.dirname(spec.stateDir), { recursive: true, mode: 0o755 });
      mkdirUnlessExists(spec.stateDir);
    }
    const fd = openSync(spec.stateDir, C.O_RDONLY | C.O_DIRECTORY | C.O_NOFOLLOW);
    try {
      if (isRoot && spec.runAs) fchownSync(fd, spec.runAs.uid, spec.runAs.gid);
      fchmodSync(fd, 0o750);
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    throw toStewardError(err, 'IO_ERROR', `cannot start ${what}: state folder ${spec.stateDir}`);
  }
}

// mkdir 0750; true when the folder now exists (made or already there), false when its parent
// is missing.
function mkdirUnlessExists(dir: string): boolean {
  try {
    mkdirSync(dir, { mode: 0o750 });
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return true;
    if (code === 'ENOENT') return false;
    throw err;
  }
}
