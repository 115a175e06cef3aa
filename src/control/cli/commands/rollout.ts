import type { Command } from 'commander';
import { StewardError } from '../../../core/errors.js';
import { printJson, table, when } from '../../../cli/output.js';
import { describeRun, type RunStatusView } from '../../rollouts/run-status.js';
import { retryRun, startRun, stopRun, type RunOptions } from '../../rollouts/start-run.js';
import type { ControlStore, RunRow } from '../../store/store.js';
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

// The status of the latest run of `app`, read after the change that made it.
async function describeLatest(store: ControlStore, app: string): Promise<RunStatusView> {
  return store.read(async (tx) => describeRun(tx, (await tx.runs.latest(app)) as RunRow));
}

// `steward-control rollout start|status|stop|retry`
export function registerRollout(program: Command): void {
  const rollout = program.command('rollout').description('fleet rollouts: a canary, then batches; halt at the first revert');
  const print = (cmd: Command, v: RunStatusView) => (jsonOf(cmd) ? printJson(v) : process.stdout.write(formatRun(v)));

  addRunFlags(rollout.command('start <app> <version>').description('start a rollout of a catalog release to every enrolled node')).action(
    async (app: string, version: string, o: RunFlags, cmd: Command) => {
      checkNames(app, version);
      const opts = { batchSize: 1, ...runOptions(o) };
      print(cmd, await withStore(cmd, async (store) => describeLatest(store, (await startRun(store, app, version, opts)).app)));
    },
  );
  addRunFlags(rollout.command('retry <app>').description("start a new run of the app's last rollout over the nodes it did not confirm")).action(
    async (app: string, o: RunFlags, cmd: Command) => {
      checkNames(app);
      print(cmd, await withStore(cmd, async (store) => describeLatest(store, (await retryRun(store, app, runOptions(o))).app)));
    },
  );
  rollout
    .command('stop <app>')
    .description('stop the running rollout of the app (attempts already sent stay)')
    .action(async (app: string, _o: unknown, cmd: Command) => {
      checkNames(app);
      print(cmd, await withStore(cmd, async (store) => describeLatest(store, (await stopRun(store, app)).app)));
    });
  rollout
    .command('status [app]')
    .description('the latest rollout of the app (or of every app)')
    .action(async (app: string | undefined, _o: unknown, cmd: Command) => {
      if (app) checkNames(app);
      const views = await withStore(cmd, (store) =>
        store.read(async (tx) => {
          const runs = app ? [await tx.runs.latest(app)].filter((r) => r !== null) : await tx.runs.latestAll();
          if (app && runs.length === 0) throw new StewardError('NOT_FOUND', `no rollout of ${app}`);
          const out: RunStatusView[] = [];
          for (const r of runs) out.push(await describeRun(tx, r));
          return out;
        }),
      );
      if (jsonOf(cmd)) return printJson({ runs: views });
      process.stdout.write(views.length ? views.map(formatRun).join('\n') : 'no rollouts\n');
    });
}
