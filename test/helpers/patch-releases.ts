import { randomBytes } from 'node:crypto';
import { gzipTar, makeReleaseTar } from '../fixtures/tar-writer.js';

// Releases of web for the static patch tests (docs/design.md §20.5): 40 files every version
// shares, 8 that each version edits a little (a line of its own), and one new file per version.
const SHARED = Array.from({ length: 40 }, (_, i) => ({ path: `lib/s${i}.js`, content: randomBytes(3072).toString('base64') }));
const EDITED = Array.from({ length: 8 }, () => randomBytes(6000).toString('base64'));

export function patchRelease(version: string): Buffer {
  const edited = EDITED.map((c, i) => ({ path: `lib/e${i}.js`, content: `// ${version}\n${c}` }));
  return gzipTar(makeReleaseTar('web', version, [{ path: 'lib/', type: 'dir' }, { path: 'bin/', type: 'dir' }, { path: 'bin/run', content: `#!/bin/sh\necho ${version}\n`, mode: 0o755 }, ...SHARED, ...edited, { path: `lib/new-${version}.js`, content: `x(${JSON.stringify(version)})\n` }]));
}
