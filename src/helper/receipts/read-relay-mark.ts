// The helper's reading of the agent's relay mark (core/relay-mark.ts). The file is in the agent's
// folder, which the `steward` user writes: it is hostile input, read by root. It is opened with
// O_NOFOLLOW, must be a regular file of the folder's owner, at most 4 KiB, and only a number is
// taken from it; no byte of it goes into a log line.
import { promises as fsp } from 'node:fs';
import type { HostPaths } from '../../core/paths.js';
import { relayMarkFile, relayMarkSchema, RELAY_MARK_SCHEMA_VERSION } from '../../core/relay-mark.js';
import { readRegularFile } from '../../platform/fs-atomic.js';
import { logger } from '../../platform/log.js';

const log = logger('helper:receipts');
// The last problem logged, so that a bad mark is logged once, not at every receipt.
let lastProblem = '';

// The seq up to which the agent has relayed every receipt signed by helper key `keyId`; null
// when there is no mark (no agent writes one: none runs here, or one older than the mark), so the
// helper keeps the newest receipts only, as before. A mark that does not read, is not the folder
// owner's, is from a newer steward or is for another helper key counts as 0: every receipt is
// unrelayed, the safe side.
export async function readRelayedSeq(paths: HostPaths, keyId: string): Promise<number | null> {
  const file = relayMarkFile(paths);
  const problem = (why: string): number => {
    if (why !== lastProblem) log('WARNING: relay mark %s %s: every receipt counts as unrelayed', file, why);
    lastProblem = why;
    return 0;
  };
  let got;
  try {
    got = await readRegularFile(file, 4096);
  } catch (err) {
    return problem(`cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  if (got === null) return null;
  try {
    // Why the owner check: a hard link the agent's user made to a file of root's is not its mark.
    if (got.uid !== (await fsp.lstat(paths.agentDir)).uid) return problem(`is owned by uid ${got.uid}, not by the agent folder's owner`);
  } catch {
    return problem('has no agent folder around it');
  }
  let json: unknown;
  try {
    json = JSON.parse(got.bytes.toString('utf8'));
  } catch {
    return problem('is not JSON');
  }
  const parsed = relayMarkSchema.safeParse(json);
  if (!parsed.success) {
    const sv = (json as { schemaVersion?: unknown } | null)?.schemaVersion;
    return problem(typeof sv === 'number' && sv > RELAY_MARK_SCHEMA_VERSION ? `is schemaVersion ${sv}, newer than this helper` : 'is not a relay mark');
  }
  const mark = parsed.data;
  if (mark.helperKeyId !== keyId) return problem(`is for helper key ${mark.helperKeyId}, not ${keyId}`);
  lastProblem = '';
  return mark.relayedSeq;
}
