import { constants as C, promises as fsp } from 'node:fs';
import path from 'node:path';
import { toStewardError } from '../../core/errors.js';
import type { StartSpec } from './runner.js';

// Creates the app's state folder (DESIGN §2: /var/lib/steward-apps/<app>) 0750, owned by the
// app user. The chown goes through an fd opened with O_NOFOLLOW, so a symlink the app user
// put in its place cannot hand root's chown to another path.
export async function prepareStateDir(spec: StartSpec, isRoot: boolean, what: string): Promise<void> {
  try {
    // The folder usually exists (every start after the first): one mkdir says so; its parent
    // is made only when it is missing.
    const made = await fsp.mkdir(spec.stateDir, { mode: 0o750 }).then(
      () => true,
      (err: NodeJS.ErrnoException) => {
        if (err.code === 'EEXIST') return true;
        if (err.code === 'ENOENT') return false;
        throw err;
      },
    );
    if (!made) {
      await fsp.mkdir(path.dirname(spec.stateDir), { recursive: true, mode: 0o755 });
      await fsp.mkdir(spec.stateDir, { mode: 0o750 }).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') throw err;
      });
    }
    const h = await fsp.open(spec.stateDir, C.O_RDONLY | C.O_DIRECTORY | C.O_NOFOLLOW);
    try {
      if (isRoot && spec.runAs) await h.chown(spec.runAs.uid, spec.runAs.gid);
      await h.chmod(0o750);
    } finally {
      await h.close();
    }
  } catch (err) {
    throw toStewardError(err, 'IO_ERROR', `cannot start ${what}: state folder ${spec.stateDir}`);
  }
}
