// `steward-control trust status` for a human: what the repository's metadata says (versions,
// keys, thresholds, expiries with the days left, a warning under 30 days), what is pending and
// who still must sign it, each app's delegation, the timestamp's age and the nodes by scheme.
import type { TrustStatus } from './api.js';
import { countLines, countSignatures, delegationOf, describeRoot, describeTargets, signerGroups } from './offline.js';

const HOUR_MS = 3_600_000;

function ageText(ms: number): string {
  if (ms < 120_000) return `${Math.round(ms / 1000)} s`;
  if (ms < 2 * HOUR_MS) return `${Math.round(ms / 60_000)} min`;
  return `${(ms / HOUR_MS).toFixed(1)} h`;
}

export function renderStatus(s: TrustStatus, now: number): string[] {
  const lines: string[] = [];
  if (!s.root && !s.pending.root) return ['no TUF repository: hosts verify releases with per-app keys (the keys scheme); `steward-control trust init` makes one'];
  if (s.root) lines.push(...describeRoot(s.root, now));
  else lines.push('no root published yet');
  if (s.targets) lines.push(...describeTargets(s.targets, now));
  for (const role of ['root', 'targets'] as const) {
    const md = s.pending[role];
    if (!md) continue;
    lines.push(`PENDING ${role} v${md.signed.version}:`, ...(role === 'root' ? describeRoot(s.pending.root!, now) : describeTargets(s.pending.targets!, now)).slice(1).map((l) => '  ' + l));
    lines.push(...countLines(countSignatures(md, signerGroups(s, role))).map((l) => '  ' + l), '  still to sign: a key holder runs `steward-control trust sign-root --key <key>.pem`');
  }
  const apps = new Set<string>([...s.delegations.map((d) => d.app)]);
  for (const r of Object.values(s.targets?.signed.delegations?.roles ?? {})) if (r.name.startsWith('app.')) apps.add(r.name.slice(4));
  for (const app of [...apps].sort()) {
    const d = delegationOf(s.targets, app);
    const md = s.delegations.find((x) => x.app === app)?.metadata ?? null;
    const head = d ? `app ${app}: ${d.threshold} of ${d.keys.length} keys (${d.keys.map((k) => k.keyID.slice(0, 16)).join(', ')})` : `app ${app}: not delegated by the published targets`;
    if (!md) lines.push(`${head}; no release signed under TUF yet`);
    else {
      const days = Math.floor((Date.parse(md.signed.expires) - now) / 86_400_000);
      lines.push(`${head}; targets v${md.signed.version}, ${Object.keys(md.signed.targets).length} targets, expires ${md.signed.expires} (${days < 0 ? 'EXPIRED' : `in ${days} days`}${days >= 0 && days < 30 ? ', WARNING: under 30 days: sign a release or re-run release add' : ''})`);
    }
  }
  const ts = s.raw['timestamp'] as { version?: number; signedAt?: string | number } | null | undefined;
  if (ts && ts.signedAt !== undefined) {
    const at = typeof ts.signedAt === 'number' ? ts.signedAt : Date.parse(ts.signedAt);
    const age = now - at;
    lines.push(`timestamp v${ts.version ?? '?'} signed ${ageText(age)} ago${age > 2 * HOUR_MS ? ' (WARNING: over 2 h: is any steward-control instance running? hosts report metadata-stale)' : ''}`);
  } else if (s.root) lines.push('timestamp: none signed yet');
  const nodes = s.raw['nodes'] as { byScheme?: Record<string, number>; metadataStale?: number } | undefined;
  if (nodes) {
    const by = Object.entries(nodes.byScheme ?? {}).map(([k, v]) => `${k} ${v}`).join(', ') || 'none';
    lines.push(`nodes by scheme: ${by}; metadata-stale: ${nodes.metadataStale ?? 0}`);
  }
  return lines;
}
