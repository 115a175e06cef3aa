// Which CAs an https download is verified against, and what a certificate that does not verify
// says. One CA setting covers the control plane: a URL on its origin (the artifacts it serves)
// is verified against Node's CAs plus `controlPlane.caFile`, as its enrollment and heartbeats
// are, and `fetch.caFile` too (the two add up there: a host that named the control plane's CA in
// fetch.caFile before keeps working). Any other origin: Node's CAs plus `fetch.caFile` only, so
// the control plane's private CA vouches for no other server.
import type { StewardError } from '../core/errors.js';
import { readExtraCas, type CaSource } from './extra-ca.js';
import { describeUrl, fetchFailed } from './fetch-failed.js';
import type { TrustScope } from './trusted-file.js';

// The control plane as a download sees it: its URLs' origins and its CA file.
export interface ControlPlaneCa {
  // The configured control plane URLs (controlPlane.url): a URL on the origin of one of them is
  // the control plane's.
  urls: readonly string[];
  caFile?: string | undefined;
  caTrust?: TrustScope | undefined;
}

// The CA settings of one fetch.
export interface FetchCa {
  caFile?: string | undefined; // fetch.caFile
  caTrust?: TrustScope | undefined;
  controlPlane?: ControlPlaneCa | undefined;
}

// The CAs chosen for one URL, and what the choice was, for the error of a failed verification.
export interface CaChoice {
  ca: string[] | undefined;
  onControlPlane: boolean;
}

// Whether `url` has the origin (scheme, host, port) of a control plane URL.
export function isControlPlaneOrigin(url: URL, cp: ControlPlaneCa | undefined): boolean {
  if (!cp) return false;
  return cp.urls.some((u) => {
    try {
      return new URL(u).origin === url.origin;
    } catch {
      return false;
    }
  });
}

// The CA list for `url` (and every redirect from it, which stays on its origin: fetch-url.ts).
export async function chooseCa(url: URL, opts: FetchCa): Promise<CaChoice> {
  const onControlPlane = isControlPlaneOrigin(url, opts.controlPlane);
  const sources: CaSource[] = [];
  if (onControlPlane && opts.controlPlane?.caFile) sources.push({ file: opts.controlPlane.caFile, trust: opts.controlPlane.caTrust });
  if (opts.caFile) sources.push({ file: opts.caFile, trust: opts.caTrust });
  return { ca: url.protocol === 'https:' ? await readExtraCas(sources) : undefined, onControlPlane };
}

// The OpenSSL verification codes that mean "no CA here vouches for this certificate".
const UNTRUSTED = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
  'CERT_CHAIN_TOO_LONG',
  'INVALID_CA',
]);
const OUT_OF_DATE = new Set(['CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID']);
const WRONG_NAME = 'ERR_TLS_CERT_ALTNAME_INVALID';

// Whether `err` is a certificate that did not verify (not a connection that failed).
export function isTlsVerifyError(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return typeof code === 'string' && (UNTRUSTED.has(code) || OUT_OF_DATE.has(code) || code === WRONG_NAME);
}

// The FETCH_FAILED of a certificate that did not verify: the URL, what Node said, and the setting
// that would make it verify, in words an operator can act on.
export function tlsVerifyFailed(url: URL, err: NodeJS.ErrnoException, choice: CaChoice, opts: FetchCa): StewardError {
  const where = describeUrl(url);
  const code = err.code ?? '';
  const said = `${err.message} (${code})`;
  let hint: string;
  if (OUT_OF_DATE.has(code)) {
    hint = `its certificate is outside its validity dates: renew it, or check this host's clock`;
  } else if (code === WRONG_NAME) {
    hint = `its certificate does not name ${url.hostname}: use a URL with a name the certificate holds, or a certificate for this one`;
  } else if (choice.onControlPlane) {
    const cpFile = opts.controlPlane?.caFile;
    const checked = [cpFile ? `controlPlane.caFile ${cpFile}` : null, opts.caFile ? `fetch.caFile ${opts.caFile}` : null].filter(Boolean);
    hint =
      `${url.origin} is the control plane, whose downloads are verified as its heartbeats are: ` +
      (checked.length ? `Node's CAs and ${checked.join(' and ')} hold no CA that signed its certificate; put that CA in controlPlane.caFile` : `name the CA that signed its certificate in controlPlane.caFile`);
  } else {
    hint = opts.caFile
      ? `Node's CAs and fetch.caFile ${opts.caFile} hold no CA that signed its certificate; put that CA in fetch.caFile`
      : `name the CA that signed its certificate in fetch.caFile (controlPlane.caFile covers only the control plane's own URLs)`;
  }
  return fetchFailed(`cannot verify the TLS certificate of ${where}: ${said}; ${hint}`, err);
}
