// The demo's app `web`: one tiny Node program, released as tarballs. A healthy release stays up;
// a broken one exits soon after it starts, so the helper's probe fails and it rolls back; a late one
// passes its probe and exits 2.5 s after each start, which its watch window catches.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const SERVER = `const v = process.env.STEWARD_VERSION;
if (process.env.BROKEN === 'yes') {
  console.error('web ' + v + ': cannot read its settings, exiting');
  setTimeout(() => process.exit(1), 300);
} else if (process.env.BROKEN === 'late') {
  console.log('web ' + v + ' up');
  setTimeout(() => {
    console.error('web ' + v + ': out of connections, exiting');
    process.exit(3);
  }, 2500);
} else {
  console.log('web ' + v + ' up');
  setInterval(() => {}, 1 << 30);
}
`;

// Builds web-<version>.tgz in `dir` and returns its path. No port: three hosts share one machine.
export function buildRelease(dir: string, version: string, broken: boolean | 'late'): string {
  const src = path.join(dir, `src-${version}`);
  mkdirSync(src, { recursive: true });
  writeFileSync(path.join(src, 'server.js'), SERVER);
  writeFileSync(
    path.join(src, 'steward-release.json'),
    JSON.stringify({
      name: 'web',
      version,
      start: { command: ['node', 'server.js'], env: { BROKEN: broken === 'late' ? 'late' : broken ? 'yes' : 'no' } },
      // No http or tcp check: the process must stay up for stableMs. After its activation a version
      // is watched for the rollout's bake: the late one allows a single exit.
      health: { stableMs: 1500, ...(broken === 'late' ? { watchMaxRestarts: 1 } : {}) },
    }),
  );
  const tgz = path.join(dir, `web-${version}.tgz`);
  execFileSync('tar', ['czf', tgz, '-C', src, '.']);
  return tgz;
}
