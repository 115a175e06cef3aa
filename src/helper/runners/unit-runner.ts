import { StewardError } from '../../core/errors.js';
import { runTool } from '../../platform/exec.js';
import { logger } from '../../platform/log.js';
import { APP_PATH } from '../../platform/systemd.js';

const debug = logger('helper:unit');

// The unit names the host config accepts for `runner: "unit"` (config-schema.ts).
const UNIT_RE = /^[A-Za-z0-9:_.@-]{1,250}\.service$/;

// What the helper observes of a unit (docs/design.md §5): systemd's own `Restart=` governs it.
export interface UnitStatus {
  // "loaded", "not-found", ...: a unit that is not loaded is not running.
  loadState: string;
  // "active", "inactive", "failed", "activating", "deactivating", "reloading".
  activeState: string;
  // "running", "dead", "auto-restart", ...
  subState: string;
  // 0 when no main process runs.
  mainPid: number;
  // How often systemd restarted it since it was loaded (Restart=).
  nRestarts: number;
  // Its cgroup ("/system.slice/x.service"), empty when it has none.
  controlGroup: string;
}

// Runs systemctl with an environment built from nothing and no shell; returns its stdout.
// A non-zero exit is an error naming the unit and systemctl's own words.
export async function systemctl(args: string[], opts: { timeoutMs?: number } = {}): Promise<string> {
  const r = await runTool('systemctl', args, { env: { PATH: APP_PATH, LANG: 'C.UTF-8' }, timeoutMs: opts.timeoutMs ?? 30_000 });
  if (r.failure !== null) {
    const why = (r.stderr || r.stdout || r.failure).trim();
    throw new StewardError('IO_ERROR', `systemctl ${args.join(' ')} failed: ${why}`, { cause: r });
  }
  return r.stdout;
}

// The ActiveState, SubState, MainPID and NRestarts of a unit. A unit systemd does not know
// answers loadState "not-found", activeState "inactive", mainPid 0.
export async function unitStatus(unit: string): Promise<UnitStatus> {
  checkUnitName(unit);
  const out = await systemctl(['show', '--property=LoadState,ActiveState,SubState,MainPID,NRestarts,ControlGroup', '--', unit]);
  return parseUnitShow(out);
}

// Starts a unit and waits for its start job (for Type=simple: until it was forked).
// Idempotent: a running unit is left as it is.
export async function startUnit(unit: string, opts: { timeoutMs?: number } = {}): Promise<void> {
  checkUnitName(unit);
  debug('starting unit=%s', unit);
  await systemctl(['start', '--', unit], { timeoutMs: opts.timeoutMs ?? 120_000 });
}

// Stops a unit and waits for its stop job; its own TimeoutStopSec= and KillMode= apply.
// Idempotent: a stopped or unknown unit is success.
export async function stopUnit(unit: string, opts: { timeoutMs?: number } = {}): Promise<void> {
  checkUnitName(unit);
  debug('stopping unit=%s', unit);
  try {
    await systemctl(['stop', '--', unit], { timeoutMs: opts.timeoutMs ?? 120_000 });
  } catch (err) {
    // Stopping a unit systemd never heard of fails ("not loaded"); nothing runs, so it is done.
    const st = await unitStatus(unit).catch(() => null);
    if (st && st.loadState === 'not-found' && st.activeState === 'inactive') return;
    throw err;
  }
}

// Parses `systemctl show` output: one key=value line per property, in systemd's order.
export function parseUnitShow(text: string): UnitStatus {
  const props = new Map<string, string>();
  for (const line of text.split('\n')) {
    const eq = line.indexOf('=');
    if (eq > 0) props.set(line.slice(0, eq), line.slice(eq + 1).trim());
  }
  const int = (key: string): number => {
    const v = props.get(key);
    return v !== undefined && /^\d+$/.test(v) ? Number(v) : 0;
  };
  return {
    loadState: props.get('LoadState') ?? '',
    activeState: props.get('ActiveState') ?? '',
    subState: props.get('SubState') ?? '',
    mainPid: int('MainPID'),
    nRestarts: int('NRestarts'),
    controlGroup: props.get('ControlGroup') ?? '',
  };
}

function checkUnitName(unit: string): void {
  if (!UNIT_RE.test(unit)) throw new StewardError('CONFIG_INVALID', `not a systemd service unit name: ${JSON.stringify(unit)}`);
}

// The real `unit` runner seam for the update transaction (UpdateContext.units).
export const systemdUnits = {
  start: (unit: string) => startUnit(unit),
  stop: (unit: string) => stopUnit(unit),
  status: (unit: string) => unitStatus(unit),
};
