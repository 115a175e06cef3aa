import { openStore } from '../../src/control/store/open-store.js';
import type { NewRun } from '../../src/control/store/store.js';
import type { Envelope } from '../../src/core/release-schemas.js';
import { ANALYSIS_OFF } from '../../src/core/run-analysis.js';

// A run of web `version` issued to every node of `nodeIds` at once, written straight into the
// database at `db` (as whoever holds it could: a compromised control plane), the active run of web
// stopped first, with a downgrade authorization stored for the version when given. The attempt
// ids it issued, `forged-<n>.<nodeId>`.
export async function forgeRun(db: string, nodeIds: readonly string[], n: number, version: string, authorization: Envelope | null = null): Promise<string[]> {
  const store = await openStore(db);
  try {
    return await store.write(async (tx) => {
      const now = await tx.now();
      const active = await tx.runs.active('web');
      if (active) await tx.runs.end(active.id, 'stopped', undefined, now);
      const run: NewRun = {
        app: 'web', version, startedAt: now, heartbeatIntervalMs: 1000, selector: '', canaries: 1, namedCanaries: [], canarySeed: 1, batch: '100%', bakeMs: 0,
        maxFailures: 3, maxRefused: '100%', maxFetchFailures: '20%', failuresCarried: 0, verdictTimeoutMs: 600_000, allowRetryReverted: false, windows: [], tz: 'UTC', startAt: null, behind: false, retryOf: null, analysis: ANALYSIS_OFF,
      };
      const id = await tx.runs.insert(run, nodeIds.map((nodeId) => ({ nodeId, lastHeartbeatAt: now, listedApp: true })));
      const ids: string[] = [];
      for (const nodeId of nodeIds) {
        const attemptId = `forged-${n}.${nodeId}`;
        await tx.runs.insertIssued(id, { nodeId, attemptId, issuedAt: now, notAfter: null, batch: 0 });
        ids.push(attemptId);
      }
      if (authorization) {
        const p = JSON.parse(Buffer.from(authorization.payload, 'base64').toString('utf8'));
        await tx.releases.putDowngrade({ app: 'web', version, keyId: authorization.keyId, notAfter: p.notAfter, authorization, addedAt: now });
      }
      return ids;
    });
  } finally {
    await store.close();
  }
}
