import type { IncomingMessage } from 'node:http';

export type BodyResult = { ok: true; body: Buffer } | { ok: false; reason: 'too-large' | 'aborted' };

// Reads a request body of at most `maxBytes`. Past the limit (or a Content-Length over it) it
// stops keeping bytes and answers too-large at once; the caller answers and closes.
export function readBody(req: IncomingMessage, maxBytes: number): Promise<BodyResult> {
  return new Promise((resolve) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > maxBytes) return resolve({ ok: false, reason: 'too-large' });
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (r: BodyResult) => {
      if (done) return;
      done = true;
      req.off('data', onData);
      resolve(r);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) return finish({ ok: false, reason: 'too-large' });
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => finish({ ok: true, body: Buffer.concat(chunks, size) }));
    req.once('aborted', () => finish({ ok: false, reason: 'aborted' }));
    req.once('error', () => finish({ ok: false, reason: 'aborted' }));
  });
}
