import type { Clock } from '../../platform/clock.js';
import { logger } from '../../platform/log.js';
import { checkHttp, checkTcp, parseProbeTcp, parseProbeUrl, type CheckResult } from './probe-checks.js';

const debug = logger('helper:probe');

// From the release file's health; when health is absent the caller passes { timeoutMs: 0, stableMs: 5000 }.
export interface ProbeSpec {
  http?: string;
  tcp?: string;
  // steward-agent's probe (docs/design.md §14): the first success is the started process's confirm of a
  // heartbeat the control plane answered (ProbeOptions.confirmed), within timeoutMs.
  confirm?: 'heartbeat';
  timeoutMs: number;
  stableMs: number;
}

// `code`: the reason code of the failure when it is not REPLACEMENT_UNHEALTHY's.
export type ProbeResult = { ok: true } | { ok: false; reason: string; code?: 'AGENT_UNCONFIRMED' | 'APP_NOT_READY' | 'READY_FD_CLOSED' };

export interface ProbeOptions {
  clock: Clock;
  // Whether the probed process is still the same live process.
  isAlive: () => Promise<boolean>;
  // Aborting rejects the probe with the signal's reason.
  signal?: AbortSignal;
  intervalMs?: number;
  // With spec.confirm: resolves true once the started process has confirmed, false when
  // `timeoutMs` passes first.
  confirmed?: (timeoutMs: number) => Promise<boolean>;
}

const MAX_REQUEST_MS = 2000;
const MIN_TELLING_MS = 100;

function formatMs(ms: number): string {
  return ms >= 1000 ? `${Math.round(ms / 100) / 10} s` : `${Math.round(ms)} ms`;
}

// Probes a started release (docs/design.md §3): polls until the first success or timeoutMs, then the
// process must stay alive for stableMs, then one last probe must pass. Without http or tcp the
// process must only stay alive for stableMs. A dead process fails the probe at once. With
// `confirm`, the first success is the process's confirm, which, once given, stays given.
export async function probeRelease(spec: ProbeSpec, opts: ProbeOptions): Promise<ProbeResult> {
  const { clock, isAlive, signal } = opts;
  const intervalMs = opts.intervalMs ?? 500;
  signal?.throwIfAborted();
  let check: ((timeoutMs: number) => Promise<CheckResult>) | null = null;
  if (spec.confirm !== undefined) {
    const confirmed = opts.confirmed ?? (async () => false);
    check = async (t) => ((await confirmed(t)) ? { ok: true } : { ok: false, detail: 'the new agent confirmed no heartbeat answered by the control plane', timedOut: true });
  } else if (spec.http !== undefined) {
    const url = spec.http;
    if (!parseProbeUrl(url)) return { ok: false, reason: `health.http ${url} is not a loopback http URL; not probed` };
    check = (t) => checkHttp(url, t, signal);
  } else if (spec.tcp !== undefined) {
    const target = spec.tcp;
    if (!parseProbeTcp(target)) return { ok: false, reason: `health.tcp ${target} is not a loopback host:port; not probed` };
    check = (t) => checkTcp(target, t, signal);
  }

  if (check) {
    const start = clock.monotonic();
    const deadline = start + spec.timeoutMs;
    let last: string | null = null;
    for (;;) {
      if (!(await isAlive())) return fail('the process exited');
      const budget = Math.max(1, Math.min(MAX_REQUEST_MS, deadline - clock.monotonic()));
      const r = await check(budget);
      signal?.throwIfAborted();
      if (r.ok) break;
      // A last attempt squeezed into the final milliseconds says little; keep what came before.
      if (last === null || !r.timedOut || budget >= MIN_TELLING_MS) last = r.detail;
      const left = deadline - clock.monotonic();
      if (left <= 0) return fail(`${last} for ${formatMs(clock.monotonic() - start)}`, spec.confirm ? 'AGENT_UNCONFIRMED' : undefined);
      await clock.sleep(Math.min(intervalMs, left), signal);
    }
    debug('first probe passed after %d ms', Math.round(clock.monotonic() - start));
  }

  const stableEnd = clock.monotonic() + spec.stableMs;
  for (;;) {
    if (!(await isAlive())) return fail(check ? 'the process exited during the stable period' : 'the process exited');
    const left = stableEnd - clock.monotonic();
    if (left <= 0) break;
    await clock.sleep(Math.min(intervalMs, left), signal);
  }

  if (check) {
    const r = await check(MAX_REQUEST_MS);
    signal?.throwIfAborted();
    if (!r.ok) return fail(`${r.detail} after the stable period`);
    if (!(await isAlive())) return fail('the process exited during the stable period');
  }
  return { ok: true };
}

function fail(reason: string, code?: 'AGENT_UNCONFIRMED'): ProbeResult {
  debug('probe failed reason=%s', reason);
  return code ? { ok: false, reason, code } : { ok: false, reason };
}
