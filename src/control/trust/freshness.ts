// Whether a host's TUF metadata is stale (docs/design.md §21.2): a node that trusts by `tuf` whose
// newest valid timestamp is older than two re-sign periods (2 h), or that has none, while the
// fleet has a repository. The age is the one its latest heartbeat reported (a node that stops
// heartbeating is shown stale by its heartbeat's own age, docs/design.md §12).
import { TIMESTAMP_RESIGN_MS } from '../../core/trust/roles.js';
import type { NodeRow } from '../store/store.js';

export const METADATA_STALE_AFTER_MS = 2 * TIMESTAMP_RESIGN_MS;

export function isMetadataStale(node: Pick<NodeRow, 'trust'>, fleetHasRepository: boolean): boolean {
  const t = node.trust;
  if (!fleetHasRepository || !t || t.scheme !== 'tuf') return false;
  return t.timestampAgeSeconds === undefined || t.timestampAgeSeconds * 1000 > METADATA_STALE_AFTER_MS;
}
