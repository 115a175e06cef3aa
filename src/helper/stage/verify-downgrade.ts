import type { KeyObject } from 'node:crypto';
import { allowDowngradeCommand, downgradePayloadSchema, MAX_DOWNGRADE_AHEAD_MS, MAX_DOWNGRADE_DAYS } from '../../core/downgrade-schema.js';
import { StewardError } from '../../core/errors.js';
import { formatIssues } from '../../core/format-issues.js';
import { trustedKeysFor, type HostPaths } from '../../core/paths.js';
import type { Envelope } from '../../core/release-schemas.js';
import { compareVersions } from '../../core/version.js';
import { DOMAINS, loadTrustedKeys, openEnvelope } from '../../platform/keys.js';
import { logger } from '../../platform/log.js';
import { trustRule, trustScope } from '../../platform/trusted-file.js';

const log = logger('helper:stage');

// A downgrade the app's release key allowed: by which key, until when, and the floor it goes below.
export interface AuthorizedDowngrade {
  keyId: string;
  // Under TUF (docs/design.md §21), what authorized it, in the place of a key.
  by?: string;
  notAfter: number;
  below: string;
}

export interface DowngradeExpectation {
  app: string;
  // The version being installed, and the floor it is below (the highest version active here).
  version: string;
  below: string;
  now: number;
  // The keys trusted for `app` (trusted-keys/<app>/), by keyId, and where they are, for messages.
  keys: ReadonlyMap<string, KeyObject>;
  keysDir: string;
  // What in keysDir was not trusted and why, for the message of an unknown key.
  notTrusted?: string;
}

// Checks a signed downgrade authorization (docs/design.md §18) for going from `below` down to
// `version` of `app`: the signature under steward-downgrade-v1 by a key trusted for this app,
// verified over the exact payload bytes before they are parsed; then the payload names this app
// and exactly this version (another, lower or higher, is refused), and its notAfter has not
// passed on this host's clock, nor lies further ahead than an authorization is ever signed for.
// Every failure is DOWNGRADE_REFUSED saying which check failed and what the operator runs.
export function checkDowngrade(envelope: Envelope | undefined, x: DowngradeExpectation): AuthorizedDowngrade {
  const { app, version } = x;
  const command = allowDowngradeCommand(app, version);
  const refuse = (why: string, remedy = `\`${command}\` signs one; the control plane sends it with the update`): never => {
    throw new StewardError('DOWNGRADE_REFUSED', `${app} ${version} is below ${x.below}, the highest version that was active here, and ${why}: ${remedy}`);
  };
  if (envelope === undefined) return refuse('no downgrade authorization came with the request');
  if (x.keys.size === 0) return refuse(`no keys are trusted for app ${app} (${x.keysDir} holds no trusted *.pub)${x.notTrusted ?? ''}`, `trust ${app}'s release key on this host, then \`${command}\``);
  const opened = openEnvelope(envelope, DOMAINS.downgrade, x.keys);
  if (!opened.ok) {
    const why = {
      'unknown-key': `its downgrade authorization is signed by key ${envelope.keyId}, which is not trusted for app ${app} (${x.keysDir}; a key of another app authorizes nothing for this one)${x.notTrusted ?? ''}`,
      'bad-signature': `its downgrade authorization does not verify under ${DOMAINS.downgrade} with key ${envelope.keyId} (altered, or signed for another purpose)`,
      'bad-encoding': 'its downgrade authorization is not canonical base64 of the right length',
      'bad-json': 'its downgrade authorization holds no JSON',
    }[opened.reason];
    return refuse(why, `sign one with a release key of ${app} that this host trusts: \`${command}\``);
  }
  const parsed = downgradePayloadSchema.safeParse(opened.payload);
  if (!parsed.success) return refuse(`its downgrade authorization (key ${opened.keyId}) is not one {app, version, notAfter}: ${formatIssues(parsed.error.issues)}`);
  const p = parsed.data;
  if (p.app !== app) return refuse(`its downgrade authorization (key ${opened.keyId}) is for app ${p.app}, not ${app}`);
  if (p.version !== version) {
    const other = compareVersions(p.version, version) > 0 ? `a newer version, ${p.version}` : `another version, ${p.version}`;
    return refuse(`its downgrade authorization (key ${opened.keyId}) is for ${other}: an authorization names exactly the version to install`);
  }
  if (p.notAfter <= x.now) {
    return refuse(`its downgrade authorization (key ${opened.keyId}) expired at ${new Date(p.notAfter).toISOString()} (this host's clock says ${new Date(x.now).toISOString()})`, `sign a fresh one: \`${command}\``);
  }
  if (p.notAfter > x.now + MAX_DOWNGRADE_AHEAD_MS) {
    return refuse(
      `its downgrade authorization (key ${opened.keyId}) holds until ${new Date(p.notAfter).toISOString()}, further ahead of this host's clock (${new Date(x.now).toISOString()}) than the ${MAX_DOWNGRADE_DAYS} days any authorization is signed for`,
      `check the clocks of this host and of the machine that signed it, then \`${command}\``,
    );
  }
  return { keyId: opened.keyId, notAfter: p.notAfter, below: x.below };
}

// checkDowngrade against the keys in trusted-keys/<app>/ (each key file under the trust rule of
// docs/design.md §2, as a manifest's keys are: a file the rule rejects is ignored and named).
export async function verifyDowngrade(paths: HostPaths, envelope: Envelope | undefined, x: Omit<DowngradeExpectation, 'keys' | 'keysDir' | 'notTrusted'>): Promise<AuthorizedDowngrade> {
  const keysDir = trustedKeysFor(paths, x.app);
  const scope = trustScope(keysDir, paths.root);
  const { keys, ignored } = envelope === undefined ? { keys: new Map<string, KeyObject>(), ignored: [] } : await loadTrustedKeys(keysDir, scope);
  for (const i of ignored) log('ignoring an untrusted release key of app=%s: %s', x.app, i.why);
  const notTrusted = ignored.length ? `; not trusted: ${ignored.map((i) => i.why).join('; ')} (${trustRule(scope)})` : '';
  return checkDowngrade(envelope, { ...x, keys, keysDir, notTrusted });
}
