// A tarball's bytes on their way through a backup, restore or copy, checked against the size
// and integrity its release names: the last chunk is handed on only once both hold, so that a
// consumer never keeps bytes that are not the release's.
import { createHash } from 'node:crypto';
import type { StewardError } from '../../core/errors.js';

// Yields `source`'s chunks; throws `fail(reason)` past `size` bytes, or at the end when the
// size or the sha512 SRI `integrity` differs.
export async function* checkedBytes(source: AsyncIterable<Buffer>, expect: { size: number; integrity: string }, fail: (reason: string) => StewardError): AsyncGenerator<Buffer> {
  const hash = createHash('sha512');
  let size = 0;
  let held: Buffer | null = null;
  for await (const chunk of source) {
    size += chunk.length;
    if (size > expect.size) throw fail(`more than its ${expect.size} bytes`);
    hash.update(chunk);
    if (held) yield held;
    held = chunk;
  }
  if (size !== expect.size) throw fail(`${size} bytes, not ${expect.size}`);
  if ('sha512-' + hash.digest('base64') !== expect.integrity) throw fail(`bytes that do not match its integrity ${expect.integrity}`);
  if (held) yield held;
}
