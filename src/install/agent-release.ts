import { createHash } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { hostConfigSchema } from '../core/config-schema.js';
import { StewardError } from '../core/errors.js';
import { type HostPaths } from '../core/paths.js';
import { readAppState, writeAppState } from '../helper/state/app-state.js';
import { readCurrent } from '../helper/release-store.js';
import { realStageIO } from '../helper/stage/real-stage-io.js';
import { stageRelease } from '../helper/stage/stage-release.js';
import { pointCurrent } from '../helper/update/swap.js';
import { systemClock } from '../platform/clock.js';
import { noFaults } from '../platform/faults.js';
import { ensureDir, removeTree } from '../platform/fs-atomic.js';
import { DOMAINS, generateKeyPair, parsePrivateKey, signEnvelope } from '../platform/keys.js';
import { AGENT_APP, layOutAgentTree, packTree, packageVersion } from './agent-release-pack.js';
import { DEFAULT_CONFIG, type Step } from './install-layout.js';

// How long the install-time manifest is valid: it is verified once, seconds after it is signed.
const INSTALL_MANIFEST_MS = 10 * 60_000;

export interface AgentReleaseResult {
  action: Step['action'];
  detail: string;
  version: string;
}

// What `current` of steward-agent is: valid, or absent (a first install). One that is there but
// not a valid release is refused (RELEASE_INVALID): install checks it before it changes anything.
export async function readAgentCurrent(paths: HostPaths): Promise<{ state: 'valid'; version: string } | { state: 'absent' }> {
  const cur = await readCurrent(paths, AGENT_APP);
  if (cur.state === 'invalid') {
    throw new StewardError('RELEASE_INVALID', `${AGENT_APP}: current is not a valid release (${cur.why}); \`agentctl recover ${AGENT_APP}\` once the helper runs`);
  }
  return cur;
}

// Installs the agent from the steward package at `pkgRoot` as the first release of the app
// `steward-agent`, through the helper's own staging (trust, refusals, safe extraction, read-only
// durable tree, marker last) and atomic `current` swap. What it does, by what is there:
//   - `current` is this package's version: nothing (idempotent).
//   - `current` is another version: nothing; the agent is updated by steward from then on
//     (`agentctl update steward-agent`, or a rollout), never behind the helper's back.
//   - no `current`: packs the agent, signs its manifest with a one-time key made here and
//     forgotten (trusted for this one staging only, never written to trusted-keys/), stages
//     it, records it as the highest active version, and points `current` at it.
// Later updates need a manifest signed by a key in /etc/steward/trusted-keys/steward-agent/.
export async function installAgentRelease(pkgRoot: string, paths: HostPaths): Promise<AgentReleaseResult> {
  const version = packageVersion(pkgRoot);
  const cur = await readAgentCurrent(paths);
  if (cur.state === 'valid') {
    if (cur.version === version) return { action: 'unchanged', version, detail: `current -> versions/${version}` };
    return {
      action: 'skipped',
      version: cur.version,
      detail: `current -> versions/${cur.version}, left as it is (this package is ${version}): the agent is updated by steward (agentctl update ${AGENT_APP} ...)`,
    };
  }

  const work = await fsp.mkdtemp(path.join(os.tmpdir(), 'steward-agent-release-'));
  try {
    const tree = path.join(work, 'tree');
    const tgz = path.join(work, `${AGENT_APP}-${version}.tgz`);
    await layOutAgentTree(pkgRoot, tree, version);
    await packTree(tree, tgz);
    const bytes = await fsp.readFile(tgz);
    // The one-time key: its private half lives only in this process, so it can sign nothing else.
    const key = generateKeyPair();
    const trusted = path.join(work, 'trusted');
    await fsp.mkdir(trusted, { mode: 0o700 });
    await fsp.writeFile(path.join(trusted, `${key.keyId}.pub`), key.publicPem, { mode: 0o644 });
    const now = systemClock.now();
    const manifest = signEnvelope(
      DOMAINS.manifest,
      { name: AGENT_APP, version, url: `file://${tgz}`, size: bytes.length, integrity: `sha512-${createHash('sha512').update(bytes).digest('base64')}`, expires: now + INSTALL_MANIFEST_MS },
      parsePrivateKey(key.privatePem),
    );
    const config = hostConfigSchema.parse(DEFAULT_CONFIG);
    const staged = await stageRelease(
      { paths, config, clock: systemClock, io: realStageIO },
      { kind: 'admin', app: AGENT_APP, version, manifest, path: tgz, trustedDir: trusted },
    );
    // The highest active version is written before `current`: a crash in between leaves no
    // current (the next install makes it), never a current that an older signed release could
    // replace (staging refuses a version below the highest active one).
    await ensureDir(path.dirname(paths.stateDir), 0o755);
    await ensureDir(paths.stateDir, 0o700);
    const state = await readAppState(paths, AGENT_APP);
    if (state.highestActive !== version) await writeAppState(paths, AGENT_APP, { ...state, highestActive: version });
    await pointCurrent(paths, AGENT_APP, version, noFaults, 'forward');
    return { action: 'created', version, detail: `${staged.path} (signed by one-time install key ${staged.keyId}), current -> versions/${version}` };
  } finally {
    // Why: the work folder holds the tarball and the one-time public key, nothing else needs them.
    await removeTree(work).catch(() => {});
  }
}
