import type { HostPaths } from '../core/paths.js';
import { StewardError } from '../core/errors.js';
import { ensureDir } from '../platform/fs-atomic.js';
import { folderTrustProblem, trustRule, trustScope } from '../platform/trusted-file.js';

// Creates the root-owned folders of docs/design.md §2 with their modes. Group ownership of the
// shared ones (receipts, run) is set by install; nothing here is writable by others.
// Then holds each to the trust rule (platform/trusted-file.ts): root reads its journal, state
// (node.json), supervisor records and keys from them, so nobody else may own one or a folder
// above it. ROOT_UNSAFE names the first that breaks it.
export async function ensureLayout(paths: HostPaths): Promise<void> {
  const folders: Array<[string, number]> = [
    [paths.appsDir, 0o755],
    [paths.varLib, 0o755],
    [paths.stateDir, 0o700],
    [paths.journalDir, 0o700],
    [paths.keysDir, 0o700],
    [paths.supervisorDir, 0o700],
    [paths.receiptsDir, 0o750],
    [paths.appStateRoot, 0o755],
    [paths.logDir, 0o750],
  ];
  for (const [dir, mode] of folders) await ensureDir(dir, mode);
  for (const [dir] of folders) {
    const scope = trustScope(dir, paths.root);
    const why = await folderTrustProblem(dir, scope);
    if (why) throw new StewardError('ROOT_UNSAFE', `${dir}: ${why}; ${trustRule(scope)}`);
  }
}
