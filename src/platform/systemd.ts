import { promises as fsp } from 'node:fs';
import { runTool } from './exec.js';

// The PATH of the system tools steward runs (systemctl, journalctl) and of the apps it starts
// (docs/design.md §5): the system's own folders, never the caller's.
export const APP_PATH = '/usr/local/bin:/usr/bin:/bin';

// The unit an app runs in under the systemd runner.
export function appUnitName(app: string): string {
  return `steward-app-${app}.service`;
}

// Whether PID 1 is systemd and answers: /run/systemd/system exists (sd_booted) and
// `systemctl is-system-running` says anything but "offline".
export async function systemdAvailable(): Promise<boolean> {
  const st = await fsp.stat('/run/systemd/system').catch(() => null);
  if (!st?.isDirectory()) return false;
  const r = await runTool('systemctl', ['is-system-running'], { env: { PATH: APP_PATH, LANG: 'C.UTF-8' }, timeoutMs: 10_000 });
  // It exits non-zero for "degraded", "starting", ...: only its answer counts.
  const state = r.stdout.trim();
  return state !== '' && state !== 'offline' && state !== 'unknown';
}
