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

type Summary = { version?: number; expires?: string; keyids?: string[]; threshold?: number; targets?: { keyids?: string[]; threshold?: number }; signatures?: Array<{ role: string; have: number; need: number; keyids: string[] }> };

function days(iso: string | undefined, now: number): string {
  if (!iso) return '';
  const d = Math.floor((Date.parse(iso) - now) / 86_400_000);
  return ` (${d < 0 ? `EXPIRED ${-d} days ago` : `in ${d} days`}${d >= 0 && d < 30 ? ', WARNING: under 30 days' : ''})`;
}

// What the server summarizes when it sends no metadata (its status as built on the server's branch).
function summaryLines(s: TrustStatus, now: number): string[] {
  const raw = s.raw as { root?: Summary | null; targets?: Summary | null; pending?: Record<string, Summary | null>; apps?: Array<{ app: string; keyids?: string[]; threshold?: number; version?: number | null; expires?: string | null }> };
  const lines: string[] = [];
  const r = raw.root;
  if (!s.root && r && r.version !== undefined) {
    lines.push(`root v${r.version}, expires ${r.expires}${days(r.expires, now)}`, `  root: ${r.threshold} of ${r.keyids?.length ?? 0}: ${(r.keyids ?? []).join(', ')}`);
    if (r.targets) lines.push(`  targets: ${r.targets.threshold} of ${r.targets.keyids?.length ?? 0}: ${(r.targets.keyids ?? []).join(', ')}`);
  }
  const t = raw.targets;
  if (!s.targets && t && t.version !== undefined) lines.push(`targets v${t.version}, expires ${t.expires}${days(t.expires, now)}`);
  for (const role of ['root', 'targets'] as const) {
    const p = raw.pending?.[role];
    if (s.pending[role] || !p || p.version === undefined) continue;
    lines.push(`PENDING ${role} v${p.version}:`, ...(p.signatures ?? []).map((x) => `  ${Math.min(x.have, x.need)} of ${x.need} signatures of ${x.role}'s keys; may sign: ${x.keyids.map((k) => k.slice(0, 16)).join(', ')}`), '  still to sign: a key holder runs `steward-control trust sign-root --key <key>.pem`');
  }
  if (!s.targets) for (const a of raw.apps ?? []) lines.push(`app ${a.app}: ${a.threshold} of ${a.keyids?.length ?? 0} keys (${(a.keyids ?? []).map((k) => k.slice(0, 16)).join(', ')}); ${a.version ? `targets v${a.version}, expires ${a.expires}${days(a.expires ?? undefined, now)}` : 'no release signed under TUF yet'}`);
  return lines;
}

export function renderStatus(s: TrustStatus, now: number): string[] {
  const lines: string[] = [];
  if (s.missing.length > 0) {
    lines.push(...summaryLines(s, now));
    return [...lines, ...tail(s, now)];
  }
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
  lines.push(...onlineKeyLines(s));
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
  return [...lines, ...tail(s, now)];
}

// The online keys the control plane signs with, and the new ones a rotation keeps pending.
function onlineKeyLines(s: TrustStatus): string[] {
  const inUse = s.raw['onlineKeys'] as Record<string, string> | null | undefined;
  const pending = s.raw['pendingOnlineKeys'] as Record<string, string> | null | undefined;
  // Only role names and key ids the server could mean are printed: its answer is not trusted text.
  const list = (m: Record<string, string>) =>
    Object.entries(m)
      .filter(([r, id]) => /^(snapshot|timestamp|director)$/.test(r) && typeof id === 'string' && /^[0-9a-f]{64}$/.test(id))
      .map(([r, id]) => `${r} ${id.slice(0, 16)}`)
      .join(', ');
  const lines: string[] = [];
  if (inUse && typeof inUse === 'object') lines.push(`online keys in use: ${list(inUse)}`);
  if (pending && typeof pending === 'object' && Object.keys(pending).length > 0) lines.push(`NEW online keys pending (in use once the root naming them is published): ${list(pending)}`);
  return lines;
}

// The timestamp's age and the nodes by scheme.
function tail(s: TrustStatus, now: number): string[] {
  const lines: string[] = [];
  const ts = s.raw['timestamp'] as { version?: number; signedAt?: string | number } | null | undefined;
  if (ts && ts.signedAt !== undefined) {
    const at = typeof ts.signedAt === 'number' ? ts.signedAt : Date.parse(ts.signedAt);
    const age = now - at;
    lines.push(`timestamp v${ts.version ?? '?'} signed ${ageText(age)} ago${age > 2 * HOUR_MS ? ' (WARNING: over 2 h: is any steward-control instance running? hosts report metadata-stale)' : ''}`);
  } else if (s.root || s.raw['root']) lines.push('timestamp: none signed yet');
  const nodes = s.raw['nodes'] as { byScheme?: Record<string, number>; metadataStale?: number; keys?: number; tuf?: number; unreported?: number } | undefined;
  if (nodes) {
    // {byScheme: {keys, tuf}} as agreed, or {keys, tuf, unreported} as the server's branch counts them.
    const counts = nodes.byScheme ?? Object.fromEntries(Object.entries(nodes).filter(([k, v]) => k !== 'metadataStale' && typeof v === 'number'));
    const by = Object.entries(counts).map(([k, v]) => `${k} ${v}`).join(', ') || 'none';
    lines.push(`nodes by scheme: ${by}; metadata-stale: ${nodes.metadataStale ?? 0}`);
  }
  return lines;
}
