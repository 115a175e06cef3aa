import type { Command } from 'commander';
import { StewardError } from '../../../core/errors.js';
import { printJson, table, when } from '../../../cli/output.js';
import { systemClock } from '../../../platform/clock.js';
import { describeRun, type RunStatusView } from '../../rollouts/run-status.js';
import { retryRun, startRun, stopRun, type RunOptions } from '../../rollouts/start-run.js';
import { latestRun, latestRuns } from '../../store/runs.js';
import { jsonOf, withStore } from '../context.js';
import { parseDuration, parsePositiveInt } from '../parse-options.js';
import { checkNames } from './release.js';

interface RunFlags {
  canary?: string;
  batch?: string;
  verdictTimeout?: string;
  allowRetryReverted?: boolean;
}

function runOptions(o: RunFlags): RunOptions {
  return {
    ...(o.canary ? { canary: o.canary } : {}),
    ...(o.batch ? { batchSize: parsePositiveInt(o.batch, '--batch', 10_000) } : {}),
    ...(o.verdictTimeout ? { verdictTimeoutMs: parseDuration(o.verdictTimeout, '--verdict-timeout') } : {}),
    ...(o.allowRetryReverted ? { allowRetryReverted: true } : {}),
  };
}

// The human form of one run's status.
export function formatRun(v: RunStatusView): string {
  const head = [
    `rollout ${v.id}: ${v.app} ${v.version} ${v.status}${v.stopped && v.status !== 'stopped' ? ' (stop requested)' : ''}`,
    `  started ${when(v.startedAt)}${v.endedAt ? `, ended ${when(v.endedAt)}` : ''}; canary ${v.canary ?? '-'}; batch ${v.batchSize}; verdict timeout ${Math.round(v.verdictTimeoutMs / 1000)}s${v.allowRetryReverted ? '; retrying reverted nodes' : ''}`,
  ];
  if (v.haltReason) head.push(`  halted: ${v.haltReason.code}: ${v.haltReason.message}`);
  const rows = [['NODE', 'STATE', 'ATTEMPT', 'OUTCOME', 'REASON', 'RECEIPT-LOST']];
  for (const n of v.nodes) rows.push([n.nodeId, n.state, n.attemptId ?? '-', n.outcome ?? '-', n.reasonCode ?? '-', n.receiptLost.length ? n.receiptLost.join(',') : '-']);
  return head.join('\n') + '\n' + (v.nodes.length ? table(rows) : '  no nodes\n');
}

function addRunFlags(c: Command): Command {
  return c
    .option('--canary <nodeId>', 'the node to try first (default: the first eligible by nodeId)')
    .option('--batch <n>', 'nodes per batch after the canary')
    .option('--verdict-timeout <duration>', 'how long each node has to answer (default 30m)')
    .option('--allow-retry-reverted', 'also send the version to nodes that reverted it before');
}

// `steward-control rollout start|status|stop|retry`
export function registerRollout(program: Command): void {
  const rollout = program.command('rollout').description('fleet rollouts: a canary, then batches; halt at the first revert');
  const print = (cmd: Command, v: RunStatusView) => (jsonOf(cmd) ? printJson(v) : process.stdout.write(formatRun(v)));

  addRunFlags(rollout.command('start <app> <version>').description('start a rollout of a catalog release to every enrolled node')).action(
    async (app: string, version: string, o: RunFlags, cmd: Command) => {
      checkNames(app, version);
      const opts = { batchSize: 1, ...runOptions(o) };
      const now = systemClock.now();
      print(cmd, await withStore(cmd, (store) => describeRun(store, startRun(store, app, version, opts, now), now)));
    },
  );
  addRunFlags(rollout.command('retry <app>').description("start a new run of the app's last rollout over the nodes it did not confirm")).action(
    async (app: string, o: RunFlags, cmd: Command) => {
      checkNames(app);
      const now = systemClock.now();
      print(cmd, await withStore(cmd, (store) => describeRun(store, retryRun(store, app, runOptions(o), now), now)));
    },
  );
  rollout
    .command('stop <app>')
    .description('stop the running rollout of the app (attempts already sent stay)')
    .action(async (app: string, _o: unknown, cmd: Command) => {
      checkNames(app);
      const now = systemClock.now();
      print(cmd, await withStore(cmd, (store) => describeRun(store, stopRun(store, app, now), now)));
    });
  rollout
    .command('status [app]')
    .description('the latest rollout of the app (or of every app)')
    .action(async (app: string | undefined, _o: unknown, cmd: Command) => {
      if (app) checkNames(app);
      const now = systemClock.now();
      const views = await withStore(cmd, (store) => {
        const runs = app ? [latestRun(store, app)].filter((r) => r !== null) : latestRuns(store);
        if (app && runs.length === 0) throw new StewardError('NOT_FOUND', `no rollout of ${app}`);
        return runs.map((r) => describeRun(store, r, now));
      });
      if (jsonOf(cmd)) return printJson({ runs: views });
      process.stdout.write(views.length ? views.map(formatRun).join('\n') : 'no rollouts\n');
    });
}
