// `release add`'s check of the release's `metrics` block (docs/design.md §19): a metrics URL off
// loopback, or a selector that does not parse, is refused RELEASE_INVALID before the catalog takes
// the release, as the helper refuses it again when it stages it. Only `metrics` is checked here: the
// rest of steward-release.json is the helper's to judge, against the host's config.
import * as tar from 'tar';
import { mustParse } from '../../core/must-parse.js';
import { metricsSchema, RELEASE_FILE_NAME } from '../../core/release-schemas.js';

const MAX_RELEASE_FILE_BYTES = 64 * 1024;

// Throws RELEASE_INVALID when the tarball's steward-release.json names a metrics block that is not
// valid. A tarball without the file, or with one that is not JSON, passes (the helper refuses it).
export async function checkReleaseMetrics(tarball: string, app: string, version: string): Promise<void> {
  const text = await readReleaseFileText(tarball);
  if (text === null) return;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return;
  }
  if (typeof json !== 'object' || json === null || !('metrics' in json)) return;
  mustParse(metricsSchema, (json as { metrics: unknown }).metrics, 'RELEASE_INVALID', `${RELEASE_FILE_NAME} of ${app} ${version}: metrics`);
}

// The text of the root steward-release.json of a tarball, or null when it has none (or it is larger
// than a release file may be, or the archive does not read).
async function readReleaseFileText(tarball: string): Promise<string | null> {
  let found: string | null = null;
  try {
    await tar.t({
      file: tarball,
      onReadEntry: (entry) => {
        const name = entry.path.replace(/^(\.\/)+/, '');
        if (name !== RELEASE_FILE_NAME || entry.type !== 'File' || (entry.size ?? 0) > MAX_RELEASE_FILE_BYTES) {
          entry.resume();
          return;
        }
        const chunks: Buffer[] = [];
        entry.on('data', (c: Buffer) => chunks.push(c));
        entry.on('end', () => {
          found = Buffer.concat(chunks).toString('utf8');
        });
      },
    });
  } catch {
    return null;
  }
  return found;
}
