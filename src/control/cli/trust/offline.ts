// The offline side of the trust ceremony (docs/design.md §21.2, docs/trust.md): public key files
// read as TUF keys, private keys read to sign here and never sent, what a pending root or
// targets asks of whom, and what a human checks before signing it.
import { createPublicKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Key, Metadata, Root, Targets } from '@tufjs/models';
import { StewardError } from '../../../core/errors.js';
import { DIRECTOR_FIELD, delegatedRoleName } from '../../../core/trust/roles.js';
import { parsePrivateKey } from '../../../platform/keys.js';
import { signatureCount, tufKeyIdOf, tufKeyOf } from '../../../platform/trust/tuf-keys.js';
import type { PendingRole, TrustStatus } from './api.js';

const DAY_MS = 86_400_000;

// The Ed25519 public keys of a comma-separated list of PEM files, as TUF keys: each file must
// hold a public key (a private key is refused: it is not needed, and should not be on the
// command line of a command that sends what it reads), no key twice.
export function readPublicKeys(list: string, flag: string): Array<{ file: string; key: Key }> {
  const files = list
    .split(',')
    .map((f) => f.trim())
    .filter((f) => f.length > 0);
  if (files.length === 0) throw new StewardError('USAGE', `${flag} names no key file`);
  const out: Array<{ file: string; key: Key }> = [];
  for (const file of files) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new StewardError('NOT_FOUND', `${flag}: cannot read ${file}: ${(err as Error).message}`, { cause: err });
    }
    if (/PRIVATE KEY/.test(text)) throw new StewardError('USAGE', `${flag}: ${file} holds a private key; pass its public key (the .pub file), and keep the private key offline`);
    let pub: KeyObject;
    try {
      pub = createPublicKey(text);
    } catch (err) {
      throw new StewardError('USAGE', `${flag}: ${file} is not an Ed25519 public key (PEM): ${(err as Error).message}`, { cause: err });
    }
    if (pub.asymmetricKeyType !== 'ed25519') throw new StewardError('USAGE', `${flag}: ${file} is not an Ed25519 public key (PEM) but ${pub.asymmetricKeyType}`);
    const key = tufKeyOf(pub);
    const twice = out.find((o) => o.key.keyID === key.keyID);
    if (twice) throw new StewardError('USAGE', `${flag}: ${file} and ${twice.file} are the same key (${key.keyID}); each key counts once toward a threshold`);
    out.push({ file, key });
  }
  return out;
}

// A threshold of `n` keys: from 1 to n.
export function checkThreshold(threshold: number, n: number, flag: string, keysFlag: string): number {
  if (!Number.isSafeInteger(threshold) || threshold < 1) throw new StewardError('USAGE', `${flag} ${threshold}: a threshold is at least 1`);
  if (threshold > n) throw new StewardError('USAGE', `${flag} ${threshold} is more than the ${n} key${n === 1 ? '' : 's'} of ${keysFlag}: it could never be met`);
  return threshold;
}

// An Ed25519 private key (PEM) to sign with here; it is never sent.
export function readPrivateKey(file: string, flag = '--key'): KeyObject {
  let text: Buffer;
  try {
    text = readFileSync(file);
  } catch (err) {
    throw new StewardError('NOT_FOUND', `cannot read the key ${file}: ${(err as Error).message}`, { cause: err });
  }
  try {
    return parsePrivateKey(text);
  } catch (err) {
    throw new StewardError('USAGE', `${flag} ${file} is not an Ed25519 private key (PEM): ${(err as Error).message}`, { cause: err });
  }
}

// A group of keys whose threshold a signature counts toward.
export interface SignerGroup {
  // What the group is, for a human: "root v2's keys", "root v1's keys (the previous root)".
  label: string;
  keys: Key[];
  threshold: number;
}

export interface GroupCount extends SignerGroup {
  signed: string[];
}

function roleKeys(root: Root, role: string): { keys: Key[]; threshold: number } {
  const r = root.roles[role];
  if (!r) throw new StewardError('CONTROL_PLANE_REFUSED', `the root has no ${role} role`);
  return { keys: r.keyIDs.map((id) => root.keys[id]).filter((k): k is Key => k !== undefined), threshold: r.threshold };
}

// Who must sign the pending `role`: a root, a threshold of the previous root's keys (none for v1)
// and of its own; a top-level targets, the targets keys of the root it will be published under
// (the published root's; the pending root's before there is one).
export function signerGroups(status: TrustStatus, role: PendingRole): SignerGroup[] {
  if (role === 'root') {
    const next = status.pending.root;
    if (!next) return [];
    const groups: SignerGroup[] = [{ label: `root v${next.signed.version}'s root keys`, ...roleKeys(next.signed, 'root') }];
    if (status.root) groups.push({ label: `root v${status.root.signed.version}'s root keys (the root it replaces)`, ...roleKeys(status.root.signed, 'root') });
    return groups;
  }
  // Under the published root, as the server checks them (a pending root is not trusted yet).
  const under = status.root ?? status.pending.root;
  if (!status.pending.targets || !under) return [];
  return [{ label: `root v${under.signed.version}'s targets keys`, ...roleKeys(under.signed, 'targets') }];
}

export function countSignatures(md: Metadata<Root | Targets>, groups: SignerGroup[]): GroupCount[] {
  return groups.map((g) => {
    const signed = g.keys.filter((k) => signatureCount(md, [k]) === 1).map((k) => k.keyID);
    return { ...g, signed };
  });
}

export function thresholdsMet(counts: GroupCount[]): boolean {
  return counts.length > 0 && counts.every((c) => c.signed.length >= c.threshold);
}

// "1 of 2 of root v2's root keys (signed: ab12…)", one line per group.
export function countLines(counts: GroupCount[]): string[] {
  return counts.map((c) => `${Math.min(c.signed.length, c.threshold)} of ${c.threshold} signatures of ${c.label}${c.signed.length ? ` (signed: ${c.signed.map(short).join(', ')})` : ''}; may sign: ${c.keys.map((k) => short(k.keyID)).join(', ')}`);
}

export const short = (id: string): string => id.slice(0, 16);

function expiryText(iso: string, now: number): string {
  const days = Math.floor((Date.parse(iso) - now) / DAY_MS);
  return `${iso} (${days < 0 ? `EXPIRED ${-days} days ago` : `in ${days} days`}${days >= 0 && days < 30 ? ', WARNING: under 30 days' : ''})`;
}

// What a root says, for a human to check before signing it.
export function describeRoot(md: Metadata<Root>, now = Date.now()): string[] {
  const r = md.signed;
  const lines = [`root v${r.version}, expires ${expiryText(r.expires, now)}`];
  for (const role of ['root', 'targets', 'snapshot', 'timestamp']) {
    const x = r.roles[role];
    if (x) lines.push(`  ${role}: ${x.threshold} of ${x.keyIDs.length}: ${x.keyIDs.join(', ')}`);
  }
  const d = r.unrecognizedFields[DIRECTOR_FIELD] as { keyids?: string[]; threshold?: number } | undefined;
  if (d?.keyids) lines.push(`  director: ${d.threshold ?? 1} of ${d.keyids.length}: ${d.keyids.join(', ')}`);
  return lines;
}

// What a top-level targets delegates, for a human to check before signing it.
export function describeTargets(md: Metadata<Targets>, now = Date.now()): string[] {
  const t = md.signed;
  const lines = [`targets v${t.version}, expires ${expiryText(t.expires, now)}`];
  const roles = Object.values(t.delegations?.roles ?? {});
  if (roles.length === 0) lines.push('  delegates no app yet');
  for (const r of roles) lines.push(`  ${r.name}: ${r.threshold} of ${r.keyIDs.length}: ${r.keyIDs.join(', ')} (paths ${r.paths?.join(', ') ?? '-'})`);
  return lines;
}

// The delegation of `app` in the top-level targets: its keys and threshold, or null.
export function delegationOf(targets: Metadata<Targets> | null, app: string): { role: string; keys: Key[]; threshold: number } | null {
  if (!targets) return null;
  const role = delegatedRoleName(app);
  const d = targets.signed.delegations;
  const r = d?.roles?.[role];
  if (!d || !r) return null;
  return { role, keys: r.keyIDs.map((id) => d.keys[id]).filter((k): k is Key => k !== undefined), threshold: r.threshold };
}

// The private keys given for a delegation, checked before anything is signed or sent: each one
// of the delegation's keys (named by its key id and file when not), enough of them distinct.
export function checkDelegationKeys(app: string, d: { role: string; keys: Key[]; threshold: number }, keys: Array<{ file: string; key: KeyObject }>): void {
  const allowed = new Set(d.keys.map((k) => k.keyID));
  const ids = new Set<string>();
  for (const k of keys) {
    const id = tufKeyIdOf(k.key);
    if (!allowed.has(id)) throw new StewardError('FORBIDDEN', `--key ${path.basename(k.file)} (TUF key id ${id}) is not a key of ${d.role} (its keys: ${[...allowed].join(', ')}); \`steward-control trust status\` shows the delegation`);
    ids.add(id);
  }
  if (ids.size < d.threshold) {
    throw new StewardError('USAGE', `${d.role} needs ${d.threshold} signatures and ${ids.size === keys.length ? '' : 'distinct '}--key gave ${ids.size}: pass ${d.threshold - ids.size} more --key of ${app}'s delegation; nothing was uploaded`);
  }
}

export const daysFromNow = (days: number, now = Date.now()): number => now + days * DAY_MS;

// What a pending root changes from the published one, for the human about to sign it: the keys
// added to and removed from each role, thresholds, the director, the expiry. A control plane
// that slipped a key into a root would show here.
export function rootChanges(prev: Metadata<Root>, next: Metadata<Root>): string[] {
  const out: string[] = [];
  for (const role of ['root', 'targets', 'snapshot', 'timestamp']) {
    const a = prev.signed.roles[role];
    const b = next.signed.roles[role];
    if (!a || !b) continue;
    const added = b.keyIDs.filter((k) => !a.keyIDs.includes(k));
    const removed = a.keyIDs.filter((k) => !b.keyIDs.includes(k));
    if (added.length) out.push(`${role}: key${added.length === 1 ? '' : 's'} added ${added.join(', ')}`);
    if (removed.length) out.push(`${role}: key${removed.length === 1 ? '' : 's'} removed ${removed.join(', ')}`);
    if (a.threshold !== b.threshold) out.push(`${role}: threshold ${a.threshold} -> ${b.threshold}`);
  }
  const d = (r: Root) => JSON.stringify((r.unrecognizedFields[DIRECTOR_FIELD] as { keyids?: string[] } | undefined)?.keyids ?? []);
  if (d(prev.signed) !== d(next.signed)) out.push(`director: ${d(prev.signed)} -> ${d(next.signed)}`);
  if (prev.signed.expires !== next.signed.expires) out.push(`expires: ${prev.signed.expires} -> ${next.signed.expires}`);
  return out.length ? out : ['nothing but the version'];
}

// What a pending top-level targets changes from the published one: each app delegated, re-delegated
// (other keys, threshold or paths) or no longer delegated, and the expiry.
export function targetsChanges(prev: Metadata<Targets>, next: Metadata<Targets>): string[] {
  const out: string[] = [];
  const a = prev.signed.delegations?.roles ?? {};
  const b = next.signed.delegations?.roles ?? {};
  const shape = (r: { keyIDs: string[]; threshold: number; paths?: string[] | undefined }) => JSON.stringify([[...r.keyIDs].sort(), r.threshold, r.paths ?? []]);
  for (const [name, r] of Object.entries(b)) {
    const was = a[name];
    if (!was) out.push(`${name}: delegated to ${r.threshold} of ${r.keyIDs.length} keys (${r.keyIDs.join(', ')})`);
    else if (shape(was) !== shape(r)) out.push(`${name}: re-delegated to ${r.threshold} of ${r.keyIDs.length} keys (${r.keyIDs.join(', ')}); was ${was.threshold} of ${was.keyIDs.length} (${was.keyIDs.join(', ')})`);
  }
  for (const name of Object.keys(a)) if (!b[name]) out.push(`${name}: no longer delegated`);
  if (Object.keys(next.signed.targets).length !== Object.keys(prev.signed.targets).length) out.push('its own targets changed (steward puts none there)');
  if (prev.signed.expires !== next.signed.expires) out.push(`expires: ${prev.signed.expires} -> ${next.signed.expires}`);
  return out.length ? out : ['nothing but the version'];
}
