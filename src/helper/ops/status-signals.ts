// An app's `signals` in the helper's status (docs/design.md §19): its counts since the activation of
// its current release, the CPU and RSS of its processes, and its release's `metrics` block for the
// agent to scrape. Never throws: a part that cannot be read reads as zero or absent.
import type { HostPaths } from '../../core/paths.js';
import type { HostConfig } from '../../core/config-schema.js';
import { isMetricsUrl } from '../../core/release-schemas.js';
import type { AppStatus } from '../../protocol/answers.js';
import { readSignalCounts } from '../supervisor/app-signals.js';
import { CpuCarry, readProcessTreeUsage, type ProcessUsage } from '../supervisor/process-usage.js';
import { readReleaseOf } from '../update/app-process.js';

// The seam to the host's processes (tests pass a plain function).
export type UsageReader = (pid: number) => Promise<ProcessUsage | null>;

const defaultCarry = new CpuCarry();

export interface SignalsInput {
  paths: HostPaths;
  config: HostConfig;
  // The helper's start: `since` for an app no activation of this steward counted.
  startedAt: number;
  app: string;
  // The version `current` resolves to, or null.
  current: string | null;
  // The app's process (its main pid), or null when none runs.
  pid: number | null;
  // Exits heard since the activation (a process app), or systemd's NRestarts (a unit app).
  restarts: number;
  readUsage?: UsageReader;
  carry?: CpuCarry;
}

export async function signalsOf(i: SignalsInput): Promise<NonNullable<AppStatus['signals']>> {
  const counts = await readSignalCounts(i.paths, i.app);
  const since = counts?.since ?? i.startedAt;
  const usage = i.pid !== null && i.pid > 0 ? await (i.readUsage ?? readProcessTreeUsage)(i.pid).catch(() => null) : null;
  const cpuSeconds = (i.carry ?? defaultCarry).cpuSince(i.app, since, usage ? i.pid : null, usage?.cpuSeconds ?? null);
  const metrics = i.current ? await metricsOf(i, i.current) : undefined;
  return {
    since,
    restarts: i.restarts,
    livenessFailures: counts?.livenessFailures ?? 0,
    watchdogKills: counts?.watchdogKills ?? 0,
    oomKills: counts?.oomKills ?? 0,
    cpuSeconds: Math.round(cpuSeconds * 100) / 100,
    rssBytes: usage?.rssBytes ?? 0,
    ...(metrics ? { metrics } : {}),
  };
}

// The current release's metrics block, checked again here (the helper's half of "refused off
// loopback on the host": the release file was checked at staging, and is read again as root).
async function metricsOf(i: SignalsInput, version: string): Promise<{ url: string; requests: string; errors: string } | undefined> {
  const rf = await readReleaseOf(i, i.app, version).catch(() => null);
  const m = rf?.metrics;
  return m && isMetricsUrl(m.url) ? { url: m.url, requests: m.requests, errors: m.errors } : undefined;
}
