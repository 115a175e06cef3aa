import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { StewardError } from '../core/errors.js';
import { folderTrustProblem } from './trusted-file.js';

export interface RootChoice {
  flag?: string | undefined;
  env?: string | undefined;
  isRoot: boolean;
}

// Picks the root prefix (docs/design.md §1): `--root DIR`, else STEWARD_ROOT unless the caller is
// root (root must say --root explicitly), else '' (production). Returns a resolved real path.
export async function resolveRootPrefix(choice: RootChoice): Promise<string> {
  const raw = choice.flag ?? (choice.isRoot ? undefined : choice.env);
  if (raw === undefined || raw === '') return '';
  let real: string;
  try {
    real = await fsp.realpath(path.resolve(raw));
  } catch (err) {
    throw new StewardError('ROOT_UNSAFE', `root prefix ${raw} does not exist`, { cause: err });
  }
  const st = await fsp.stat(real);
  if (!st.isDirectory()) throw new StewardError('ROOT_UNSAFE', `root prefix ${real} is not a folder`);
  if (real === '/') return '';
  if (choice.isRoot) await checkRootOwnedPath(real);
  return real;
}

// As root, the prefix and every folder above it must be root-owned and not writable by
// group or others; a sticky folder above it (such as /tmp) is fine, since nobody else may
// rename or remove what root made there. Otherwise another user could swap paths under root.
export async function checkRootOwnedPath(real: string): Promise<void> {
  const why = await folderTrustProblem(real, { from: real, uid: 0 });
  if (why) throw new StewardError('ROOT_UNSAFE', `root prefix ${real}: ${why}`);
}
