// The helper's node_exporter textfile (docs/design.md §12, `metrics.textfile`) in Prometheus' text
// format 0.0.4, written by hand: the helper never loads prom-client (its idle footprint is
// bench row 5). What a node_exporter user wants of steward on one host: each app's version,
// whether it is up, its respawns, holds and blocks, its last update's outcome and time, the
// receipts signed, and the writes of this file that failed. test/helper/metrics/ holds the
// output to `promtool check metrics`.
import { isExitReason } from '../../core/exit-reasons.js';
import { JOURNAL_OUTCOMES } from '../../core/journal-schema.js';
import { RECEIPT_OUTCOMES } from '../../core/receipt-schema.js';

export const SUPERVISOR_STATES = ['running', 'waiting', 'error', 'stopped'] as const;

export interface TextfileApp {
  name: string;
  runner: 'process' | 'unit' | 'self';
  // The version `current` resolves to, or null.
  current: string | null;
  // The supervisor's state (a process app it has started), or null.
  supervisorState: (typeof SUPERVISOR_STATES)[number] | null;
  held: boolean;
  blocked: boolean;
  // The app's last update transaction (its journal), or null.
  lastUpdate: { outcome: string; updatedAt: number } | null;
  // Respawns by the supervisor since this helper started.
  restarts: number;
  // The supervisor's record of the last exit (a process app), or null.
  lastExit?: { code: number | null; signal: string | null; reason?: string } | null;
  // Exits of its process since the app's last activation (docs/design.md §17).
  restartsSinceActivation?: number;
  // The open watch window after `active` (docs/design.md §17), or null.
  watch?: { version: string; until: number; restarts: number; maxRestarts: number } | null;
}

export interface TextfileFacts {
  apps: TextfileApp[];
  // Receipts this helper signed since it started, by outcome.
  receipts: Record<string, number>;
  // Writes of this textfile that failed since the helper started.
  writeErrors: number;
}

type Sample = [labels: Record<string, string>, value: number];

// The text of `facts`; apps in name order, each family only when it has a sample.
export function renderTextfile(facts: TextfileFacts): string {
  const apps = [...facts.apps].sort((a, b) => (a.name < b.name ? -1 : 1));
  const out: string[] = [];
  const family = (name: string, type: 'gauge' | 'counter', help: string, samples: Sample[]) => {
    if (samples.length === 0) return;
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    for (const [labels, value] of samples) out.push(`${name}${labelsOf(labels)} ${value}`);
  };
  const flag = (b: boolean) => (b ? 1 : 0);
  const processApps = apps.filter((a) => a.runner === 'process');
  family('steward_app_info', 'gauge', 'The version current resolves to (none: no valid current), always 1.', apps.map((a) => [{ app: a.name, version: a.current ?? 'none' }, 1]));
  family('steward_app_up', 'gauge', "1 while the supervisor's state of a process app is running.", processApps.map((a) => [{ app: a.name }, flag(a.supervisorState === 'running')]));
  family('steward_app_supervisor_state', 'gauge', "The supervisor's state of a process app: 1 for the state it is in.", processApps.flatMap((a) => (a.supervisorState === null ? [] : SUPERVISOR_STATES.map((s): Sample => [{ app: a.name, state: s }, flag(a.supervisorState === s)]))));
  family('steward_app_restarts_total', 'counter', 'Respawns of a process app by the supervisor since the helper started.', processApps.map((a) => [{ app: a.name }, a.restarts]));
  family('steward_app_restarts_since_activation', 'gauge', "Exits of a process app's process heard since its last activation (an update, a rollback or a recovery starts it at 0).", processApps.map((a) => [{ app: a.name }, a.restartsSinceActivation ?? 0]));
  family('steward_app_watch_window_open', 'gauge', "1 while a version's watch window after its activation is open (health.watchMs; exits past the allowed ones roll it back).", processApps.map((a) => [{ app: a.name }, flag(Boolean(a.watch))]));
  const watched = processApps.filter((a) => a.watch);
  family('steward_app_watch_window_end_timestamp_seconds', 'gauge', 'When the open watch window ends, in seconds since the epoch.', watched.map((a) => [{ app: a.name, version: a.watch!.version }, a.watch!.until / 1000]));
  family('steward_app_watch_window_exits', 'gauge', 'Exits of the watched version heard in its open window; past steward_app_watch_window_exits_allowed it is rolled back.', watched.map((a) => [{ app: a.name, version: a.watch!.version }, a.watch!.restarts]));
  family('steward_app_watch_window_exits_allowed', 'gauge', 'Exits the open watch window allows (health.watchMaxRestarts).', watched.map((a) => [{ app: a.name, version: a.watch!.version }, a.watch!.maxRestarts]));
  const exited = processApps.filter((a) => a.lastExit);
  family('steward_app_last_exit_info', 'gauge', "How the app's last process ended, always 1: reason EXIT with its code, SIGNAL with its signal, OOM, WATCHDOG or LIVENESS_FAILED with the code or signal it ended with, or UNKNOWN (an adopted process).", exited.map((a) => [exitLabels(a.name, a.lastExit!), 1]));
  family('steward_app_held', 'gauge', '1 while an operator hold is on the app (agentctl release-hold clears it).', apps.map((a) => [{ app: a.name }, flag(a.held)]));
  family('steward_app_blocked', 'gauge', '1 while the app is blocked (agentctl recover clears it).', apps.map((a) => [{ app: a.name }, flag(a.blocked)]));
  const updated = apps.filter((a) => a.lastUpdate !== null);
  family('steward_update_last_outcome', 'gauge', "The outcome of the app's last update transaction: 1 for the outcome it has.", updated.flatMap((a) => JOURNAL_OUTCOMES.map((o): Sample => [{ app: a.name, outcome: o }, flag(a.lastUpdate!.outcome === o)])));
  family('steward_update_last_timestamp_seconds', 'gauge', "When the app's last update transaction last changed, in seconds since the epoch.", updated.map((a) => [{ app: a.name }, a.lastUpdate!.updatedAt / 1000]));
  family('steward_receipts_total', 'counter', 'Receipts the helper signed since it started, by outcome.', RECEIPT_OUTCOMES.map((o) => [{ outcome: o }, facts.receipts[o] ?? 0]));
  family('steward_textfile_write_errors_total', 'counter', 'Writes of this textfile that failed since the helper started (the helper log says why).', [[{}, facts.writeErrors]]);
  return out.join('\n') + '\n';
}

// The labels of steward_app_last_exit_info: a signal name is the runner's ("SIGKILL"), kept to
// letters and digits so that nothing an app does can make a label of its own.
function exitLabels(app: string, e: { code: number | null; signal: string | null; reason?: string }): Record<string, string> {
  const code = e.signal ? e.signal.replace(/[^A-Z0-9]/gi, '').slice(0, 16) : e.code !== null ? String(e.code) : '';
  if (e.reason && isExitReason(e.reason)) return { app, reason: e.reason, code };
  if (e.signal) return { app, reason: 'SIGNAL', code: e.signal.replace(/[^A-Z0-9]/gi, '').slice(0, 16) };
  if (e.code !== null) return { app, reason: 'EXIT', code: String(e.code) };
  return { app, reason: 'UNKNOWN', code: '' };
}

// `{k="v",...}` with the format's escapes (app names and versions have none, by their rules).
function labelsOf(labels: Record<string, string>): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`);
  return parts.length ? `{${parts.join(',')}}` : '';
}
