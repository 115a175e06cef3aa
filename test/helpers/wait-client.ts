// A wake-up wait (`GET /v1/wait`) as a test sends it: with a node's credential (or any
// Authorization the test makes up), answered or still pending.
import http from 'node:http';
import type { KeyObject } from 'node:crypto';
import { HEARTBEAT_PATH, HEARTBEAT_VERSIONS_HEADER, HOLD_HEADER, WAIT_PATH } from '../../src/core/control-api.js';
import { waitAuthorization, WAIT_AUTH_TTL_MS } from '../../src/platform/wait-auth.js';

export interface WaitAnswer {
  status: number;
  body: any;
  headers: http.IncomingHttpHeaders;
}

export interface PendingWait {
  // Resolves with the answer; rejects when the connection fails without one.
  answer: Promise<WaitAnswer>;
  // Whether the answer has come.
  answered(): boolean;
  // Drops the connection (a client that went away).
  abort(): void;
}

// The Authorization header of node `nodeId` signed with `key`, good from `now` for the TTL.
export function waitAuth(nodeId: string, key: KeyObject, now: number = Date.now()): string {
  return waitAuthorization(nodeId, now + WAIT_AUTH_TTL_MS, key);
}

// Sends a wait to `url` with `authorization` (none when undefined) and `query` (default: none).
export function sendWait(url: string, authorization: string | undefined, query = '', method = 'GET'): PendingWait {
  return sendPending(`${url}${WAIT_PATH}${query}`, method, authorization === undefined ? {} : { authorization }, undefined);
}

// One request on a connection of its own, its answer awaited or still pending.
function sendPending(target: string, method: string, headers: http.OutgoingHttpHeaders, body: string | undefined): PendingWait {
  let done = false;
  const req = http.request(target, { method, agent: false, headers });
  const answer = new Promise<WaitAnswer>((resolve, reject) => {
    req.on('error', reject);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        done = true;
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined, headers: res.headers });
      });
    });
  });
  answer.catch(() => undefined);
  req.end(body);
  return { answer, answered: () => done, abort: () => req.destroy() };
}

// Resolves after `ms` of real time.
export const pause = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// Posts a heartbeat body to `url` with the hold header `hold` (none when undefined) and the
// agent's optional-field headers, answered or still pending (a held heartbeat).
export function sendHeartbeat(url: string, body: string, hold: string | undefined): PendingWait {
  const headers: http.OutgoingHttpHeaders = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), [HEARTBEAT_VERSIONS_HEADER]: '1, 2, 3, 4, 5, 6' };
  if (hold !== undefined) headers[HOLD_HEADER] = hold;
  return sendPending(`${url}${HEARTBEAT_PATH}`, 'POST', headers, body);
}
