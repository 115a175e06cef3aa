// The helper's reading of the agent's relay mark (core/relay-mark.ts), hostile input read as
// read-agent-file.ts says; only a number is taken from it.
import type { HostPaths } from '../../core/paths.js';
import { relayMarkFile, relayMarkSchema, RELAY_MARK_SCHEMA_VERSION } from '../../core/relay-mark.js';
import { readAgentJson } from './read-agent-file.js';
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
  const read = await readAgentJson(paths, file);
  if (read === null) return null;
  if ('problem' in read) return problem(read.problem);
  const json = read.json;
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
