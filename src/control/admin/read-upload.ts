// The body of an upload (`release add`): one line of JSON (the operation's input), a newline,
// then the raw bytes, as the local API frames its uploads (docs/design.md §7).
export const MAX_UPLOAD_HEAD_BYTES = 64 * 1024;

export type SplitUpload = { ok: true; head: Buffer; bytes: AsyncIterable<Buffer> } | { ok: false; reason: 'no-head' | 'head-too-large' };

// Reads the first line of `body` (at most `maxHead` bytes) and hands the rest on as it comes.
export async function splitUpload(body: AsyncIterable<Buffer>, maxHead = MAX_UPLOAD_HEAD_BYTES): Promise<SplitUpload> {
  const it = body[Symbol.asyncIterator]();
  const parts: Buffer[] = [];
  let size = 0;
  for (;;) {
    const next = await it.next();
    if (next.done) return { ok: false, reason: 'no-head' };
    const chunk = next.value;
    const nl = chunk.indexOf(0x0a);
    if (size + (nl >= 0 ? nl : chunk.length) > maxHead) return { ok: false, reason: 'head-too-large' };
    if (nl < 0) {
      parts.push(chunk);
      size += chunk.length;
      continue;
    }
    parts.push(chunk.subarray(0, nl));
    const leftover = chunk.subarray(nl + 1);
    const rest = async function* () {
      if (leftover.length) yield leftover;
      for (let n = await it.next(); !n.done; n = await it.next()) yield n.value;
    };
    return { ok: true, head: Buffer.concat(parts), bytes: rest() };
  }
}
