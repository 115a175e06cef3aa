// `steward-control restore`: a backup file into an empty store of either backend (docs/design.md §13,
// "Backups"), checked line by line as it loads in one transaction; a backup from a newer schema
// is refused, one from an older schema goes through the migrations after its version.
import path from 'node:path';
import { StewardError } from '../../core/errors.js';
import { openLoader } from '../store/open-store.js';
import type { Progress } from './dump-store.js';
import { loadStore, type Loaded } from './load-store.js';
import { readBackupVerifyKey } from './backup-key.js';
import { openBackupFile } from './read-backup-file.js';

export interface RestoreOutcome extends Loaded {
  db: string;
  from: string;
  source: 'sqlite' | 'postgres';
  takenAt: number;
  // The backup's schema version, and the one the store has now.
  schemaVersion: number;
  migratedTo: number;
  // The backup key that signed it.
  keyId: string;
}

// Restores the backup `from`, signed by the backup key in `keyFile`, into the empty store at
// `db`, its tarballs into `artifactsDir`.
export async function restoreStore(o: { from: string; db: string; artifactsDir: string; keyFile: string; progress: Progress }): Promise<RestoreOutcome> {
  const backup = await openBackupFile(o.from, readBackupVerifyKey(o.keyFile));
  try {
    const { header } = backup;
    const loader = await openLoader(o.db);
    if (header.schemaVersion > loader.newest) {
      await loader.abort();
      throw new StewardError(
        'STATE_INVALID',
        `${o.from} holds schema version ${header.schemaVersion}, newer than ${loader.newest} which this steward-control knows: restore it with the steward-control that took it, or a newer one`,
      );
    }
    const loaded = await loadStore(loader, header.schemaVersion, backup.events, {
      artifactsDir: o.artifactsDir,
      progress: o.progress,
      settle: { mode: 'restore', from: path.resolve(o.from), takenAt: header.takenAt, location: loader.location },
    });
    return { db: loader.location, from: o.from, source: header.source, takenAt: header.takenAt, schemaVersion: header.schemaVersion, migratedTo: loader.newest, keyId: header.keyId, ...loaded };
  } finally {
    backup.close();
  }
}
