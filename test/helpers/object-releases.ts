import { randomBytes } from 'node:crypto';
import { gzipTar, makeReleaseTar, makeTar, type TarEntrySpec } from '../fixtures/tar-writer.js';

// 40 files of 4 KiB that do not compress, shared by every version, and one that changes.
const SHARED = Array.from({ length: 40 }, (_, i) => ({ path: `lib/m${i}.js`, content: randomBytes(4096).toString('base64') }));

// A release of web that shares all but server.js (`changed`) and its release file with every other:
// an executable, a folder, the same bytes under two names, a hardlink, a symlink, an empty file.
// `unit`: for an app of runner unit, whose release file has no start.
export function releaseOf(version: string, changed: string, opts: { unit?: boolean } = {}): Buffer {
  const entries: TarEntrySpec[] = [
    { path: 'server.js', content: changed, mode: 0o644 },
    { path: 'bin/', type: 'dir' },
    { path: 'bin/run', content: '#!/bin/sh\nexec node server.js\n', mode: 0o755 },
    { path: 'lib/', type: 'dir' },
    ...SHARED,
    { path: 'lib/same.js', content: SHARED[0]?.content ?? '' },
    { path: 'lib/link.js', type: 'hardlink', linkpath: 'lib/m1.js' },
    { path: 'lib/here', type: 'symlink', linkpath: 'm2.js' },
    { path: 'empty', content: '' },
  ];
  if (opts.unit) return gzipTar(makeTar([{ path: 'steward-release.json', content: JSON.stringify({ name: 'web', version }) + '\n' }, ...entries]));
  return gzipTar(makeReleaseTar('web', version, entries));
}
