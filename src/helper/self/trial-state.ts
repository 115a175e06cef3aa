import { compareVersions, isVersion } from '../../core/version.js';
import type { HostPaths } from '../../core/paths.js';
import { LAUNCH_DECISIONS, SELF_APP, SELF_FILES, type LaunchDecision, type Pointer, type StartRecord } from '../../core/self-schemas.js';
import { readCurrent } from '../release-store.js';
import { readSelfFiles, SELF_FILE_KEYS, selfFile, validValue, type SelfFiles } from './self-files.js';

// What the launcher decided at this start, and what the trial's files say, for the helper to
// act on and report (docs/self-update.md).
export interface TrialState {
  // How the launcher started this helper (STEWARD_SELF_DECISION and STEWARD_SELF_VERSION), or
  // null when no launcher did (a helper started by hand or by an `agentctl install` unit).
  launched: { decision: LaunchDecision; version: string } | null;
  // The version `current` of the app steward points at with a valid marker, or null.
  current: string | null;
  // The tree on trial now (`trying`): when `launched.decision` is `trial`, this helper.
  onTrial: Pointer | null;
  // The last trial that did not commit (`reverted`), to be closed (`rolled-back`) and cleared.
  // `committed`: it names what `current` points at, so its commit swapped `current` and was
  // cut before it removed `trying`; it passed, and is reported `active`.
  reverted: (Pointer & { committed: boolean }) | null;
  // A current set aside after MAX_UNREADY_STARTS starts that never got ready (`FALLBACK`).
  fallback: StartRecord | null;
  // The installed package's version (packageVersionOf), or null.
  packageVersion: string | null;
  // The package version the launcher put on trial once (`package-tried`), or null.
  packageTried: string | null;
  // Each file that is unreadable or from a newer steward, with its path: reported, never fatal.
  problems: string[];
  files: SelfFiles;
}

// Reads the trial's state. Never throws on what the files hold (docs/design.md §16).
export async function readTrialState(paths: HostPaths, env: NodeJS.ProcessEnv): Promise<TrialState> {
  const files = await readSelfFiles(paths);
  const cur = await readCurrent(paths, SELF_APP);
  const current = cur.state === 'valid' ? cur.version : null;
  const problems: string[] = [];
  for (const name of SELF_FILES) {
    const r = files[SELF_FILE_KEYS[name]];
    if (r.state === 'unreadable') problems.push(r.why);
    if (r.state === 'newer') problems.push(`${selfFile(paths, name)} has schemaVersion ${r.schemaVersion}, newer than this steward reads: the launcher took it for garbage`);
  }
  const launched = launchedBy(env);
  if (launched === null && env.STEWARD_SELF_DECISION !== undefined) {
    problems.push(`STEWARD_SELF_DECISION=${JSON.stringify(env.STEWARD_SELF_DECISION)} STEWARD_SELF_VERSION=${JSON.stringify(env.STEWARD_SELF_VERSION)} is not a launcher's decision`);
  }
  const reverted = validValue(files.reverted);
  return {
    launched,
    current,
    onTrial: validValue(files.trying),
    reverted: reverted ? { ...reverted, committed: reverted.version === current } : null,
    fallback: validValue(files.fallback),
    packageVersion: packageVersionOf(env, launched),
    packageTried: validValue(files.packageTried)?.version ?? null,
    problems,
    files,
  };
}

// The package's version as the launcher tells it: STEWARD_PACKAGE_VERSION, else the version it
// ran when it ran the package itself (decision `package` or `fallback`), else null.
export function packageVersionOf(env: NodeJS.ProcessEnv, launched: TrialState['launched']): string | null {
  if (!launched) return null;
  if (isVersion(env.STEWARD_PACKAGE_VERSION)) return env.STEWARD_PACKAGE_VERSION;
  return launched.decision === 'package' || launched.decision === 'fallback' ? launched.version : null;
}

// The launcher's decision from the environment it gave the helper, or null.
export function launchedBy(env: NodeJS.ProcessEnv): TrialState['launched'] {
  const decision = env.STEWARD_SELF_DECISION;
  const version = env.STEWARD_SELF_VERSION;
  if (!(LAUNCH_DECISIONS as readonly string[]).includes(decision ?? '') || !isVersion(version)) return null;
  return { decision: decision as LaunchDecision, version };
}

// A package trial that did not stick: the installed package's version is newer than the one
// this helper runs, the launcher tried it (`package-tried`), and this start is no trial. The
// launcher does not try that version again until a newer package comes (or the package's
// configure step clears `package-tried`), so the host runs an older steward than dpkg says
// until someone acts: status, doctor and heartbeats report it (docs/self-update.md).
export function revertedPackage(t: TrialState, ownVersion: string): string | null {
  const pkg = t.packageVersion;
  if (pkg === null || t.launched === null || t.launched.decision === 'trial' || !isVersion(ownVersion)) return null;
  return compareVersions(pkg, ownVersion) > 0 && t.packageTried === pkg ? pkg : null;
}
