// The helper's `status` answer, asked over its socket from the test's own process, or null while
// it does not answer (not listening yet, or restarting). The tests' waits poll it: an agentctl
// process per poll cost 0.15-0.3 s of CPU, ten or twenty times a second, in every file that
// waits on a helper. Tests of agentctl itself still run agentctl.
import { readFileSync } from 'node:fs';
import { checkReceipts, type CheckedReceipt } from '../../src/cli/commands/receipts.js';
import { StewardError } from '../../src/core/errors.js';
import { hostPaths } from '../../src/core/paths.js';
import { parsePublicKey } from '../../src/platform/keys.js';
import { callHelper, pickSocket } from '../../src/protocol/client.js';
import { helperClient } from '../../src/protocol/helper-client.js';

export async function helperStatus(root: string): Promise<any> {
  try {
    const socket = await pickSocket(hostPaths(root));
    return await helperClient((request, opts) => callHelper(socket.path, request, opts)).status();
  } catch (err) {
    if (err instanceof StewardError) return null;
    throw err;
  }
}

// How long a poll waits before the next: `everyMs`, or three times what the last check took when
// that is longer, so that a check that spawns a process (a CLI, an nsenter) takes at most a
// quarter of a core while it waits, instead of nearly all of it. (Twice, a third of a core: the
// suite is bound by the machine's CPU, and the waits of the container tests add up.)
export function pollPause(everyMs: number, lastCheckMs: number): Promise<void> {
  return new Promise((r) => setTimeout(r, Math.max(everyMs, 3 * lastCheckMs)));
}

// The status of one app over the socket, from a helper that must be answering (a test's waits
// poll it while the helper runs).
export async function appStatusOf(root: string, app: string): Promise<any> {
  const s = await helperStatus(root);
  if (!s) throw new Error('the helper did not answer its status');
  return s.apps.find((a: any) => a.name === app);
}

// `agentctl --json receipts [app]`'s receipts, asked from this process and each verified against
// helper.pub as the CLI verifies them (checkReceipts), from a helper that must be answering.
export async function helperReceipts(root: string, app?: string): Promise<CheckedReceipt[]> {
  const paths = hostPaths(root);
  const socket = await pickSocket(paths);
  const r = await helperClient((request, opts) => callHelper(socket.path, request, opts)).receipts(app === undefined ? {} : { app });
  return checkReceipts(Array.isArray(r?.receipts) ? r.receipts : [], parsePublicKey(readFileSync(paths.helperPub, 'utf8')), app);
}
