// Valid local-API requests of every op (docs/design.md §7), the seeds that the near-valid inputs of the
// property suites are mutated from.
import fc from 'fast-check';
import type { Envelope } from '../../src/core/release-schemas.js';
import { FAKE_MANIFEST } from '../helpers/api-server-harness.js';

export const INTEGRITY = 'sha512-' + 'A'.repeat(86) + '==';

// One valid request per op, with every optional field of that op present in some entry.
export function validRequests(manifest: Envelope = FAKE_MANIFEST): Array<Record<string, unknown>> {
  const source = { app: 'web', version: '1.2.0', manifest };
  return [
    { v: 1, id: 1, op: 'status' },
    { v: 1, id: 'a', op: 'status', app: 'web' },
    { v: 1, id: 2, op: 'releases', app: 'web' },
    { v: 1, id: 3, op: 'receipts', app: 'web' },
    { v: 1, id: 4, op: 'stage', ...source, integrity: INTEGRITY, attemptId: 'cli-1' },
    { v: 1, id: 5, op: 'stage', ...source, upload: 3 },
    { v: 1, id: 6, op: 'update', ...source, noWait: true, by: 'ops', force: false },
    { v: 1, id: 7, op: 'update', app: 'web', version: '1.2.0', path: '/tmp/web.tgz', allowUnsigned: true, allowDowngrade: true },
    { v: 1, id: 8, op: 'rollback', app: 'web', noWait: true },
    { v: 1, id: 9, op: 'rollback', app: 'web', to: '1.0.0', attemptId: 'cli-2' },
    { v: 1, id: 10, op: 'recover', app: 'web', to: '1.0.0', by: 'ops' },
    { v: 1, id: 11, op: 'prune', app: 'web', keep: 3 },
    { v: 1, id: 12, op: 'release-hold', app: 'web' },
    { v: 1, id: 13, op: 'start', app: 'web', by: 'ops' },
    { v: 1, id: 14, op: 'stop', app: 'web' },
    { v: 1, id: 15, op: 'restart', app: 'web' },
    { v: 1, id: 16, op: 'agent-confirm', seq: 7, sentAt: 1_800_000_000_000 },
    { v: 1, id: 17, op: 'hold', app: 'web', reason: 'change freeze' },
    { v: 1, id: 18, op: 'hold', app: 'web', reason: 'change freeze', forMs: 3_600_000 },
  ];
}

export const validRequestArb = (manifest?: Envelope) => fc.constantFrom(...validRequests(manifest));
