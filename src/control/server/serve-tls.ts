// The TLS of steward-control's https listeners (the fleet's and --admin-listen's): the options
// they are made with, and the change of certificate, key and ticket keys while they run
// (`serve` re-reads its files on SIGHUP, so a renewed certificate or rotated ticket keys need
// no restart).
import http from 'node:http';
import https from 'node:https';
import { createSecureContext } from 'node:tls';

export interface ServeTls {
  cert: string | Buffer;
  key: string | Buffer;
  // The 48 bytes that seal TLS session tickets (serve --tls-ticket-keys), the same on every
  // instance behind one address so that an agent's session resumes on any of them; without
  // them each process makes its own at random.
  ticketKeys?: Buffer;
}

// The listener's server: https with `tls` (and what puts new TLS in use on it, see
// applyServeTls), plain http without.
export function createListenerServer(tls: ServeTls | undefined, handler: http.RequestListener): { server: http.Server; reloadTls?: (t: ServeTls) => void } {
  if (!tls) return { server: http.createServer(handler) };
  const server = https.createServer({ cert: tls.cert, key: tls.key, ...(tls.ticketKeys ? { ticketKeys: tls.ticketKeys } : {}) }, handler);
  return { server, reloadTls: (t) => applyServeTls(server, t) };
}

// Throws (OpenSSL's reason) unless the certificate and key make a TLS context together: a
// certificate that is not PEM, a key that is not the certificate's. Checked before any
// listener changes, so that a bad pair leaves every listener as it was.
export function checkServeTls(t: ServeTls): void {
  createSecureContext({ cert: t.cert, key: t.key });
}

// Puts `t` in use on `server` for the connections accepted from now on; those open keep theirs.
// Without ticket keys in `t`, the listener keeps the ones it has (setSecureContext alone would
// draw new ones, and every agent's next connection would be a full handshake).
export function applyServeTls(server: https.Server, t: ServeTls): void {
  const keys = t.ticketKeys ?? server.getTicketKeys();
  server.setSecureContext({ cert: t.cert, key: t.key });
  server.setTicketKeys(keys);
}
