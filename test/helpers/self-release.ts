// A signed release of the app steward made from this checkout's build by pack-steward's own
// layout (src/platform/release-tree.ts): its tarball and its manifest envelope.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { layOutStewardTree, packTree } from '../../src/platform/release-tree.js';
import { manifestFor, REPO, type ReleaseKey } from './host.js';

export interface StewardReleaseFiles {
  tgz: string;
  manifest: string;
}

// Lays out steward `version` in a new folder under `dir`, lets `adjust` change the tree, and packs
// it: the tarball's path.
export async function stewardTarball(dir: string, version: string, adjust: (tree: string) => void = () => {}): Promise<string> {
  const work = mkdtempSync(path.join(dir, 'rel-'));
  const tree = path.join(work, 'tree');
  await layOutStewardTree(REPO, tree, version);
  adjust(tree);
  const tgz = path.join(work, `steward-${version}.tgz`);
  await packTree(tree, tgz);
  return tgz;
}

// stewardTarball's tarball and its manifest, signed with `key`.
export async function stewardReleaseFiles(dir: string, key: ReleaseKey, version: string, adjust: (tree: string) => void = () => {}): Promise<StewardReleaseFiles> {
  const tgz = await stewardTarball(dir, version, adjust);
  const manifest = path.join(path.dirname(tgz), `steward-${version}.manifest.json`);
  writeFileSync(manifest, JSON.stringify(key.sign(manifestFor('steward', version, readFileSync(tgz)))));
  return { tgz, manifest };
}
