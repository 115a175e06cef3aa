// Who is asking (docs/design.md §12): an operator token (a bearer token on the admin API, or the
// token a dashboard login turns into a session), checked against every operator in constant
// time. A wrong one is counted against its source in the store and audited in the same
// transaction, and its answer waits longer the more recent failures the source has (up to
// 10 s). Only failures wait: a right token is checked at once and answered at once, never queued
// behind the source's failures (issue 31 item 12: twelve queued failures made it wait 66 s). What
// bounds guessing in parallel is that a source may have at most MAX_PENDING_FAILURES failures
// waiting for their answer; past that, its credentials are answered 429 unchecked until one
// goes. Slowed, never locked out.
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { Clock } from '../../platform/clock.js';
import { recordAudit } from '../audit/record-audit.js';
import { StewardError } from '../../core/errors.js';
import { FAILURE_DELAY_CAP_MS, FAILURE_WINDOW_MS, MAX_PENDING_FAILURES, failureDelayMs } from '../operators/failure-delay.js';
import { findOperatorByToken } from '../operators/operator-tokens.js';
import { failureSourceOf, isLoopbackAddress, requestAddress, requestIsTls, type TrustedProxies } from '../operators/request-source.js';
import type { ControlStore, OperatorRow } from '../store/store.js';

export interface RequestFacts {
  // The client's address (past trusted proxies), as the audit log names it.
  address: string;
  // What failures are counted under (the address, an IPv6 /64).
  failureSource: string;
  // Came over TLS (its own socket, or a trusted proxy's X-Forwarded-Proto: https).
  tls: boolean;
  // The client is on loopback: the peer itself, or the client a trusted proxy names.
  clientLoopback: boolean;
  // This server's origin as the client addressed it (scheme://host), for Origin checks.
  origin: string;
}

// The facts of a request that authentication and the audit log need.
export function requestFacts(req: IncomingMessage, trusted: TrustedProxies): RequestFacts {
  const peer = req.socket.remoteAddress;
  const address = requestAddress(peer, req.headers['x-forwarded-for'], trusted);
  const tls = requestIsTls((req.socket as TLSSocket).encrypted === true, peer, req.headers['x-forwarded-proto'], trusted);
  const forwardedHost = trusted.has(peer ?? '') ? req.headers['x-forwarded-host'] : undefined;
  const host = (Array.isArray(forwardedHost) ? forwardedHost[0] : forwardedHost)?.split(',')[0]?.trim() || req.headers.host || '';
  return { address, failureSource: failureSourceOf(address), tls, clientLoopback: isLoopbackAddress(address), origin: `${tls ? 'https' : 'http'}://${host}` };
}

// Whether a credential may be taken over this request: over TLS, or from a loopback client.
// Elsewhere a token or cookie crossed the network in clear text and is refused; also when a
// trusted proxy on loopback relays, over plain http, a client that is not on loopback.
export function credentialsAllowed(f: RequestFacts): boolean {
  return f.tls || f.clientLoopback;
}

export interface Authenticator {
  // The operator whose token `token` is, or null after the failure was counted, audited and
  // waited for. `via` and `target` go in the audit entry (`bearer`, `/v1/admin/nodes`). Throws
  // BUSY (HTTP 429) unchecked while the source has MAX_PENDING_FAILURES answers waiting.
  checkToken(f: RequestFacts, token: string | null, via: string, target: string): Promise<OperatorRow | null>;
}

export function createAuthenticator(o: { store: ControlStore; clock: Pick<Clock, 'sleep'>; durable: () => Promise<void> }): Authenticator {
  // Failures whose answer is still waiting, per source (in this process).
  const pending = new Map<string, number>();
  const settle = (source: string): void => {
    const n = (pending.get(source) ?? 1) - 1;
    if (n > 0) pending.set(source, n);
    else pending.delete(source);
  };
  return {
    checkToken: async (f, token, via, target) => {
      const source = f.failureSource;
      if ((pending.get(source) ?? 0) >= MAX_PENDING_FAILURES) {
        throw new StewardError('BUSY', `too many failed authentications from ${f.address} are still being answered; try again in ${Math.ceil(FAILURE_DELAY_CAP_MS / 1000)} s`, {
          details: { httpStatus: 429, retryAfterS: Math.ceil(FAILURE_DELAY_CAP_MS / 1000) },
        });
      }
      // Counted before the first await, so that a burst cannot all pass the check above.
      pending.set(source, (pending.get(source) ?? 0) + 1);
      try {
        const operators = await o.store.read((tx) => tx.operators.list());
        const found = token === null ? null : findOperatorByToken(operators, token);
        if (found) return found;
        const failures = await o.store.write(async (tx) => {
          const now = await tx.now();
          const n = await tx.authFailures.record(source, now, now - FAILURE_WINDOW_MS);
          await recordAudit(tx, { operator: null, source: f.address }, 'auth.failed', target, { via, failures: n });
          return n;
        });
        await o.durable();
        const delay = failureDelayMs(failures);
        if (delay > 0) await o.clock.sleep(delay);
        return null;
      } finally {
        // A right token leaves at once; a failure holds its place until its answer goes.
        settle(source);
      }
    },
  };
}
