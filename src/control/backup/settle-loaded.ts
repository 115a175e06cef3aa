// What a restore or a copy changes in the rows it loaded, in their transaction, at the newest
// schema (docs/design.md §13, "Backups"):
// - each release that keeps a tarball names where the target keeps it now (and must have come
//   along: a catalog pointing at a missing tarball is refused);
// - restore: every run that was running when the backup was taken is stopped, with a reason an
//   operator can read, for an operator to retry. What such a run issued after the backup is
//   not known here, so it must not go on by itself; a copy is a move and keeps its runs;
// - the change is in the audit log, as every change is (docs/design.md §12).
// Nodes keep their identities and seqs as they were: a heartbeat whose seq is not above the
// restored lastSeq is answered 409 with it, and the agent jumps past it.
import { StewardError } from '../../core/errors.js';
import { localActor, recordAudit } from '../audit/record-audit.js';
import type { LoadedTx } from '../store/bulk.js';

// A run's haltCode once a restore stopped it.
const RESTORED_HALT = 'RESTORED';

export interface SettleOptions {
  mode: 'restore' | 'copy';
  // Where the rows came from (the backup file, or the source database), and when they were read.
  from: string;
  takenAt: number;
  // The target, for the audit log.
  location: string;
  // Where each tarball is now, by `app@version`.
  artifacts: Map<string, string>;
}

export interface RunRef {
  id: number;
  app: string;
  version: string;
}

export interface Settled {
  // restore: the runs it stopped; copy: none.
  stoppedRuns: RunRef[];
  // copy: the runs that go on where they were; restore: none.
  runningRuns: RunRef[];
  // Enrollment tokens unspent, unrevoked and unexpired in the rows: one spent after the backup
  // is spendable again.
  openTokens: number;
}

// Settles the loaded rows (see above).
export async function settleLoaded(tx: LoadedTx, o: SettleOptions): Promise<Settled> {
  for (const r of await tx.releases.list()) {
    if (r.artifactPath === null) continue;
    const at = o.artifacts.get(`${r.app}@${r.version}`);
    if (at === undefined) throw new StewardError('BACKUP_INVALID', `release ${r.app} ${r.version} keeps a tarball that ${o.from} does not hold`);
    if (at !== r.artifactPath) await tx.releases.upsert({ ...r, artifactPath: at });
  }
  const now = await tx.now();
  const running = (await tx.runs.activeAll()).map((r) => ({ id: r.id, app: r.app, version: r.version }));
  if (o.mode === 'restore') {
    const taken = new Date(o.takenAt).toISOString();
    for (const run of running) {
      await tx.runs.setStopped(run.id);
      await tx.runs.end(run.id, 'stopped', {
        code: RESTORED_HALT,
        message: `restored from a backup taken at ${taken}, while this run was running; what it issued after that is not known here, so it was stopped: \`steward-control rollout retry ${run.app}\` asks the nodes it did not confirm again`,
      }, now);
    }
  }
  const openTokens = (await tx.tokens.list()).filter((t) => t.usedAt === null && t.revokedAt === null && t.expiresAt > now).length;
  const settled: Settled = { stoppedRuns: o.mode === 'restore' ? running : [], runningRuns: o.mode === 'copy' ? running : [], openTokens };
  await recordAudit(tx, localActor(), o.mode === 'restore' ? 'store.restore' : 'store.copy', o.location, {
    from: o.from,
    takenAt: o.takenAt,
    stoppedRuns: settled.stoppedRuns.map((r) => r.id),
    runningRuns: settled.runningRuns.map((r) => r.id),
  });
  return settled;
}
