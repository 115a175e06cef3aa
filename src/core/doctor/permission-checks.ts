// The permissions check (docs/design.md §2): the owners and modes of the layout, and the rule that
// nothing anyone but root can write is read by root as code or config.
import { fail, octal, ok, warn, type CheckResult } from './check-result.js';
import { ruleFor, type LayoutRule } from './layout-rules.js';
import type { Entry, Owners, TreeWalk } from './observations.js';

export const PERMISSIONS = 'permissions';

function ownerName(uid: number | null, owners: Owners, who: 'root' | 'steward'): string {
  if (owners.note) return `uid ${uid} (the current user)`;
  return `${who} (uid ${uid ?? '?'})`;
}

// What is wrong with `e` under `rule`, or null.
export function ruleViolation(e: Entry, rule: LayoutRule, owners: Owners): string | null {
  if (e.type !== rule.type) return `is a ${e.type}, expected a ${rule.type}`;
  const problems: string[] = [];
  const wantUid = rule.owner === 'root' ? owners.rootUid : owners.stewardUid;
  if (wantUid !== null && e.uid !== wantUid) problems.push(`owner uid ${e.uid}, expected ${ownerName(wantUid, owners, rule.owner)}`);
  if (rule.group === 'steward' && owners.stewardGid !== null && e.gid !== owners.stewardGid) {
    problems.push(`group gid ${e.gid}, expected steward (gid ${owners.stewardGid})`);
  }
  if (e.mode !== rule.mode) problems.push(`mode ${octal(e.mode)}, expected ${octal(rule.mode)}`);
  return problems.length ? problems.join(', ') : null;
}

// What breaks the write rule in `e`, or null: an owner other than root, or group/other write bits
// (symlinks have no mode of their own; their owner still counts).
export function writeRuleViolation(e: Entry, owners: Owners): string | null {
  const problems: string[] = [];
  if (e.uid !== owners.rootUid) problems.push(`owner uid ${e.uid}, expected ${ownerName(owners.rootUid, owners, 'root')}`);
  if (e.type !== 'symlink' && (e.mode & 0o022) !== 0) {
    problems.push(`mode ${octal(e.mode)} is writable by ${(e.mode & 0o020 ? ['group'] : []).concat(e.mode & 0o002 ? ['others'] : []).join(' and ')}, expected no group or other write bit`);
  }
  return problems.length ? `root reads it, but ${problems.join(', ')}` : null;
}

// What is wrong with a folder above a walked tree (/opt, /var/lib, ...) up to the root prefix, or
// null: whoever may write to it could swap the whole tree. A sticky bit does not make it fine:
// the helper's trust rule (platform/trusted-file.ts) holds every folder from the prefix down.
export function ancestorViolation(e: Entry, owners: Owners): string | null {
  if (e.type !== 'dir') return `is a ${e.type}, expected a folder`;
  const problems: string[] = [];
  if (e.uid !== owners.rootUid) problems.push(`owner uid ${e.uid}, expected ${ownerName(owners.rootUid, owners, 'root')}`);
  if ((e.mode & 0o022) !== 0) problems.push(`mode ${octal(e.mode)} is writable by group or others`);
  return problems.length ? `a folder above what root reads, but ${problems.join(', ')}` : null;
}

// One fail per path that breaks a layout rule or the write rule (a path is reported once, its
// layout rule first), a warn for a capped or unreadable walk, else one ok.
// `extra` holds lstats of rule paths outside the walked trees (/run/steward, the agent folder).
// `ancestors` are the folders above the walked trees, up to the root prefix (or /).
export function checkPermissions(walk: TreeWalk, extra: readonly Entry[], rules: readonly LayoutRule[], owners: Owners, ancestors: readonly Entry[] = []): CheckResult[] {
  const out: CheckResult[] = [];
  if (owners.accountProblem) out.push(fail(PERMISSIONS, owners.accountProblem));
  for (const e of ancestors) {
    const why = ancestorViolation(e, owners);
    if (why) out.push(fail(PERMISSIONS, `${e.path}: ${why}`));
  }
  for (const e of [...walk.entries, ...extra]) {
    const rule = ruleFor(rules, e.path, e.type);
    const inWalk = walk.roots.some((r) => e.path === r || e.path.startsWith(r + '/'));
    const why = (rule && ruleViolation(e, rule, owners)) ?? (inWalk ? writeRuleViolation(e, owners) : null);
    if (why) out.push(fail(PERMISSIONS, `${e.path}: ${why}`));
  }
  if (walk.capped) out.push(warn(PERMISSIONS, `stopped after ${walk.cap} entries under ${walk.roots.join(', ')}; the rest was not checked`));
  for (const u of walk.unreadable) out.push(warn(PERMISSIONS, `${u.path}: could not be checked (${u.error})`));
  if (out.length === 0) {
    const note = owners.note ? `; ${owners.note}` : '';
    out.push(ok(PERMISSIONS, `${walk.entries.length + extra.length + ancestors.length} entries have the owner, group and mode steward gives them, and only root can write what root reads${note}`));
  }
  return out;
}
