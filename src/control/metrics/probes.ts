// `GET /healthz` and `GET /readyz` (docs/design.md §12), on the metrics listener and the fleet listener
// alike: healthz says the process serves; readyz that the store answers a trivial read within
// a timeout. Plain text, never cached; nothing about the store but "ready" or why not.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { logger } from '../../platform/log.js';
import type { ControlStore } from '../store/store.js';

const log = logger('control:probes');

export const HEALTHZ_PATH = '/healthz';
// Not a probe, but a path of both listeners (the fleet's only by choice): kept here, where the
// fleet server finds it without loading prom-client.
export const METRICS_PATH = '/metrics';
export const READYZ_PATH = '/readyz';
// How long readyz waits for the store's answer (a store stuck behind a long write is not ready).
export const READY_TIMEOUT_MS = 2_000;

// Whether `path` is a probe's.
export function isProbePath(path: string): boolean {
  return path === HEALTHZ_PATH || path === READYZ_PATH;
}

// Resolves when the store answers a trivial read within `timeoutMs`; rejects otherwise.
export async function checkStoreReady(store: Pick<ControlStore, 'read'>, timeoutMs = READY_TIMEOUT_MS): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the store did not answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([store.read((tx) => tx.now()), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

// Answers a probe request for `path` (isProbePath).
export async function answerProbe(path: string, store: Pick<ControlStore, 'read'>, req: IncomingMessage, res: ServerResponse, timeoutMs = READY_TIMEOUT_MS): Promise<void> {
  if (req.method !== 'GET' && req.method !== 'HEAD') return sendText(res, req, 405, `${path} takes GET\n`, { allow: 'GET, HEAD' });
  if (path === HEALTHZ_PATH) return sendText(res, req, 200, 'ok\n');
  try {
    await checkStoreReady(store, timeoutMs);
  } catch (err) {
    log('readyz: not ready: %s', (err as Error)?.message ?? String(err));
    return sendText(res, req, 503, 'not ready: the store does not answer\n');
  }
  return sendText(res, req, 200, 'ready\n');
}

// Writes a plain-text answer (no body for HEAD).
export function sendText(res: ServerResponse, req: IncomingMessage, status: number, text: string, headers: Record<string, string> = {}, contentType = 'text/plain; charset=utf-8'): void {
  if (res.headersSent) return void res.destroy();
  res.writeHead(status, { 'content-type': contentType, 'content-length': String(Buffer.byteLength(text)), 'cache-control': 'no-store', ...headers });
  res.end(req.method === 'HEAD' ? undefined : text);
}
