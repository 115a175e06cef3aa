import type { AcceptedAnswer, UpdateAnswer } from '../protocol/answers.js';
import type { StageTransfer } from '../protocol/schemas.js';
import { EXIT } from './error-message.js';
import { printJson, printLines, when } from './output.js';

// docs/design.md §8: 0 active (also ALREADY_ACTIVE), 4 rolled back, 1 failed, 3 refused.
export function exitCodeOfAnswer(a: UpdateAnswer | AcceptedAnswer): number {
  if ('accepted' in a) return EXIT.ok;
  switch (a.outcome) {
    case 'active':
      return EXIT.ok;
    case 'rolled-back':
      return EXIT.rolledBack;
    case 'refused':
      return EXIT.refused;
    default:
      return EXIT.failure;
  }
}

// Prints what happened to an attempt, plainly, and returns the exit code.
export function reportAnswer(a: UpdateAnswer | AcceptedAnswer, json: boolean): number {
  const code = exitCodeOfAnswer(a);
  if (json) {
    printJson(a);
    return code;
  }
  if ('accepted' in a) {
    printLines([a.attemptId]);
    printLines([`accepted: ${a.app} attempt ${a.attemptId} is running; \`agentctl status ${a.app}\` follows it`], process.stderr);
    return code;
  }
  const what = `${a.app} ${a.fromVersion ?? '(none)'} -> ${a.targetVersion ?? '?'}`;
  const lines: string[] = [];
  switch (a.outcome) {
    case 'active':
      lines.push(a.reason?.code === 'ALREADY_ACTIVE' ? `${a.app} ${a.targetVersion} is already active` : `${what}: active`);
      break;
    case 'rolled-back':
      lines.push(`${what}: ROLLED BACK to ${a.fromVersion}`);
      break;
    case 'failed':
      lines.push(`${what}: FAILED`);
      break;
    case 'refused':
      lines.push(`${what}: refused`);
      break;
  }
  if (a.reason && a.reason.code !== 'ALREADY_ACTIVE') lines.push(`  reason: ${a.reason.code}: ${a.reason.message}`);
  if (a.retryAfter) lines.push(`  ${a.targetVersion} is quarantined until ${when(a.retryAfter)}`);
  if (a.logFile) lines.push(`  last log lines of the failed version: ${a.logFile}`);
  if (a.transfer) lines.push(`  ${describeTransfer(a.transfer)}`);
  lines.push(`  attempt ${a.attemptId}${a.settled ? ' (answered from its earlier receipt)' : ''}${a.receipt ? ', receipt signed' : ', receipt pending'}`);
  printLines(lines);
  return code;
}

// One line on how a stage's bytes came (docs/design.md §20).
export function describeTransfer(t: StageTransfer): string {
  if (t.via === 'staged') return 'staged before: nothing fetched';
  const how = t.via === 'tarball' ? 'the tarball' : t.patch?.used ? `the file index and a static patch from ${t.patch.from}` : 'the file index and a pack of the missing files';
  return `fetched ${formatBytes(t.fetchedBytes)} (${how}), reused ${formatBytes(t.reusedBytes)} of files already on this host`;
}

function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}
