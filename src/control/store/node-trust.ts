// A node's trust report (docs/design.md §21.2) as both backends keep it: the heartbeat's `trust`
// as JSON text in nodes.trust, and when it was reported in nodes.trustAt.
import { trustReportSchema } from '../../core/heartbeat-schema.js';
import { parseJson } from './parse-json.js';
import type { NodeTrust } from './store.js';

export interface NodeTrustColumns {
  trust: string | null;
  trustAt: number | null;
}

// The row's report, or null for none (or text no steward-control wrote).
export function nodeTrustOf(r: NodeTrustColumns): NodeTrust | null {
  if (r.trust === null || r.trustAt === null) return null;
  const parsed = trustReportSchema.safeParse(parseJson<unknown>(r.trust, null));
  return parsed.success ? { ...parsed.data, at: Number(r.trustAt) } : null;
}

export function withNodeTrust<R extends NodeTrustColumns>(r: R): Omit<R, 'trust' | 'trustAt'> & { trust: NodeTrust | null } {
  const { trust: _t, trustAt: _a, ...rest } = r;
  return { ...rest, trust: nodeTrustOf(r) };
}
