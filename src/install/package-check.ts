// A configure step of the Debian package (docs/package.md) that tries the package's version
// once more after its trial reverted. Which steward runs afterwards is checked by the cli's
// package-check.ts.
import type { HostPaths } from '../core/paths.js';
import { readSelfFiles } from '../helper/self/self-files.js';
import { removeSelfFiles } from '../helper/self/trial-steps.js';

// A configure step of the package tries its version once more: `package-tried` naming it (the
// launcher's memory of a trial that reverted) is removed, so that the restart that follows
// makes it a candidate again. Returns whether it was there.
export async function forgetPackageTrial(paths: HostPaths, version: string): Promise<boolean> {
  const files = await readSelfFiles(paths);
  if (files.packageTried.state !== 'valid' || files.packageTried.value.version !== version) return false;
  await removeSelfFiles(paths, ['package-tried']);
  return true;
}
