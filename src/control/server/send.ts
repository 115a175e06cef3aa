import type { ServerResponse } from 'node:http';
import type { Answer } from './answer.js';

// Writes a JSON answer; `close` asks the client to drop the connection after it.
export function sendJson(res: ServerResponse, answer: Answer, close = false): void {
  if (res.headersSent) return void res.destroy();
  const text = JSON.stringify(answer.body);
  res.writeHead(answer.status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(text)),
    'cache-control': 'no-store',
    ...(close ? { connection: 'close' } : {}),
  });
  res.end(text);
}
