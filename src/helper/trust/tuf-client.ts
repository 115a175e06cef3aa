// tuf-js's Updater as the helper runs it (docs/design.md §21): never over the network. A refresh
// runs it over the files of a bundle the agent fetched (BundleFetcher: those bytes alone, a 404
// for any other, so the Updater stops looking for newer roots), on a copy of the stored metadata,
// and the copy becomes the trusted metadata only when the whole refresh verified. An update's
// check runs it over the stored files alone (no new metadata: the same versions, their expiry
// checked again at this host's clock). tuf-js's errors are mapped to reason codes (trustErrorOf).
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { Metadata, MetadataKind, type Root, type TargetFile } from '@tufjs/models';
import { BaseFetcher, Updater } from 'tuf-js';
// tuf-js does not export its errors from its index (docs/design.md §21.1); there is no exports
// map, so the file is reachable.
import { BadVersionError, DownloadHTTPError, DownloadLengthMismatchError, ExpiredMetadataError, RuntimeError } from 'tuf-js/dist/error.js';
import { StewardError, type ReasonCode } from '../../core/errors.js';
import type { HostPaths } from '../../core/paths.js';
import { appOfRole, delegatedRoleName } from '../../core/trust/roles.js';
import { strictBase64 } from '../../platform/keys.js';
import { checkTrustRoot } from '../../platform/trust/root-check.js';
import { TRUST_FILE_NAME_RE, type TrustBundle } from '../../core/control-api.js';
import { readStore, removeWork, stateOf, swapIn, withTrustLock, workCopy, type TrustState } from './trust-store.js';

export { readTrustState, type TrustState } from './trust-store.js';

// Where the Updater believes the metadata lives: nothing is ever fetched from it.
const METADATA_URL = 'https://steward.invalid/metadata';

// tuf-js's own caps on each file it reads (its `*MaxLength` config): a file over its cap is
// endless data (TRUST_TOO_LARGE). A snapshot named with its length in the timestamp is capped
// at that length.
export const TUF_LIMITS = {
  rootMaxLength: 512 * 1024,
  timestampMaxLength: 16 * 1024,
  snapshotMaxLength: 2 * 1024 * 1024,
  targetsMaxLength: 4 * 1024 * 1024,
  // A root rotation skipped by at most this many versions in one refresh.
  maxRootRotations: 64,
} as const;

// Serves `files` by name (the last segment of the URL) and a 404 for any other.
export class BundleFetcher extends BaseFetcher {
  constructor(private readonly files: ReadonlyMap<string, Buffer>) {
    super();
  }
  override async fetch(url: string): Promise<ReadableStream<Uint8Array<ArrayBuffer>>> {
    const name = decodeURIComponent(url.slice(url.lastIndexOf('/') + 1));
    const bytes = url.startsWith(METADATA_URL + '/') ? this.files.get(name) : undefined;
    if (!bytes) throw new DownloadHTTPError(`${name} is not in the bundle`, 404);
    const copy = new Uint8Array(bytes);
    return new ReadableStream<Uint8Array<ArrayBuffer>>({
      start(c) {
        c.enqueue(copy);
        c.close();
      },
    });
  }
}

// What tuf-js's message (or the message of the error it wrapped in a RuntimeError: it wraps
// what fails in loading the snapshot or a targets role, keeping only the text) says.
const BY_MESSAGE: Array<[RegExp, ReasonCode]> = [
  [/Max length reached/, 'TRUST_TOO_LARGE'],
  [/is expired/, 'TRUST_EXPIRED'],
  [/is less than current version/, 'TRUST_ROLLBACK'],
  [/does not match snapshot version|doesn't match timestamp|Expected hash|Expected length|Missing .* in (new )?snapshot/, 'TRUST_MISMATCH'],
  [/was signed by \d+\/\d+ keys|failed to verify .* signature|no signature for key/, 'TRUST_SIGNATURE'],
];

// The reason code of an error thrown by tuf-js (or @tufjs/models) in a refresh.
export function trustCodeOf(err: unknown): ReasonCode {
  if (err instanceof StewardError) return err.code;
  if (err instanceof DownloadLengthMismatchError) return 'TRUST_TOO_LARGE';
  if (err instanceof ExpiredMetadataError) return 'TRUST_EXPIRED';
  const message = err instanceof Error ? err.message : String(err);
  if ((err as Error | undefined)?.constructor?.name === 'UnsignedMetadataError') return 'TRUST_SIGNATURE';
  // A root file of the next version holding another: an older root replayed is a rollback, any other is malformed.
  const root = /Expected version (\d+), got (\d+)/.exec(message);
  if (err instanceof BadVersionError && root) return Number(root[2]) < Number(root[1]) ? 'TRUST_ROLLBACK' : 'TRUST_INVALID';
  for (const [re, code] of BY_MESSAGE) if (re.test(message)) return code;
  if (err instanceof BadVersionError) return 'TRUST_ROLLBACK';
  return 'TRUST_INVALID';
}

export function trustErrorOf(err: unknown, what: string): StewardError {
  if (err instanceof StewardError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new StewardError(trustCodeOf(err), `${what}: ${message}`, { cause: err });
}

// Parses stored root/timestamp bytes (already verified by tuf-js when they were stored).
function parseRoot(bytes: Buffer): Metadata<Root> {
  return Metadata.fromJSON(MetadataKind.Root, JSON.parse(bytes.toString('utf8')));
}

// The files of a bundle by name, each strict base64 under a name a client fetches.
export function bundleFiles(bundle: TrustBundle): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  for (const [name, text] of Object.entries(bundle.files)) {
    if (!TRUST_FILE_NAME_RE.test(name)) throw new StewardError('TRUST_INVALID', `the bundle holds ${JSON.stringify(name)}, which is no TUF metadata file name`);
    const bytes = strictBase64(text);
    if (!bytes) throw new StewardError('TRUST_INVALID', `the bundle's ${name} is not strict base64`);
    files.set(name, bytes);
  }
  return files;
}

// The apps whose delegations a snapshot names.
function delegatedApps(snapshotBytes: Buffer | undefined): string[] {
  if (!snapshotBytes) return [];
  const meta = (JSON.parse(snapshotBytes.toString('utf8')) as { signed?: { meta?: Record<string, unknown> } }).signed?.meta ?? {};
  return Object.keys(meta)
    .map((f) => (f.endsWith('.json') ? appOfRole(f.slice(0, -'.json'.length)) : null))
    .filter((a): a is string => a !== null);
}

// An Updater over `work` (a copy of the store) that fetches from `fetcher` alone, at the time `now`.
function updaterOver(work: string, fetcher: BaseFetcher): Updater {
  return new Updater({ metadataDir: work, metadataBaseUrl: METADATA_URL, fetcher, config: { ...TUF_LIMITS } });
}

// Refreshes the trusted metadata from a bundle: tuf-js's whole client workflow (roots one version
// at a time, timestamp, snapshot, top-level targets, then every app delegation the snapshot
// names), on a copy of the store; the copy is trusted only when all of it verified. Throws a
// StewardError with a TRUST_* code, the store untouched, otherwise.
export async function refreshTrust(paths: HostPaths, bundle: TrustBundle, now: number): Promise<TrustState> {
  const files = bundleFiles(bundle);
  return withTrustLock(paths, async () => {
    const stored = await readStore(paths);
    if (!stored.has('root.json')) {
      throw new StewardError('TRUST_INVALID', 'this host trusts no TUF root: set one with `agentctl trust set-root FILE` (or `agentctl enroll --trust-root FILE`)');
    }
    const work = await workCopy(paths, stored);
    try {
      try {
        const updater = updaterOver(work, new BundleFetcher(files));
        await updater.refresh();
        for (const app of delegatedApps(await fsp.readFile(path.join(work, 'snapshot.json')))) {
          // Any path under the app's delegation: the walk loads (and verifies) app.<name>.json.
          await updater.getTargetInfo(`${app}/0/manifest.json`);
        }
      } catch (err) {
        throw trustErrorOf(err, 'the trust bundle was refused; nothing was trusted from it');
      }
      await swapIn(paths, work);
    } finally {
      await removeWork(work);
    }
    return stateOf(await readStore(paths), now);
  });
}

// The target files of `targetPaths` as the stored metadata signs them (undefined: no such
// target under the delegation that may sign it), the stored metadata verified again from the
// trusted root at this host's clock, nothing written. Throws TRUST_* for metadata that no longer
// holds (TRUST_EXPIRED above all).
export async function storedTargets(paths: HostPaths, targetPaths: readonly string[]): Promise<Map<string, TargetFile | undefined>> {
  // The top-level roles and the delegations of the apps asked about: tuf-js reads no other.
  const wanted = new Set(['root.json', 'timestamp.json', 'snapshot.json', 'targets.json', ...targetPaths.map((p) => `${delegatedRoleName(p.slice(0, p.indexOf('/')))}.json`)]);
  const stored = await withTrustLock(paths, () => readStore(paths, (n) => wanted.has(n)));
  if (!stored.has('root.json')) throw new StewardError('TRUST_INVALID', 'this host trusts no TUF root');
  // The stored files as a fetcher would have served them: `<v>.<role>.json` for a role stored at version v.
  const served = new Map<string, Buffer>();
  for (const [name, bytes] of stored) {
    if (name === 'root.json') continue;
    if (name === 'timestamp.json') {
      served.set(name, bytes);
      continue;
    }
    try {
      const v = (JSON.parse(bytes.toString('utf8')) as { signed?: { version?: unknown } }).signed?.version;
      if (typeof v === 'number') served.set(`${v}.${name}`, bytes);
    } catch {
      // Unparsable: not served (tuf-js refuses the local copy too).
    }
  }
  const work = await workCopy(paths, stored);
  try {
    const updater = updaterOver(work, new BundleFetcher(served));
    const out = new Map<string, TargetFile | undefined>();
    try {
      await updater.refresh();
      for (const p of targetPaths) out.set(p, await updater.getTargetInfo(p));
    } catch (err) {
      throw trustErrorOf(err, "this host's trusted TUF metadata does not hold");
    }
    return out;
  } finally {
    await removeWork(work);
  }
}

// The stored root, parsed (tuf-js verified it when it was stored).
export async function storedRoot(paths: HostPaths): Promise<Metadata<Root> | null> {
  const bytes = (await readStore(paths, (n) => n === 'root.json')).get('root.json');
  return bytes ? parseRoot(bytes) : null;
}


// Makes `bytes` the host's trusted root (agentctl trust set-root, enroll --trust-root): refused
// (TRUST_INVALID) when it is not a root whose own keys meet its threshold, and (TRUST_ROLLBACK)
// when its version is below the root trusted now. The same root again changes nothing; any
// other starts the metadata afresh from it (the next trust-refresh brings the rest).
export async function setTrustedRoot(paths: HostPaths, bytes: Buffer, now: number): Promise<TrustState> {
  const r = checkTrustRoot(bytes);
  if ('why' in r) throw new StewardError('TRUST_INVALID', `the file is not a usable TUF root: ${r.why}`);
  return withTrustLock(paths, async () => {
    const stored = await readStore(paths);
    const was = stored.get('root.json');
    if (was && was.equals(bytes)) return stateOf(stored, now);
    if (was) {
      const v = parseRoot(was).signed.version;
      if (r.root.signed.version < v) {
        throw new StewardError('TRUST_ROLLBACK', `the root is version ${r.root.signed.version}, below version ${v}, which this host trusts already`);
      }
    }
    const work = await workCopy(paths, new Map([['root.json', bytes]]));
    try {
      await swapIn(paths, work);
    } finally {
      await removeWork(work);
    }
    return stateOf(await readStore(paths), now);
  });
}
