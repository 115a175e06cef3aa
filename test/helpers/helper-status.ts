// The helper's `status` answer, asked over its socket from the test's own process, or null while
// it does not answer (not listening yet, or restarting). The tests' waits poll it: an agentctl
// process per poll cost 0.15-0.3 s of CPU, ten or twenty times a second, in every file that
// waits on a helper. Tests of agentctl itself still run agentctl.
import { StewardError } from '../../src/core/errors.js';
import { hostPaths } from '../../src/core/paths.js';
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
