import { mustParse } from '../../core/must-parse.js';
import { stateFile, type HostPaths } from '../../core/paths.js';
import { APP_STATE_SCHEMA_VERSION, appStateSchema, emptyAppState, type AppState } from '../../core/state-schemas.js';
import { prepareJsonAtomic, writeJsonAtomic, type PreparedFile } from '../../platform/fs-atomic.js';
import { ioStep, noFaults, type Faults } from '../../platform/faults.js';
import { readVersionedJson } from '../../platform/versioned-file.js';

// Reads state/<app>.json; a missing file is the empty state. A file from a newer
// steward or one that does not validate is refused (STATE_INVALID), never guessed at.
export async function readAppState(paths: HostPaths, app: string): Promise<AppState> {
  return (await readVersionedJson(stateFile(paths, app), APP_STATE_SCHEMA_VERSION, appStateSchema, 1024 * 1024, true)) ?? emptyAppState();
}

// Writes state/<app>.json with the atomic file replace (mode 0600).
export async function writeAppState(paths: HostPaths, app: string, state: AppState, faults: Faults = noFaults): Promise<void> {
  await writeJsonAtomic(stateFile(paths, app), mustParse(appStateSchema, state, 'INTERNAL', 'app state'), 0o600, ioStep(faults, 'state'));
}

// The first half of writeAppState (see prepareFileAtomic): the temp file is durable, the
// state is not changed until commit().
export async function prepareAppState(paths: HostPaths, app: string, state: AppState, faults: Faults = noFaults): Promise<PreparedFile> {
  return prepareJsonAtomic(stateFile(paths, app), mustParse(appStateSchema, state, 'INTERNAL', 'app state'), 0o600, ioStep(faults, 'state'));
}
