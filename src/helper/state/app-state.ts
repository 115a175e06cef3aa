import { formatIssues } from '../../core/config-schema.js';
import { StewardError } from '../../core/errors.js';
import { stateFile, type HostPaths } from '../../core/paths.js';
import { APP_STATE_SCHEMA_VERSION, appStateSchema, emptyAppState, type AppState } from '../../core/state-schemas.js';
import { readFileNoFollow, writeJsonAtomic } from '../../platform/fs-atomic.js';

// Reads state/<app>.json; a missing file is the empty state. A file from a newer
// steward or one that does not validate is refused (STATE_INVALID), never guessed at.
export async function readAppState(paths: HostPaths, app: string): Promise<AppState> {
  const file = stateFile(paths, app);
  let raw: Buffer | null;
  try {
    raw = await readFileNoFollow(file, 1024 * 1024);
  } catch (err) {
    throw new StewardError('STATE_INVALID', `${file}: ${(err as Error).message}`, { cause: err });
  }
  if (raw === null) return emptyAppState();
  let json: unknown;
  try {
    json = JSON.parse(raw.toString('utf8'));
  } catch (err) {
    throw new StewardError('STATE_INVALID', `${file}: not valid JSON`, { cause: err });
  }
  const sv = (json as { schemaVersion?: unknown } | null)?.schemaVersion;
  if (typeof sv === 'number' && sv > APP_STATE_SCHEMA_VERSION) {
    throw new StewardError('STATE_INVALID', `${file}: schemaVersion ${sv} is newer than this steward understands (${APP_STATE_SCHEMA_VERSION})`);
  }
  const parsed = appStateSchema.safeParse(json);
  if (!parsed.success) throw new StewardError('STATE_INVALID', `${file}: ${formatIssues(parsed.error.issues)}`);
  return parsed.data;
}

// Writes state/<app>.json with the atomic file replace (mode 0600).
export async function writeAppState(paths: HostPaths, app: string, state: AppState): Promise<void> {
  await writeJsonAtomic(stateFile(paths, app), appStateSchema.parse(state), 0o600);
}
