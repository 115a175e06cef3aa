// `steward-control backup`: one consistent snapshot of the store (either backend) written to a
// backup file with the kept tarballs its releases name.
import { readOwnVersion } from '../../platform/own-version.js';
import { openSnapshot } from '../store/open-store.js';
import { dumpStore, type Progress } from './dump-store.js';
import { refuseExistingOutput, writeBackupFile } from './write-backup-file.js';
import { BACKUP_FORMAT, BACKUP_FORMAT_VERSION } from './backup-format.js';
import { readBackupSigningKey } from './backup-key.js';

export interface BackupOutcome {
  db: string;
  out: string;
  source: 'sqlite' | 'postgres';
  schemaVersion: number;
  takenAt: number;
  tables: Record<string, number>;
  artifacts: number;
  bytes: number;
  // The backup key that signed it.
  keyId: string;
}

// Writes a backup of the store at `db` (its tarballs in `artifactsDir`) to `out`, signed by the
// backup key's private half in `keyFile`.
export async function backupStore(o: { db: string; artifactsDir: string; out: string; force: boolean; keyFile: string; progress: Progress }): Promise<BackupOutcome> {
  refuseExistingOutput(o.out, o.force);
  const key = readBackupSigningKey(o.keyFile);
  const snapshot = await openSnapshot(o.db);
  const tables: Record<string, number> = {};
  let artifacts = 0;
  try {
    const header = { format: BACKUP_FORMAT, formatVersion: BACKUP_FORMAT_VERSION, schemaVersion: snapshot.schemaVersion, takenAt: snapshot.takenAt, source: snapshot.backend, stewardVersion: readOwnVersion(), keyId: key.keyId } as const;
    async function* counted() {
      for await (const e of dumpStore(snapshot, o.artifactsDir, o.progress)) {
        if (e.kind === 'tableEnd') tables[e.table] = e.rows;
        if (e.kind === 'artifact') artifacts++;
        yield e;
      }
    }
    const written = await writeBackupFile(o.out, header, counted(), { force: o.force, key });
    return { db: snapshot.location, out: o.out, source: snapshot.backend, schemaVersion: snapshot.schemaVersion, takenAt: snapshot.takenAt, tables, artifacts, bytes: written.bytes, keyId: key.keyId };
  } finally {
    await snapshot.close();
  }
}
