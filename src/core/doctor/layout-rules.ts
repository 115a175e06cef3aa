// The owners and modes docs/design.md §2 specifies, as rules over host paths.
import path from 'node:path';
import type { HostPaths } from '../paths.js';
import type { EntryType } from './observations.js';

export type Owner = 'root' | 'steward';

export interface ModeRule {
  type: EntryType;
  owner: Owner;
  // Checked only when set: the `steward` group (helper.sock's folder, the receipts).
  group?: 'steward';
  mode: number;
}

// A rule for one path, or for every direct child of `children` of the rule's type.
export interface LayoutRule extends ModeRule {
  path: string;
  appliesTo: 'self' | 'children';
}

const self = (p: string, r: ModeRule): LayoutRule => ({ path: p, appliesTo: 'self', ...r });
const children = (p: string, r: ModeRule): LayoutRule => ({ path: p, appliesTo: 'children', ...r });

// Every rule of docs/design.md §2 doctor checks (sockets are the socket check's).
export function layoutRules(p: HostPaths): LayoutRule[] {
  const rootDir = (mode: number): ModeRule => ({ type: 'dir', owner: 'root', mode });
  const rootFile = (mode: number): ModeRule => ({ type: 'file', owner: 'root', mode });
  const rules: LayoutRule[] = [
    self(p.configFile, rootFile(0o644)),
    self(p.varLib, rootDir(0o755)),
    self(p.helperPub, rootFile(0o644)),
    self(p.receiptsDir, { ...rootDir(0o750), group: 'steward' }),
    children(p.receiptsDir, { ...rootFile(0o640), group: 'steward' }),
    self(p.runDir, { ...rootDir(0o750), group: 'steward' }),
    self(p.agentDir, { type: 'dir', owner: 'steward', mode: 0o700 }),
    self(path.join(p.agentDir, 'node.key'), { type: 'file', owner: 'steward', mode: 0o600 }),
  ];
  for (const dir of [p.journalDir, p.stateDir, p.supervisorDir, p.keysDir]) {
    rules.push(self(dir, rootDir(0o700)), children(dir, rootFile(0o600)));
  }
  return rules;
}

// The rule for `file` of type `type`, if any: an exact path wins over a folder's children rule.
export function ruleFor(rules: readonly LayoutRule[], file: string, type: EntryType): LayoutRule | undefined {
  const exact = rules.find((r) => r.appliesTo === 'self' && r.path === file);
  if (exact) return exact;
  const parent = path.dirname(file);
  return rules.find((r) => r.appliesTo === 'children' && r.path === parent && r.type === type);
}
