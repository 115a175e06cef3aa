import path from 'node:path';
import type { AppConfig } from '../../core/config-schema.js';
import { StewardError } from '../../core/errors.js';
import { mustParse } from '../../core/must-parse.js';
import { AGENT_APP } from '../../core/name-checks.js';
import { RELEASE_FILE_NAME, releaseFileSchema, type ReleaseFile } from '../../core/release-schemas.js';
import { readFileNoFollow } from '../../platform/fs-atomic.js';

// Reads and checks steward-release.json at the root of an extracted tree (docs/design.md §3.5):
// a regular file (never through a symlink), the schema, and name and version equal to
// the request. `process` apps need `start`; `unit` apps must not have one.
export async function checkReleaseFile(tree: string, expect: { app: string; version: string; appConfig: AppConfig }): Promise<ReleaseFile> {
  const file = path.join(tree, RELEASE_FILE_NAME);
  let raw: Buffer | null;
  try {
    raw = await readFileNoFollow(file, 64 * 1024);
  } catch (err) {
    throw new StewardError('RELEASE_INVALID', `${RELEASE_FILE_NAME}: ${(err as NodeJS.ErrnoException).code === 'ELOOP' ? 'is a symlink' : (err as Error).message}`, { cause: err });
  }
  if (!raw) throw new StewardError('RELEASE_INVALID', `the archive has no ${RELEASE_FILE_NAME} at its root`);
  let json: unknown;
  try {
    json = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new StewardError('RELEASE_INVALID', `${RELEASE_FILE_NAME} is not valid JSON`);
  }
  const rf = mustParse(releaseFileSchema, json, 'RELEASE_INVALID', RELEASE_FILE_NAME);
  if (rf.name !== expect.app) throw new StewardError('RELEASE_INVALID', `${RELEASE_FILE_NAME} names app ${rf.name}, not ${expect.app}`);
  if (rf.version !== expect.version) {
    throw new StewardError('RELEASE_INVALID', `${RELEASE_FILE_NAME} says version ${rf.version}, not ${expect.version}`);
  }
  if (expect.appConfig.runner === 'process' && !rf.start) {
    throw new StewardError('RELEASE_INVALID', `${RELEASE_FILE_NAME} has no "start" and ${expect.app} is a process app`);
  }
  if (expect.appConfig.runner === 'unit' && rf.start) {
    throw new StewardError('RELEASE_INVALID', `${RELEASE_FILE_NAME} has "start" but ${expect.app} runs as a unit; its unit starts it`);
  }
  if (rf.health?.confirm && expect.app !== AGENT_APP) {
    throw new StewardError('RELEASE_INVALID', `${RELEASE_FILE_NAME} of ${expect.app} ${rf.version} has health.confirm, which only ${AGENT_APP} releases may have`);
  }
  if (expect.appConfig.runner === 'self' && rf.start) {
    throw new StewardError('RELEASE_INVALID', `${RELEASE_FILE_NAME} has "start" but ${expect.app} is steward itself; the launcher starts it`);
  }
  return rf;
}
