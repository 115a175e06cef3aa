// One attempt to deliver an event body to a hook's receiver: a POST that must be answered 2xx within
// the deadline. Everything the receiver sends back is hostile: at most MAX_ANSWER_BYTES of its
// body are read (for the reason shown to the operator), a redirect is never followed (a 3xx is a
// failed attempt that says where it pointed), and the deadline covers connecting, the answer and
// its body, so a slow receiver costs one attempt's deadline and nothing else.
import http from 'node:http';
import https from 'node:https';
import { checkHookUrl } from './hook-url.js';

export const MAX_ANSWER_BYTES = 4096;
export const DEFAULT_POST_TIMEOUT_MS = 10_000;

export interface PostOptions {
  timeoutMs: number;
  // The CAs a https receiver's certificate must chain to (Node's plus --ca-file), or Node's.
  ca?: string[] | undefined;
}

export interface PostOutcome {
  ok: boolean;
  // The receiver's HTTP status, or null when it gave none (down, TLS, the deadline).
  status: number | null;
  // What happened, for a person: `answered 204`, `answered 302 (redirect to ...; not followed)`.
  message: string;
  ms: number;
}

// Posts `body` with `headers` to `url`. Never throws: every failure is an outcome.
export function postEvent(url: string, body: string, headers: Record<string, string>, o: PostOptions): Promise<PostOutcome> {
  const t0 = performance.now();
  const done = (ok: boolean, status: number | null, message: string): PostOutcome => ({ ok, status, message, ms: Math.round(performance.now() - t0) });
  let u: URL;
  try {
    u = checkHookUrl(url);
  } catch (err) {
    return Promise.resolve(done(false, null, (err as Error).message));
  }
  return new Promise((resolve) => {
    let settled = false;
    const finish = (o: PostOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      resolve(o);
    };
    const bytes = Buffer.from(body, 'utf8');
    const mod = u.protocol === 'https:' ? https : http;
    const req = mod.request(u, {
      method: 'POST',
      agent: false,
      headers: { ...headers, 'content-length': String(bytes.length) },
      ...(u.protocol === 'https:' && o.ca ? { ca: o.ca } : {}),
    });
    const timer = setTimeout(() => finish(done(false, null, `no answer within ${o.timeoutMs} ms`)), o.timeoutMs);
    req.on('error', (err) => finish(done(false, null, `cannot post: ${printable(err.message, 300)}`)));
    req.on('response', (res) => {
      const status = res.statusCode ?? 0;
      const chunks: Buffer[] = [];
      let got = 0;
      const answered = () => {
        const text = printable(Buffer.concat(chunks).subarray(0, MAX_ANSWER_BYTES).toString('utf8'), 200);
        if (status >= 200 && status < 300) return finish(done(true, status, `answered ${status}`));
        if (status >= 300 && status < 400) {
          const to = typeof res.headers.location === 'string' ? printable(res.headers.location, 200) : '(no Location)';
          return finish(done(false, status, `answered ${status}, a redirect to ${to}: redirects are never followed; set the hook's URL to where it should post`));
        }
        finish(done(false, status, `answered ${status}${text ? `: ${text}` : ''}`));
      };
      res.on('data', (c: Buffer) => {
        if (got < MAX_ANSWER_BYTES) chunks.push(c.subarray(0, MAX_ANSWER_BYTES - got));
        got += c.length;
        // Why stop reading: the answer's body is only a reason to show; the rest is not waited for.
        if (got >= MAX_ANSWER_BYTES) answered();
      });
      res.on('end', answered);
      res.on('error', () => answered());
    });
    req.end(bytes);
  });
}

// Text from the receiver as one printable line of at most `max` characters.
function printable(s: string, max: number): string {
  const one = s.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ').trim();
  return one.length > max ? one.slice(0, max - 3) + '...' : one;
}
