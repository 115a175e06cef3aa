import type { AppStatus, StatusResult } from '../protocol/answers.js';
import { EXIT } from './error-message.js';
import { describeHold } from './hold-text.js';
import { when } from './output.js';

// What `agentctl status --check` tells a monitoring script (docs/agentctl.md): exit 1 when an
// app is broken (the supervisor gave up: `error`; `blocked`; `current` invalid; its state or
// journal unreadable; its unit failed; the app steward runs a fallback, or an older version than
// the package because the package's trial reverted), else 3 when an app is held (the control plane cannot
// change it until release-hold), else 0. `problems` says why, one line per app and problem.
export function checkStatus(result: StatusResult): { exit: number; problems: string[] } {
  const broken: string[] = [];
  const held: string[] = [];
  for (const a of result.apps) {
    broken.push(...brokenParts(a).map((p) => `${a.name}: ${p}`));
    if (a.hold) held.push(`${a.name}: ${describeHold(a.hold)}`);
  }
  const exit = broken.length ? EXIT.failure : held.length ? EXIT.refused : EXIT.ok;
  return { exit, problems: [...broken, ...held] };
}

function brokenParts(a: AppStatus): string[] {
  const out: string[] = [];
  if (a.supervisor?.state === 'error') out.push(`ERROR: the supervisor gave up (${a.supervisor.giveUpReason ?? 'no reason recorded'})`);
  if (a.blocked) out.push(`BLOCKED ${a.blocked.reason} since ${when(a.blocked.since)}`);
  if (a.currentState === 'invalid') out.push('current is not a valid release');
  if (a.stateError) out.push(`state error: ${a.stateError}`);
  if (a.journalError) out.push(`journal error: ${a.journalError}`);
  if (a.self?.fallback) out.push(`FALLBACK: ${a.self.fallback.message}`);
  if (a.self?.packageReverted) out.push(`REVERTED: ${a.self.packageReverted.message}`);
  if (a.unit && 'error' in a.unit) out.push(`unit ${a.unit.name}: ${a.unit.error}`);
  else if (a.unit?.activeState === 'failed') out.push(`unit ${a.unit.name} failed`);
  return out;
}
