// What the launcher tests' fake runtime does once a good fake helper is ready
// (test/helpers/launcher-host.ts), with the real commitTrial: on trial, a package's tree is first
// put into versions/<version> with a marker, standing for the helper's staging of its own package
// (not built yet, docs/self-update.md), then the trial is committed; at every ready start the
// start count is reset, as resetStartCounter does (rm, then fsync of the folder).
//
// Run by a node process the fake runtime starts (launcher-commit.ts) where the crash explorer
// traces the starts with strace and must see these writes, and in the test's own process after a
// start everywhere else: the same steps in the same order, without a node start per trial.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, rmSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { hostPaths } from '../../src/core/paths.js';
import { MARKER_FILE_NAME } from '../../src/core/release-files.js';
import { commitTrial } from '../../src/helper/self/trial-steps.js';
import { readSelfFiles } from '../../src/helper/self/self-files.js';

export async function commitFakeTrial(root: string, version: string, tree: string): Promise<void> {
  const paths = hostPaths(root);
  const files = await readSelfFiles(paths);
  const dir = path.join(paths.appsDir, 'steward/versions', version);
  if (files.trying.state === 'valid' && files.trying.value.source === 'package' && !existsSync(path.join(dir, '.steward-valid'))) {
    rmSync(dir, { recursive: true, force: true });
    copyTree(tree, dir);
    // Durable before the marker, as staging makes a tree (docs/design.md §2, "Durable tree").
    execFileSync('sync', ['-f', dir]);
    writeMarker(dir, version);
    execFileSync('sync', ['-f', dir]);
  }
  await commitTrial(paths, version);
}

// A plain copy by read and write: copyFile may use copy_file_range, whose bytes the crash
// explorer cannot see.
function copyTree(from: string, to: string): void {
  mkdirSync(to, { recursive: true });
  for (const name of readdirSync(from)) {
    const src = path.join(from, name);
    if (statSync(src).isDirectory()) copyTree(src, path.join(to, name));
    else writeFileSync(path.join(to, name), readFileSync(src));
  }
}

// The marker as stage-release.ts writes it (writeJsonAtomic: two-space JSON).
export function writeMarker(dir: string, version: string): void {
  const marker = {
    schemaVersion: 1,
    tarballIntegrity: `sha512-${'A'.repeat(86)}==`,
    treeDigest: `sha256-${'B'.repeat(43)}=`,
    signed: true,
    keyId: '0123456789abcdef',
    version,
    stagedAt: 1_700_000_000_000,
  };
  writeFileSync(path.join(dir, MARKER_FILE_NAME), JSON.stringify(marker, null, 2) + '\n');
  chmodSync(path.join(dir, MARKER_FILE_NAME), 0o444);
}
