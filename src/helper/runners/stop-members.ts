import { StewardError } from '../../core/errors.js';
import type { Clock } from '../../platform/clock.js';
import { logger } from '../../platform/log.js';
import type { Member } from './app-members.js';
import { readProcStatSync } from './process-group.js';

const debug = logger('helper:runner');

export interface StopMembersOptions {
  clock: Clock;
  // SIGTERM first, SIGKILL to what is left after this long; 0: SIGKILL at once.
  timeoutMs: number;
  // How long to wait for them to vanish after SIGKILL before giving up.
  killWaitMs?: number;
  pollMs?: number;
}

// Stops every process `find` returns, with one deadline for all of them: SIGTERM to all at once,
// then, after `timeoutMs`, SIGKILL to all that are left. `find` is asked again at every look, so
// a process forked meanwhile is signalled too. Returns how many processes were signalled (0:
// nothing ran, and nothing was awaited); throws when some outlive SIGKILL.
export async function stopMembers(find: () => Member[], what: string, opts: StopMembersOptions): Promise<number> {
  const { clock } = opts;
  const pollMs = opts.pollMs ?? 50;
  let members = find();
  if (members.length === 0) return 0;
  const termed = new Set<string>();
  const signalled = new Map<string, Member>();
  const send = (list: Member[], signal: 'SIGTERM' | 'SIGKILL') => {
    for (const m of list) {
      const key = `${m.pid}:${m.startTicks}`;
      if (signal === 'SIGTERM' && termed.has(key)) continue;
      if (signal === 'SIGTERM') termed.add(key);
      signalled.set(key, m);
      signalMember(m, signal);
    }
  };
  // What is left: what `find` finds, else the processes signalled that have not ended yet. A
  // process on its way out has released its memory, and with it the environment that proved it
  // the app's, some time before it is a zombie: `find` no longer knows it while it still runs.
  const left = (): Member[] => {
    const found = find();
    return found.length > 0 ? found : [...signalled.values()].filter(stillRunning);
  };
  if (opts.timeoutMs > 0) {
    // Why SIGTERM to all at once: each gets the whole timeout to end, and the stop as a whole
    // takes one timeout however many there are.
    debug('stopping %s: SIGTERM to pids %s, timeoutMs=%d', what, pids(members), opts.timeoutMs);
    send(members, 'SIGTERM');
    const deadline = clock.monotonic() + opts.timeoutMs;
    for (;;) {
      const rest = deadline - clock.monotonic();
      if (rest <= 0) break;
      await clock.sleep(Math.min(pollMs, rest));
      members = left();
      if (members.length === 0) return signalled.size;
      send(members, 'SIGTERM');
    }
  }
  const killDeadline = clock.monotonic() + (opts.killWaitMs ?? 5000);
  // Why the first looks come sooner: a SIGKILLed process is gone within a millisecond or two,
  // and a respawn waits for the leftovers of the process before (1, 2, 4 ... ms, then pollMs).
  let killPollMs = 1;
  for (;;) {
    members = left();
    if (members.length === 0) return signalled.size;
    // Why SIGKILL: these outlived their SIGTERM's timeout (or, with timeoutMs 0, their main
    // process, as systemd's KillMode=mixed does).
    debug('killing %s: SIGKILL to pids %s', what, pids(members));
    send(members, 'SIGKILL');
    if (clock.monotonic() > killDeadline) {
      throw new StewardError('INTERNAL', `${what}: pids ${pids(members)} are still running after SIGKILL`);
    }
    await clock.sleep(Math.min(killPollMs, pollMs));
    killPollMs *= 2;
  }
}

// Signals one member if it is still the process that was found (a reused pid is left alone).
function signalMember(m: Member, signal: 'SIGTERM' | 'SIGKILL'): void {
  if (readProcStatSync(m.pid)?.startTicks !== m.startTicks) return;
  try {
    process.kill(m.pid, signal);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
}

// Whether the process `m` still runs: the same start time, and neither a zombie nor dead.
function stillRunning(m: Member): boolean {
  const st = readProcStatSync(m.pid);
  return st !== null && st.startTicks === m.startTicks && st.state !== 'Z' && st.state !== 'X';
}

function pids(members: Member[]): string {
  return members.map((m) => m.pid).join(',');
}
