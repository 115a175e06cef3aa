// The commit of a good fake helper on trial (test/helpers/launcher-host.ts), with the real
// commitTrial. argv: <root> <version> <tree>. A package trial's tree is first put into
// versions/<version> with a marker, standing for the helper's staging of its own package
// (not built yet, docs/self-update.md).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { hostPaths } from '../../src/core/paths.js';
import { commitTrial } from '../../src/helper/self/trial-steps.js';
import { readSelfFiles } from '../../src/helper/self/self-files.js';
import { writeMarker } from './launcher-host.js';

const [root, version, tree] = process.argv.slice(2) as [string, string, string];
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
