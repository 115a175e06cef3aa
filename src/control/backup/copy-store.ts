// `steward-control copy`: a store copied into an empty store (SQLite to PostgreSQL, the move
// docs/design.md §13 plans for) from one consistent snapshot, without a file in between. A copy is a
// move: nodes keep their identities and seqs, and running rollouts go on where they were, so
// the source's serve must be stopped before (what it accepts after the snapshot is not copied).
import { StewardError } from '../../core/errors.js';
import { openLoader, openSnapshot } from '../store/open-store.js';
import { dumpStore, type Progress } from './dump-store.js';
import { loadStore, type Loaded } from './load-store.js';

export interface CopyOutcome extends Loaded {
  from: string;
  to: string;
  schemaVersion: number;
  migratedTo: number;
  takenAt: number;
}

// Copies the store at `from` (tarballs in `fromArtifacts`) into the empty one at `to` (`toArtifacts`).
export async function copyStore(o: { from: string; to: string; fromArtifacts: string; toArtifacts: string; progress: Progress }): Promise<CopyOutcome> {
  if (o.from === o.to) throw new StewardError('USAGE', `--from and --to name the same database ${o.from}`);
  const snapshot = await openSnapshot(o.from);
  try {
    const loader = await openLoader(o.to);
    if (snapshot.schemaVersion > loader.newest) {
      await loader.abort();
      throw new StewardError('STATE_INVALID', `${snapshot.location} has schema version ${snapshot.schemaVersion}, newer than ${loader.newest} which this steward-control knows: copy it with a newer steward-control`);
    }
    const loaded = await loadStore(loader, snapshot.schemaVersion, dumpStore(snapshot, o.fromArtifacts, () => undefined), {
      artifactsDir: o.toArtifacts,
      progress: o.progress,
      settle: { mode: 'copy', from: snapshot.location, takenAt: snapshot.takenAt, location: loader.location },
    });
    return { from: snapshot.location, to: loader.location, schemaVersion: snapshot.schemaVersion, migratedTo: loader.newest, takenAt: snapshot.takenAt, ...loaded };
  } finally {
    await snapshot.close();
  }
}
