import { promises as fsp } from 'node:fs';
import tls from 'node:tls';
import { StewardError } from '../core/errors.js';
import { fetchFailed } from './fetch-failed.js';
import { readTrustedFile, trustRule, type TrustScope } from './trusted-file.js';

// A CA bundle larger than this is not a CA file (the whole Mozilla bundle is about 220 KB).
const MAX_CA_BYTES = 4 * 1024 * 1024;

// The last list readExtraCa made; callers never change a list.
let last: { pem: string; ca: string[] } | null = null;

// Node's default CAs plus the PEM in `caFile`, or undefined when no file is named (a list the
// caller must not change: the next read of the same bytes returns it again). With `trust`
// (root reads it: the helper, doctor) the file must pass the trust rule, else CONFIG_INVALID.
export async function readExtraCa(caFile: string | undefined, trust?: TrustScope): Promise<string[] | undefined> {
  if (!caFile) return undefined;
  let pem: string;
  try {
    if (trust) {
      const got = await readTrustedFile(caFile, trust, MAX_CA_BYTES);
      if (got.state === 'untrusted') throw new StewardError('CONFIG_INVALID', `the CA file ${caFile} is not trusted: ${got.why}; ${trustRule(trust)}`);
      if (got.state === 'missing') throw fetchFailed(`cannot read the CA file ${caFile}: it does not exist`);
      pem = got.bytes.toString('utf8');
    } else {
      pem = await fsp.readFile(caFile, 'utf8');
    }
  } catch (err) {
    if (err instanceof StewardError) throw err;
    throw fetchFailed(`cannot read the CA file ${caFile}: ${(err as Error).message}`, err);
  }
  // The same list as the last read when the file holds the same bytes: a TLS client makes the
  // context of a list once (http-request.ts), and the helper reads its CA file again at each
  // fetch, so the list of an unchanged file is made, and its 145 certificates parsed, once.
  if (last?.pem !== pem) last = { pem, ca: [...tls.rootCertificates, pem] };
  return last.ca;
}
