import { promises as fsp } from 'node:fs';
import tls from 'node:tls';
import { StewardError } from '../core/errors.js';
import { fetchFailed } from './fetch-failed.js';
import { readTrustedFile, trustRule, type TrustScope } from './trusted-file.js';

// A CA bundle larger than this is not a CA file (the whole Mozilla bundle is about 220 KB).
const MAX_CA_BYTES = 4 * 1024 * 1024;

// The lists readExtraCas made lately, by the PEM they add; callers never change a list.
const made = new Map<string, string[]>();
// Why a few and not one: the helper verifies a control plane's URL against another list than
// any other URL (fetch-trust.ts), and alternating between two must not make either again.
const MADE_MAX = 4;

// One CA file to add, and the trust rule it must pass when root reads it (the helper, doctor).
export interface CaSource {
  file: string;
  trust?: TrustScope | undefined;
}

// Node's default CAs plus the PEM in `caFile`, or undefined when no file is named (a list the
// caller must not change: the next read of the same bytes returns it again). With `trust`
// (root reads it: the helper, doctor) the file must pass the trust rule, else CONFIG_INVALID.
export async function readExtraCa(caFile: string | undefined, trust?: TrustScope): Promise<string[] | undefined> {
  return readExtraCas(caFile ? [{ file: caFile, trust }] : []);
}

// Node's default CAs plus the PEM of each file, in order, or undefined when there is none; each
// file read as readExtraCa reads its one.
export async function readExtraCas(sources: readonly CaSource[]): Promise<string[] | undefined> {
  if (sources.length === 0) return undefined;
  const pems: string[] = [];
  for (const s of sources) pems.push(await readPem(s.file, s.trust));
  const key = pems.join('\0');
  // The same list as before when the files hold the same bytes: a TLS client makes the
  // context of a list once (http-request.ts), and the helper reads its CA files again at each
  // fetch, so the list of unchanged files is made, and its 145 certificates parsed, once.
  let ca = made.get(key);
  if (!ca) {
    ca = [...tls.rootCertificates, ...pems];
    made.set(key, ca);
    if (made.size > MADE_MAX) made.delete(made.keys().next().value as string);
  }
  return ca;
}

async function readPem(caFile: string, trust: TrustScope | undefined): Promise<string> {
  try {
    if (trust) {
      const got = await readTrustedFile(caFile, trust, MAX_CA_BYTES);
      if (got.state === 'untrusted') throw new StewardError('CONFIG_INVALID', `the CA file ${caFile} is not trusted: ${got.why}; ${trustRule(trust)}`);
      if (got.state === 'missing') throw fetchFailed(`cannot read the CA file ${caFile}: it does not exist`);
      return got.bytes.toString('utf8');
    }
    return await fsp.readFile(caFile, 'utf8');
  } catch (err) {
    if (err instanceof StewardError) throw err;
    throw fetchFailed(`cannot read the CA file ${caFile}: ${(err as Error).message}`, err);
  }
}
