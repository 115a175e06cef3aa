import { randomBytes } from 'node:crypto';
import type { FetchAuth } from '../../platform/download-auth.js';
import { requireApp } from '../../host/config.js';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Readable } from 'node:stream';
import type { FetchSettings, HostConfig } from '../../core/config-schema.js';
import { StewardError, toStewardError } from '../../core/errors.js';
import { mustParse } from '../../core/must-parse.js';
import { AGENT_APP } from '../../core/name-checks.js';
import { appDir, objectsDir, stagingDir, trustedKeysFor, versionDir, versionsDir, type HostPaths } from '../../core/paths.js';
import { MARKER_FILE_NAME, MARKER_SCHEMA_VERSION, markerSchema, type Envelope, type Marker } from '../../core/release-schemas.js';
import type { AppState } from '../../core/state-schemas.js';
import type { Progress } from '../../protocol/progress.js';
import type { SocketKind, StageResult } from '../../protocol/schemas.js';
import { ensureDir, fsyncDir, writeJsonAtomic } from '../../platform/fs-atomic.js';
import { removeOwnTree } from '../../platform/remove-tree.js';
import type { Clock } from '../../platform/clock.js';
import { ioStep, noFaults, type Faults } from '../../platform/faults.js';
import { describeUrl } from '../../platform/fetch-failed.js';
import { logger } from '../../platform/log.js';
import { trustScope, type TrustScope } from '../../platform/trusted-file.js';
import { readAppState } from '../state/app-state.js';
import { inspectMarker, readCurrent, readMarker, removeRelease } from '../release-store.js';
import { checkReleaseFile } from './check-release-file.js';
import { checkRefusals, type VersionFloor } from './refusals.js';
import { controlPlaneUrls } from '../../core/control-plane-urls.js';
import type { ControlPlaneCa } from '../../platform/fetch-trust.js';
import type { BytesResult, ExtractJob, ExtractResultLike, StageIO } from './stage-io.js';
import { verifyIndexedManifest, verifyManifest } from './verify-manifest.js';
import { fileTreeAsObjects } from './tree-objects.js';
import { stageFromIndex, type IndexStage, type PatchTry } from './stage-from-index.js';
import { gzipBound } from '../../core/object-pack.js';
import { acceptEncoding, decompressSync, hasZstd, zstdConstant, zstdOf } from '../../core/compression.js';
import { PATCH_WINDOW_LOG_MAX } from '../../core/object-patch.js';
import { encodeFileIndex } from '../../core/file-index.js';
import { indexOfStagedTree } from './staged-index.js';
import { keepIndex, keptIndex } from './kept-indexes.js';
import type { PatchSource } from './stage-from-patch.js';
import { compareVersions, isVersion } from '../../core/version.js';
import { createHash } from 'node:crypto';

// sha512 SRI of bytes.
function integrityOf(bytes: Buffer): string {
  return 'sha512-' + createHash('sha512').update(bytes).digest('base64');
}
import type { ManifestPayload } from '../../core/release-schemas.js';

type FileIndexRef = NonNullable<ManifestPayload['index']>;
import { artifactSources, authFor } from './artifact-sources.js';
import { fetchWithRetries } from './fetch-retry.js';
import { checkFetchUrl } from '../../platform/fetch-url.js';

const log = logger('helper:stage');

// A local file or an upload of at most this many bytes is read into memory, hashed, verified
// and handed to the extraction worker as a Buffer: no archive file is written, read back and
// hashed a second time (bench row 1). 128 MiB: well above the releases this agent stages
// (row 1's largest is 80 MB) and small next to the helper's host, while it bounds what one
// stage holds in memory: the staging of several apps at once (one per app lock) may each hold
// one such Buffer, until the worker has unpacked it. Larger archives, and https fetches,
// go through `<staging>/<attempt>/archive.tgz` as before.
export const ARCHIVE_IN_MEMORY_MAX_BYTES = 128 * 1024 * 1024;

export interface StageDeps {
  paths: HostPaths;
  config: HostConfig;
  clock: Clock;
  io: StageIO;
  // The fault seam (tests): steps of the staging writes may be made to fail.
  faults?: Faults;
  // ARCHIVE_IN_MEMORY_MAX_BYTES unless set: tests lower it to send a small archive through
  // the archive file.
  archiveInMemoryMaxBytes?: number;
  // The jitter of the waits between fetch retries (fetch-retry.ts); Math.random unless set.
  random?: () => number;
  // Aborted when the helper stops: a fetch waiting to be tried again gives up at once (its
  // FETCH_FAILED receipt is written), so that the wait never holds the stopping helper up.
  stopping?: AbortSignal;
  // File the tree's files as objects and link them (docs/design.md §20); true unless set false
  // (tests stage "the old way" with false, to compare and to upgrade from).
  objects?: boolean;
  // A tree from objects has its folders made 0555 at once, or 0700 and chmodded at the end
  // (stage-from-index.ts finds which this process may; tests set it to take either way).
  sealFoldersAtMkdir?: boolean;
}

export interface StageInput {
  kind: SocketKind;
  app: string;
  version: string;
  attemptId?: string | undefined;
  manifest?: Envelope | undefined;
  // The same release's manifest signed with its file index (docs/design.md §20.2): staged from
  // when it verifies as `manifest` does and names the same bytes; the request is refused when not.
  indexedManifest?: Envelope | undefined;
  integrity?: string | undefined;
  path?: string | undefined;
  upload?: { stream: Readable; size: number } | null | undefined;
  allowUnsigned?: boolean | undefined;
  allowDowngrade?: boolean | undefined;
  // The caller checked a signed downgrade authorization for exactly this app and version
  // (verify-downgrade.ts): the highest active version is no floor for it (docs/design.md §18).
  downgradeAuthorized?: boolean | undefined;
  // Under TUF (docs/design.md §21), the manifest payload (and index) the caller verified as the
  // targets of the app's delegation (trust/verify-tuf-update.ts), in the place of a release key's
  // signature on the manifest.
  tufVerified?: { payload: ManifestPayload; index?: FileIndexRef } | undefined;
  force?: boolean | undefined;
  // Versions the update may not go below besides the highest active one (the app steward's).
  floors?: readonly VersionFloor[] | undefined;
  // The folder of keys trusted for this one staging instead of trusted-keys/<app>/: only
  // `agentctl install` sets it (its one-time key); no socket request can (stageInputOf).
  trustedDir?: string | undefined;
  // The app's state as the caller read it under the app's lock (an update); read here when not given.
  state?: AppState | undefined;
  progress?: (p: Progress) => void;
  // The agent's credential for downloads from the control plane (platform/download-auth.ts).
  fetchAuth?: FetchAuth | undefined;
  // The agent's control-plane URLs: an artifact path is fetched from each in turn
  // (artifact-sources.ts), and the credential goes to each of their origins.
  mirrors?: readonly string[] | undefined;
  // The latest time a failed fetch is tried again (fetch-retry.ts): the run's fetch deadline
  // and the window's end, whichever is first.
  fetchUntil?: number | undefined;
  notAfter?: number | undefined;
}

// Makes a fresh attempt id when a request carries none.
export function newAttemptId(now: number): string {
  return `a-${now.toString(36)}-${randomBytes(4).toString('hex')}`;
}

// Stages a release exactly as docs/design.md §3 steps 1–6: trust, refusals, reuse, fetch,
// integrity, safe extraction, release file check, durable read-only tree, marker last.
// Never touches `current`; any failure removes the staging folder. Every refused or failed stage
// is logged (stderr) with the app, version, attempt, code and the archive entry it names.
export async function stageRelease(deps: StageDeps, input: StageInput): Promise<StageResult> {
  try {
    return await stageOnce(deps, input);
  } catch (err) {
    logRefusal(input, err);
    throw err;
  }
}

// The entry a message names (`entry "<path JSON>"`, see unsafeMessage), as it was written there.
const ENTRY_IN_MESSAGE = /entry ("(?:[^"\\]|\\.)*"(?:\.\.\.)?)/;

function logRefusal(input: StageInput, err: unknown): void {
  const e = err instanceof StewardError ? err : null;
  const message = e?.message ?? (err instanceof Error ? err.message : String(err));
  const entry = ENTRY_IN_MESSAGE.exec(message)?.[1] ?? '-';
  const attempt = e?.details.attemptId ?? input.attemptId ?? '-';
  log('stage refused app=%s version=%s attempt=%s code=%s entry=%s: %s', input.app, input.version, attempt, e?.code ?? 'INTERNAL', entry, message);
}

async function stageOnce(deps: StageDeps, input: StageInput): Promise<StageResult> {
  const { paths, config, clock, io } = deps;
  const faults = deps.faults ?? noFaults;
  const { app, version } = input;
  const appConfig = requireApp(config, app);
  const attemptId = input.attemptId ?? newAttemptId(clock.now());
  const progress = input.progress ?? (() => {});

  // 1–2. Who vouches for these bytes: a signed manifest, or an admin's --allow-unsigned.
  const trust = await resolveTrust(deps, input);
  // 3. Refusals: nothing changes.
  const state = input.state ?? (await readAppState(paths, app));
  checkRefusals({
    app,
    version,
    state,
    now: clock.now(),
    kind: input.kind,
    allowDowngrade: input.allowDowngrade,
    downgradeAuthorized: input.downgradeAuthorized,
    force: input.force,
    quarantineCapMs: appConfig.quarantine.capMs,
    floors: input.floors,
  });

  // 6. Reuse a tree staged from the same bytes; never replace one that is in use.
  const seen = await inspectMarker(paths, app, version);
  if (seen.state === 'newer') {
    throw new StewardError('RELEASE_INVALID', `${app} ${version} was staged by a newer steward (marker schemaVersion ${seen.schemaVersion}); this one leaves it alone`);
  }
  const existing = seen.state === 'valid' ? seen.marker : null;
  if (existing && existing.tarballIntegrity === trust.integrity && (!trust.signed || existing.signed)) {
    log('reuse app=%s version=%s attempt=%s', app, version, attemptId);
    return resultOf(paths, app, version, attemptId, existing, true);
  }
  await refuseReplacingInUse(paths, app, version, state.previous);

  await ensureDir(appDir(paths, app), 0o755);
  await io.ensureFreeSpace(appDir(paths, app), trust.size, config.fetch.diskReserveBytes);
  await ensureDir(stagingDir(paths, app), 0o700);
  const work = path.join(stagingDir(paths, app), attemptId);
  try {
    await fsp.mkdir(work, { mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
      throw new StewardError('BUSY', `attempt ${attemptId} of ${app} is already staging`, { details: { attemptId } });
    }
    throw toStewardError(err, 'IO_ERROR', `creating ${work}`);
  }
  // Started now so that its start-up runs while the bytes are obtained; ended in `finally`.
  let extractor: ReturnType<StageIO['prepareExtraction']> | null = null;
  try {
    // Not for a release with a file index the objects path will try first: most stage without a
    // tarball, and a worker thread started for nothing takes a core from the stage (and from a
    // control plane on the same machine) for its start-up. The fallback starts it when it needs it.
    const sources = fetchedFrom(deps, input, trust);
    if (!(sources && trust.index && deps.objects !== false)) extractor = io.prepareExtraction();
    // Why not const: a fetch try that failed ends its worker, and the next try starts another.
    const tree = path.join(work, 'tree');
    // The extraction's progress is told once the bytes are all here (a fetch's comes first).
    let extracting = false;
    const job = {
      dest: tree,
      finalDir: versionDir(paths, app, version),
      limits: config.extract,
      onProgress: (p: { bytes: number }) => extracting && progress({ attemptId, phase: 'extract', bytes: p.bytes }),
    };
    const onFetched = (bytes: number, total: number): void => progress({ attemptId, phase: 'fetch', bytes, total });
    // 2. Integrity before anything leaves the staging folder, and before anything reads the
    // bytes except an extraction that overlaps an https fetch under a signed manifest (§3 step 4).
    // The message names only the expected digest unless the caller sent the bytes itself.
    const verified = (got: BytesResult): void => {
      faults.io('staging', 'write');
      if (got.integrity !== trust.integrity) {
        const callerSent = !!input.upload || !!input.path;
        throw new StewardError(
          'INTEGRITY_MISMATCH',
          `${app} ${version}: the archive does not match integrity ${trust.integrity}` + (callerSent ? ` (it is ${got.integrity})` : ''),
          { details: { attemptId } },
        );
      }
      extracting = true;
      progress({ attemptId, phase: 'extract', bytes: 0 });
    };
    let ex: ExtractResultLike;
    const archive = path.join(work, 'archive.tgz');
    // docs/design.md §20: a release with a signed file index is built from the objects the host has
    // and a pack of those it lacks; the tarball when that is most of it, or anything fails.
    const byIndex = sources && trust.index && deps.objects !== false ? await tryIndex(deps, input, trust as Trust & { index: FileIndexRef }, work, attemptId) : null;
    const viaObjects = byIndex?.done ? byIndex : null;
    const fallback = byIndex && !byIndex.done ? byIndex.fallback : undefined;
    if (viaObjects) {
      ex = viaObjects.ex;
    } else if (sources) {
      // Each source in turn, round after round (fetch-retry.ts): a try that failed leaves nothing
      // behind, its extraction ended and its tree removed, so that the next starts clean.
      ex = await fetchWithRetries(
        {
          sources,
          until: fetchDeadline(input, clock.now()),
          clock,
          random: deps.random ?? Math.random,
          what: `${app} ${version}`,
          ...(deps.stopping ? { signal: deps.stopping } : {}),
          onRetry: (n) => {
            log('fetch retrying app=%s version=%s attempt=%s tries=%d wait=%dms: %s', app, version, attemptId, n.tries, n.waitMs, n.error.message);
            progress({ attemptId, phase: 'fetch-retrying' });
          },
        },
        async (url) => {
          const from = { ...trust, url };
          try {
            if (overlapsFetch(input, from)) {
              extractor ??= io.prepareExtraction();
              return await fetchWhileExtracting(deps, input, from, extractor, job, onFetched, verified);
            }
            const got = await obtainBytes(deps, input, from, archive, onFetched);
            verified(got);
            return await extractFromArchive(got);
          } catch (err) {
            // Why: an extraction fed part of a download may have written part of the tree, and
            // the next try extracts into the same (absent) folder with a fresh worker.
            await extractor?.cancel().catch(() => undefined);
            extractor = null;
            await removeOwnTree(tree).catch(() => undefined);
            await fsp.rm(archive, { force: true }).catch(() => undefined);
            throw err;
          }
        },
      );
    } else {
      const got = await obtainBytes(deps, input, trust, archive, onFetched);
      verified(got);
      ex = await extractFromArchive(got);
    }
    // The archive's bytes, verified, into the tree.
    async function extractFromArchive(got: BytesResult & { archive?: Buffer }): Promise<ExtractResultLike> {
      extractor ??= io.prepareExtraction();
      const out = await extractor.extract(got.archive ? { ...job, archive: got.archive } : { ...job, archivePath: archive });
      if (!got.archive) {
        // The archive was never fsynced (writeHashedFile): what the extraction read must be the
        // bytes verified above, or the tree is not what was vouched for. An archive held in
        // memory was extracted from the very bytes that were verified.
        if (out.integrity !== trust.integrity) {
          throw new StewardError('IO_ERROR', `${app} ${version}: the archive read back for extraction is not the one verified (the disk lost or changed it)`, {
            details: { attemptId },
          });
        }
        // Removed before the syncfs below, so that its bytes are never written to disk at all.
        await fsp.rm(archive, { force: true });
      }
      return out;
    }
    // 5. The release file, then a durable read-only tree renamed into versions/, marker last.
    await checkReleaseFile(tree, { app, version, appConfig });
    progress({ attemptId, phase: 'commit' });
    // The top folder was 0700 while staging; open it to the app's user before it becomes visible.
    // A tree from objects is open and durable already (stage-from-index.ts: its one syncfs).
    if (!viaObjects) {
      await fsp.chmod(tree, 0o755);
      faults.io('staging', 'fsync');
      await io.syncFileSystem(tree);
    }
    let reusedBytes = viaObjects?.reusedBytes ?? 0;
    if (deps.objects !== false && !viaObjects) {
      progress({ attemptId, phase: 'objects' });
      await ensureDir(objectsDir(paths, app), 0o700);
      reusedBytes = (await fileTreeAsObjects(objectsDir(paths, app), tree, ex.listing, faults)).reusedBytes;
      // The objects' names and the tree's new links, durable before the tree is renamed in.
      faults.io('objects', 'fsync');
      await io.syncFileSystem(tree);
    }
    await ensureDir(versionsDir(paths, app), 0o755);
    // A tree already at versions/<ver> failed the reuse test above and is not in use: replace it.
    await removeRelease(paths, app, version);
    const final = versionDir(paths, app, version);
    faults.io('staging', 'rename');
    await fsp.rename(tree, final);
    try {
      faults.io('staging', 'fsyncdir');
      await fsyncDir(versionsDir(paths, app));
    } catch (err) {
      await removeUnfinished(paths, app, version);
      throw err;
    }
    const marker: Marker = {
      schemaVersion: MARKER_SCHEMA_VERSION,
      tarballIntegrity: trust.integrity,
      treeDigest: ex.treeDigest,
      signed: trust.signed,
      keyId: trust.keyId,
      version,
      stagedAt: clock.now(),
    };
    // Written last: a tree without its marker is never used. Checked first: a marker that would
    // not read back as valid is a bug, and its tree is removed.
    try {
      mustParse(markerSchema, marker, 'INTERNAL', `the marker of ${app} ${version}`);
      await writeJsonAtomic(path.join(final, MARKER_FILE_NAME), marker, 0o444, ioStep(faults, 'marker'));
      await fsp.chmod(final, 0o555);
    } catch (err) {
      await removeUnfinished(paths, app, version);
      throw err;
    }
    // Its index, for the next stage's index delta from this version (kept-indexes.ts).
    if (deps.objects !== false) keepIndex(objectsDir(paths, app), marker.treeDigest, () => viaObjects?.indexBytes ?? encodeFileIndex(ex.listing));
    log('staged app=%s version=%s attempt=%s entries=%d bytes=%d', app, version, attemptId, ex.entries, ex.bytes);
    // A tarball after a patch that was tried and not taken counts the patch's bytes too.
    const tried = byIndex && !byIndex.done ? byIndex : null;
    const how = viaObjects ? { fetchedBytes: viaObjects.fetchedBytes, via: 'objects' as const } : { fetchedBytes: trust.size + (tried?.triedBytes ?? 0), via: 'tarball' as const };
    log('staged app=%s version=%s attempt=%s via=%s fetched=%d reused=%d', app, version, attemptId, how.via, how.fetchedBytes, reusedBytes);
    return { ...resultOf(paths, app, version, attemptId, marker, false), entries: ex.entries, bytes: ex.bytes, ...how, reusedBytes, ...(fallback ? { fallback } : {}), ...((viaObjects ?? tried)?.patch ? { patch: (viaObjects ?? tried)?.patch } : {}) };
  } catch (err) {
    let e = toStewardError(err, 'IO_ERROR', `staging ${app} ${version}`);
    // A disk error from below (the extraction worker) does not know which release it hit.
    if ((e.code === 'DISK_FULL' || e.code === 'IO_ERROR') && !e.message.includes(`${app} ${version}`)) {
      e = new StewardError(e.code, `staging ${app} ${version}: ${e.message}`, { cause: e, details: e.details });
    }
    if (e.details.attemptId === undefined) e.details.attemptId = attemptId;
    throw e;
  } finally {
    await extractor?.cancel().catch((err) => log('could not end the extraction worker: %s', (err as Error).message));
    await removeOwnTree(work).catch((err) => log('could not remove %s: %s', work, (err as Error).message));
  }
}

// A stage that failed after its tree reached versions/ takes the tree back out (marker first):
// a marker renamed into place whose folder fsync failed may not survive a power cut, and a
// failed stage must leave nothing that looks staged. What cannot be removed now the next
// start's cleanup removes.
async function removeUnfinished(paths: HostPaths, app: string, version: string): Promise<void> {
  await removeRelease(paths, app, version).catch((err) => log('could not remove unfinished %s %s: %s', app, version, (err as Error).message));
}

interface Trust {
  signed: boolean;
  keyId: string | null;
  integrity: string;
  size: number;
  url: string | null;
  // The signed manifest's file index (docs/design.md §20), when it has one.
  index?: FileIndexRef;
}

async function resolveTrust(deps: StageDeps, input: StageInput): Promise<Trust> {
  const { app, version } = input;
  if (input.tufVerified) {
    const m = input.tufVerified.payload;
    if (input.integrity && input.integrity !== m.integrity) throw new StewardError('INTEGRITY_MISMATCH', `${app} ${version}: --integrity disagrees with the manifest`);
    if (input.upload && input.upload.size !== m.size) throw new StewardError('INTEGRITY_MISMATCH', `${app} ${version}: the upload is ${input.upload.size} bytes, the manifest says ${m.size}`);
    const index = input.tufVerified.index;
    return { signed: true, keyId: null, integrity: m.integrity, size: m.size, url: m.url, ...(index ? { index } : {}) };
  }
  if (input.manifest) {
    const trustedDir = input.trustedDir ?? trustedKeysFor(deps.paths, app);
    const m = await verifyManifest(input.manifest, {
      app,
      version,
      trustedDir,
      // trusted-keys/<app>/ is held to the trust rule from the root prefix down; install's
      // one-time folder (outside the layout) from itself down.
      trust: trustScope(trustedDir, input.trustedDir ? undefined : deps.paths.root),
      now: deps.clock.now(),
    });
    const index = input.indexedManifest ? await verifyIndexedManifest(input.indexedManifest, m.payload, { app, version, trustedDir, trust: trustScope(trustedDir, input.trustedDir ? undefined : deps.paths.root), now: deps.clock.now() }) : m.payload.index;
    if (input.integrity && input.integrity !== m.payload.integrity) {
      throw new StewardError('INTEGRITY_MISMATCH', `${app} ${version}: --integrity disagrees with the signed manifest`);
    }
    if (input.upload && input.upload.size !== m.payload.size) {
      throw new StewardError('INTEGRITY_MISMATCH', `${app} ${version}: the upload is ${input.upload.size} bytes, the manifest says ${m.payload.size}`);
    }
    return { signed: true, keyId: m.keyId, integrity: m.payload.integrity, size: m.payload.size, url: m.payload.url, ...(index ? { index } : {}) };
  }
  if (input.indexedManifest) throw new StewardError('BAD_REQUEST', `${app} ${version}: an indexed manifest comes only with the manifest it indexes`);
  if (input.kind !== 'admin') {
    throw new StewardError('SIGNATURE_INVALID', `${app} ${version}: helper.sock takes only releases with a signed manifest`);
  }
  if (app === AGENT_APP) {
    // Why never unsigned: the agent holds the node key and speaks for the host to the control plane.
    throw new StewardError('SIGNATURE_INVALID', `${app} ${version}: the agent is only ever installed from a release signed by a key in ${trustedKeysFor(deps.paths, app)}; --allow-unsigned does not apply to it`);
  }
  if (!input.allowUnsigned) {
    throw new StewardError('SIGNATURE_INVALID', `${app} ${version}: no signed manifest; an unsigned tarball needs --allow-unsigned`);
  }
  if (!input.integrity) throw new StewardError('BAD_REQUEST', `${app} ${version}: an unsigned tarball needs --integrity`);
  if (!input.path && !input.upload) throw new StewardError('BAD_REQUEST', `${app} ${version}: an unsigned tarball needs --file`);
  const size = input.upload ? input.upload.size : await localSize(input.path as string);
  if (size > deps.config.fetch.maxUnsignedBytes) {
    throw new StewardError('UNSAFE_ARCHIVE', `${app} ${version}: the archive is ${size} bytes, over the ${deps.config.fetch.maxUnsignedBytes}-byte cap`);
  }
  return { signed: false, keyId: null, integrity: input.integrity, size, url: null };
}

function localPath(p: string): string {
  return p.startsWith('file:') ? fileURLToPath(p) : path.resolve(p);
}

async function localSize(p: string): Promise<number> {
  try {
    const st = await fsp.lstat(localPath(p));
    return st.size;
  } catch (err) {
    throw new StewardError('NOT_FOUND', `${p}: ${(err as Error).message}`, { cause: err });
  }
}

async function obtainBytes(
  deps: StageDeps,
  input: StageInput,
  trust: Trust,
  destFile: string,
  onProgress: (bytes: number, total: number) => void,
): Promise<BytesResult & { archive?: Buffer }> {
  const { io } = deps;
  // The bytes come whole from the caller (no fetch to overlap), and fit in memory: held there.
  const inMemory = trust.size <= (deps.archiveInMemoryMaxBytes ?? ARCHIVE_IN_MEMORY_MAX_BYTES);
  if (input.upload) {
    const upload = { stream: input.upload.stream, expectedBytes: input.upload.size, onProgress };
    return inMemory ? io.streamToMemory(upload) : io.streamToFile({ ...upload, destFile });
  }
  if (input.path) {
    if (input.kind !== 'admin') throw new StewardError('FORBIDDEN', 'helper.sock never opens a local path');
    const local = { path: localPath(input.path), maxBytes: trust.size, onProgress };
    return inMemory ? io.copyLocalToMemory(local) : io.copyLocalToFile({ ...local, destFile });
  }
  if (!trust.url) throw new StewardError('BAD_REQUEST', 'no source for the release bytes');
  return io.fetchToFile({
    url: trust.url,
    destFile,
    maxBytes: trust.size,
    ...fetchSettings(deps, input),
    allowFile: input.kind === 'admin',
    onProgress,
    ...authOf(deps, input, trust.url),
  });
}

// The node's credential for a fetch of `url`, when it is on a control plane's origin.
function authOf(deps: StageDeps, input: StageInput, url: string): { auth?: FetchAuth } {
  const auth = authFor(url, input.fetchAuth, controlPlanesOf(deps, input));
  return auth ? { auth } : {};
}

// The control-plane URLs a fetch may go to: the agent's (the one that answered last first),
// then the host config's.
function controlPlanesOf(deps: StageDeps, input: StageInput): string[] {
  const cp = deps.config.controlPlane;
  const all = [...(input.mirrors ?? []), ...(cp ? controlPlaneUrls(cp.url) : [])];
  return all.filter((u, i) => all.indexOf(u) === i);
}

// The URLs the release's bytes are fetched from (artifact-sources.ts), or null when the caller
// sends them (an upload, a local path) or an unsigned release names none.
function fetchedFrom(deps: StageDeps, input: StageInput, trust: Trust): string[] | null {
  if (input.upload || input.path || !trust.url) return null;
  const all = artifactSources(trust.url, controlPlanesOf(deps, input));
  // A URL the fetch would refuse before connecting (fetch-url.ts) is no mirror worth a try; when
  // every one is, the first is tried, for its error.
  const usable = all.filter((u) => {
    try {
      checkFetchUrl(u, input.kind === 'admin');
      return true;
    } catch {
      return false;
    }
  });
  return usable.length > 0 ? usable : all.slice(0, 1);
}

// Until when a failed fetch is tried again: the request's fetchUntil (the control plane's, within
// its run's verdict timeout), or the window's end when that is sooner. A request without
// fetchUntil (an operator's update, an agent of a control plane from before it) tries each
// source once, as before: no deadline was agreed, and the operator is told at once.
function fetchDeadline(input: StageInput, now: number): number {
  if (input.fetchUntil === undefined) return now;
  return Math.min(input.fetchUntil, input.notAfter ?? Infinity);
}

// The settings of every fetch the helper makes: the host's, its extra CA file, and the control
// plane's URLs and CA file (a download from the control plane trusts the CA its heartbeats
// trust, platform/fetch-trust.ts), each CA file under the trust rule from the root prefix down.
function fetchSettings(deps: StageDeps, input: StageInput): { settings: FetchSettings; caFile?: string; caTrust?: TrustScope; controlPlane?: ControlPlaneCa } {
  const { caFile } = deps.config.fetch;
  const cp = deps.config.controlPlane;
  const scope = (file: string) => trustScope(path.dirname(file), deps.paths.root);
  return {
    settings: deps.config.fetch,
    ...(caFile ? { caFile, caTrust: scope(caFile) } : {}),
    ...(cp ? { controlPlane: { urls: controlPlanesOf(deps, input), ...(cp.caFile ? { caFile: cp.caFile, caTrust: scope(cp.caFile) } : {}) } } : {}),
  };
}

// docs/design.md §3 step 4: the extraction may run while the bytes arrive and are hashed only for an
// http(s) fetch the helper makes itself under a signed manifest, whose signature was checked
// before the first byte (resolveTrust). Local files, `file:` URLs and uploads are hashed first.
function overlapsFetch(input: StageInput, trust: Trust): trust is Trust & { url: string } {
  if (input.upload || input.path || !trust.signed || trust.url === null) return false;
  try {
    const { protocol } = new URL(trust.url);
    return protocol === 'https:' || protocol === 'http:';
  } catch {
    return false;
  }
}

// Fetches `trust.url` into an extraction fed as the bytes arrive. The tree stays in the 0700
// staging folder until `verified` accepted the hash of every byte (the caller renames it out
// only after this returns); a mismatch ends the extraction and wins over any error it met,
// since an error on bytes nobody vouched for says nothing about the release. So the fetch goes
// on to its end even after the extraction failed (write then drops the bytes). A fetch that
// fails ends the extraction, and its own error is the stage's.
async function fetchWhileExtracting(
  deps: StageDeps,
  input: StageInput,
  trust: Trust & { url: string },
  extractor: ReturnType<StageIO['prepareExtraction']>,
  job: ExtractJob,
  onProgress: (bytes: number, total: number) => void,
  verified: (got: BytesResult) => void,
): Promise<ExtractResultLike> {
  const { io } = deps;
  const streamed = extractor.extractStream({ ...job, what: describeUrl(new URL(trust.url)), size: trust.size });
  try {
    const got = await io.fetchInto(
      {
        url: trust.url,
        maxBytes: trust.size,
        ...fetchSettings(deps, input),
        onProgress,
        ...authOf(deps, input, trust.url),
      },
      (chunk) => streamed.write(chunk),
    );
    streamed.end();
    verified(got);
  } catch (err) {
    await streamed.abort();
    throw err;
  }
  return streamed.result;
}

// A tree that is `current` or `previous` is never replaced by staging, even if the request
// brings different bytes under the same version: that would change a running release.
async function refuseReplacingInUse(paths: HostPaths, app: string, version: string, previous: string | null): Promise<void> {
  const cur = await readCurrent(paths, app);
  const inUse = (cur.state === 'valid' && cur.version === version) || previous === version;
  const exists = await fsp.lstat(versionDir(paths, app, version)).then(() => true, () => false);
  if (inUse && exists) {
    throw new StewardError(
      'RELEASE_INVALID',
      `${app} ${version} is installed from other bytes and is ${previous === version ? 'previous' : 'current'}; publish a new version instead`,
    );
  }
}

function resultOf(paths: HostPaths, app: string, version: string, attemptId: string, m: Marker, reused: boolean): StageResult {
  return {
    app,
    version,
    attemptId,
    reused,
    path: versionDir(paths, app, version),
    signed: m.signed,
    keyId: m.keyId,
    tarballIntegrity: m.tarballIntegrity,
    treeDigest: m.treeDigest,
  };
}

// `triedBytes`, `patch`: a patch tried for a release mostly missing, and not taken.
type IndexTry = (IndexStage & { done: true }) | { done: false; fallback: { code: string | null; message: string }; triedBytes?: number; patch?: PatchTry };

// Builds the tree from the release's file index and objects (stage-from-index.ts), or says why the
// tarball is fetched instead, having removed whatever the try left in the staging folder. A signed
// index that breaks the extraction's rules refuses the stage (UNSAFE_ARCHIVE), and a full disk
// fails it (DISK_FULL): the tarball would meet the same.
async function tryIndex(deps: StageDeps, input: StageInput, trust: Trust & { index: FileIndexRef }, work: string, attemptId: string): Promise<IndexTry> {
  const { app, version } = input;
  const faults = deps.faults ?? noFaults;
  const index = trust.index;
  const sourcesOf = (url: string): string[] => artifactSources(url, controlPlanesOf(deps, input)).filter((u) => {
    try {
      checkFetchUrl(u, input.kind === 'admin');
      return true;
    } catch {
      return false;
    }
  });
  try {
    const patches = await patchSources(deps, input, index.url, sourcesOf);
    // Bytes a delta of the index brought that were not used (its fallback's cost).
    let spent = 0;
    const r = await stageFromIndex({
      objectsDir: objectsDir(deps.paths, app),
      work,
      limits: deps.config.extract,
      faults,
      tarballBytes: trust.size,
      ...(deps.sealFoldersAtMkdir !== undefined ? { sealFoldersAtMkdir: deps.sealFoldersAtMkdir } : {}),
      syncFileSystem: (dir) => deps.io.syncFileSystem(dir),
      fetchIndex: async () => {
        const delta = await indexByDelta(deps, input, index, work, patches, sourcesOf);
        if ('bytes' in delta) return delta;
        spent = delta.spent;
        let last: unknown = new StewardError('FETCH_FAILED', `${app} ${version}: no usable URL for the file index ${index.url}`);
        for (const url of sourcesOf(index.url)) {
          try {
            // gzip- or zstd-compressed on the wire (docs/protocol.md): at most gzipBound of its
            // signed size, and it must decompress to at most that size, to the bytes the manifest signs.
            const wire = await fetchSmall(deps, input, url, path.join(work, 'index.json'), gzipBound(index.size), acceptEncoding());
            let bytes: Buffer;
            try {
              bytes = decompressSync(wire, index.size, `${app} ${version}: the file index from ${url}`);
            } catch (err) {
              throw new StewardError('INTEGRITY_MISMATCH', (err as Error).message);
            }
            if (bytes.length !== index.size || integrityOf(bytes) !== index.integrity) throw new StewardError('INTEGRITY_MISMATCH', `${app} ${version}: the file index from ${url} does not match the integrity the manifest signs`);
            return { bytes, wireBytes: wire.length + spent };
          } catch (err) {
            if (err instanceof StewardError && err.code === 'INTEGRITY_MISMATCH') throw err;
            last = err;
          }
        }
        throw last;
      },
      patches,
      fetchPack: async (body, maxWireBytes, sink) => {
        if (!/\.index\.json$/.test(index.url)) throw new StewardError('FETCH_FAILED', `${app} ${version}: the file index ${index.url} names no pack (it does not end in .index.json)`);
        const url = sourcesOf(index.url.replace(/\.index\.json$/, '.pack'))[0];
        if (!url) throw new StewardError('FETCH_FAILED', `${app} ${version}: no usable URL for the pack`);
        return (await deps.io.fetchInto({ url, maxBytes: maxWireBytes, atMost: true, body, acceptEncoding: acceptEncoding(), ...fetchSettings(deps, input), ...authOf(deps, input, url) }, sink)).bytes;
      },
    });
    if (r.done) return r;
    log('objects skipped app=%s version=%s attempt=%s: %s', app, version, attemptId, r.why);
    await clearIndexTry(work);
    return { done: false, fallback: { code: null, message: r.why }, ...(r.fetchedBytes ? { triedBytes: r.fetchedBytes } : {}), ...(r.patch ? { patch: r.patch } : {}) };
  } catch (err) {
    const e = toStewardError(err, 'IO_ERROR', `staging ${app} ${version} from its file index`);
    await clearIndexTry(work);
    if (e.code === 'UNSAFE_ARCHIVE' || e.code === 'DISK_FULL') throw e;
    log('objects failed app=%s version=%s attempt=%s code=%s, fetching the tarball: %s', app, version, attemptId, e.code, e.message);
    return { done: false, fallback: { code: e.code, message: e.message } };
  }
}

// Removes what a try from the index left in the staging folder: its tree, its index, the pack's
// objects not yet put in place. Objects put in place are complete and verified: they stay.
async function clearIndexTry(work: string): Promise<void> {
  for (const name of ['tree', 'index.json', 'index.delta', 'objects-in', 'patch']) await removeOwnTree(path.join(work, name)).catch(() => undefined);
}

// The static patches a stage may take (docs/design.md §20.5), best first: from the version the
// host runs when it is below the one staged, then from the newest complete version below it;
// none on a runtime without zstd or for an index whose URL names no patch.
async function patchSources(deps: StageDeps, input: StageInput, indexUrl: string, sourcesOf: (url: string) => string[]): Promise<PatchSource[]> {
  const { app, version } = input;
  if (!hasZstd() || !/\.index\.json$/.test(indexUrl)) return [];
  const below = (v: string): boolean => v !== version && compareVersions(v, version) < 0;
  const froms: string[] = [];
  const current = await readCurrent(deps.paths, app).catch(() => null);
  if (current?.state === 'valid' && below(current.version)) froms.push(current.version);
  const names = (await fsp.readdir(versionsDir(deps.paths, app)).catch(() => [] as string[])).filter((v) => isVersion(v) && below(v)).sort((a, b) => compareVersions(b, a));
  for (const v of names) {
    if ((await inspectMarker(deps.paths, app, v)).state !== 'valid') continue;
    if (!froms.includes(v)) froms.push(v);
    break;
  }
  const sources: PatchSource[] = [];
  for (const from of froms) {
    const url = sourcesOf(indexUrl.replace(/\.index\.json$/, `.from-${from}.patch`))[0];
    if (!url) continue;
    sources.push({
      from,
      to: version,
      fetchPatch: async (start, maxBytes, sink) =>
        (await deps.io.fetchInto({ url, maxBytes, atMost: true, acceptEncoding: acceptEncoding(), ...(start > 0 ? { rangeStart: start } : {}), ...fetchSettings(deps, input), ...authOf(deps, input, url) }, sink)).bytes,
    });
  }
  return sources;
}

// The body at `url`, at most `maxBytes` of it on the wire, as it came (still compressed). Held in
// memory over http(s): an index and its delta are small (at most gzipBound(FILE_INDEX_MAX_BYTES)),
// and a file written only to be read back cost a stage five thread-pool round trips, each behind
// whatever the disk was doing. A `file:` URL (an admin stage) is copied through `file` in the
// staging folder, as fetchToFile copies one, and read back.
async function fetchSmall(deps: StageDeps, input: StageInput, url: string, file: string, maxBytes: number, encoding: string): Promise<Buffer> {
  if (/^https?:/i.test(url)) {
    const chunks: Buffer[] = [];
    await deps.io.fetchInto({ url, maxBytes, atMost: true, acceptEncoding: encoding, ...fetchSettings(deps, input), ...authOf(deps, input, url) }, async (chunk) => {
      // A copy: the sink's chunk is not promised to stay the caller's after it returns.
      chunks.push(Buffer.from(chunk));
    });
    return Buffer.concat(chunks);
  }
  try {
    await deps.io.fetchToFile({ url, destFile: file, maxBytes, atMost: true, acceptEncoding: encoding, ...fetchSettings(deps, input), ...authOf(deps, input, url) });
    return await fsp.readFile(file);
  } finally {
    await fsp.rm(file, { force: true });
  }
}

// The signed index from a zstd delta against the index of the version a patch would come from
// (docs/design.md §20.5), made again from that version's tree and objects (staged-index.ts):
// `<index url>.from-<from>.zst`, decoded with the old index as its dictionary to at most the signed
// size and checked against the signed integrity. From the patch sources in turn whose tree
// reads and offers one (the next only after a 404); anything else and the full index is fetched.
async function indexByDelta(deps: StageDeps, input: StageInput, index: FileIndexRef, work: string, patches: readonly PatchSource[], sourcesOf: (url: string) => string[]): Promise<{ bytes: Buffer; wireBytes: number } | { spent: number }> {
  const zs = zstdOf();
  if (!zs) return { spent: 0 };
  let spent = 0;
  for (const src of patches) {
    const url = sourcesOf(`${index.url}.from-${src.from}.zst`)[0];
    if (!url) break;
    let got = 0;
    // The old index as kept (a file read) while the delta comes; made again by a walk of that
    // tree (~100 ms) only once a delta came and none is kept.
    const kept = readMarker(deps.paths, input.app, src.from).then((m) => (m ? keptIndex(objectsDir(deps.paths, input.app), m.treeDigest) : null)).catch(() => null);
    try {
      const delta = await fetchSmall(deps, input, url, path.join(work, 'index.delta'), gzipBound(index.size), 'zstd');
      got = delta.length;
      const old = (await kept) ?? indexOfStagedTree(versionDir(deps.paths, input.app, src.from), objectsDir(deps.paths, input.app));
      if (!old) throw new StewardError('IO_ERROR', `the tree of ${src.from} does not give its index again`);
      const bytes = zs.zstdDecompressSync(delta, { dictionary: old, maxOutputLength: Math.max(1, index.size), params: { [zstdConstant('ZSTD_d_windowLogMax')]: PATCH_WINDOW_LOG_MAX } } as { maxOutputLength: number });
      if (bytes.length !== index.size || integrityOf(bytes) !== index.integrity) throw new StewardError('INTEGRITY_MISMATCH', `the delta of the file index from ${src.from} does not decode to the index the manifest signs`);
      log('index of %s %s by its delta from %s: %d bytes on the wire', input.app, input.version, src.from, got);
      return { bytes, wireBytes: spent + got };
    } catch (err) {
      spent += got;
      log('index delta of %s %s from %s not used: %s', input.app, input.version, src.from, (err as Error).message);
      // The next source only when this one offered nothing (a 404).
      if (got > 0) break;
    }
  }
  return { spent };
}
