// Checks both package-read tests (test/package/steward-deb, steward-control-deb) make of a built .deb.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import type { TestContext } from 'node:test';
import { skipUnlessCI } from './skip.js';

export const has = (cmd: string): boolean => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;

// The page renders through man with no groff warning (when man is installed).
export function assertManPageClean(pageGz: string): void {
  if (!has('man')) return;
  const r = spawnSync('man', ['--warnings', '-l', '-Tutf8', pageGz], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, '', 'groff has no warning about the page');
}

// lintian (Debian's reviewer, --pedantic) reports no error on the package. Every check runs but
// binaries/spelling, which looks for misspelt words among the strings of every ELF file (the
// 100 MB node binary: a third of lintian's 24 s of CPU a package) and only ever reports
// spelling-error-in-binary, an informational tag, never an error.
export function assertNoLintianError(t: TestContext, deb: string): void {
  if (!has('lintian')) return skipUnlessCI(t, 'lintian is not installed (apt-get install lintian)');
  const r = spawnSync('lintian', ['--allow-root', '--pedantic', '--dont-check-part', 'binaries/spelling', deb], { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
  const errors = r.stdout.split('\n').filter((l) => l.startsWith('E: '));
  assert.deepEqual(errors, [], r.stdout);
}
