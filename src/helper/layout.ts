import type { HostPaths } from '../core/paths.js';
import { ensureDir } from '../platform/fs-atomic.js';

// Creates the root-owned folders of DESIGN §2 with their modes. Group ownership of the
// shared ones (receipts, run) is set by install; nothing here is writable by others.
export async function ensureLayout(paths: HostPaths): Promise<void> {
  await ensureDir(paths.appsDir, 0o755);
  await ensureDir(paths.varLib, 0o755);
  await ensureDir(paths.stateDir, 0o700);
  await ensureDir(paths.journalDir, 0o700);
  await ensureDir(paths.keysDir, 0o700);
  await ensureDir(paths.supervisorDir, 0o700);
  await ensureDir(paths.receiptsDir, 0o750);
  await ensureDir(paths.appStateRoot, 0o755);
  await ensureDir(paths.logDir, 0o750);
}
