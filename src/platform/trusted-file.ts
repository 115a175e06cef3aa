// Reads a file under the trust rule of trusted-folder.ts (docs/design.md §2), which this file re-exports
// for the many callers that read a trusted file and check a folder both.
import path from 'node:path';
import { readRegularFile } from './fs-atomic.js';
import { fileTrustProblem, folderTrustProblem, type TrustScope } from './trusted-folder.js';

export * from './trusted-folder.js';

// `mode`: the permission bits of the file read (for a caller that also wants it private).
export type TrustedRead = { state: 'missing' } | { state: 'untrusted'; why: string } | { state: 'ok'; bytes: Buffer; mode: number };

// Reads `file` if the rule holds for it and its folders: through O_NOFOLLOW, its owner and mode
// taken from the open fd. `untrusted` says which path broke the rule and how; other read errors
// (too big, not readable) throw.
export async function readTrustedFile(file: string, scope: TrustScope, maxBytes: number): Promise<TrustedRead> {
  // The path checked is the path opened: `..` is resolved the same way for both.
  const target = path.resolve(file);
  const folder = await folderTrustProblem(path.dirname(target), scope);
  if (folder) return { state: 'untrusted', why: folder };
  let got;
  try {
    got = await readRegularFile(target, maxBytes);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') return { state: 'untrusted', why: `${file} is a symlink (not followed)` };
    if (code === 'EINVAL') return { state: 'untrusted', why: `${file} is not a regular file` };
    throw err;
  }
  if (!got) return { state: 'missing' };
  const why = fileTrustProblem(file, got.uid, got.mode, scope);
  return why ? { state: 'untrusted', why } : { state: 'ok', bytes: got.bytes, mode: got.mode };
}
