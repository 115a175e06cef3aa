import type { Command } from 'commander';
import { describeWindows } from '../../../core/windows.js';
import { printJson, shown, table, when } from '../../../cli/output.js';
import type { DryRunView, RunSummary } from '../../operations/rollout-ops.js';
import type { RunStatusView } from '../../rollouts/run-status.js';
import { jsonOf } from '../context.js';
import { invoke, invokeAll } from '../invoke.js';

// The operations' code (zod, their schemas, the planner), imported when a subcommand runs: --help and the
// parsing of the command line register the commands without it.
const ops = () => import('../../operations/rollout-ops.js');

interface RunFlags {
  select?: string;
  canaries?: string;
  canary: string[];
  seed?: string;
  batch?: string;
  bake?: string;
  maxFailures?: string;
  maxRefused?: string;
  maxFetchFailures?: string;
  verdictTimeout?: string;
  allowRetryReverted?: boolean;
  window: string[];
  tz?: string;
  startAt?: string;
  analysis?: string;
  analysisWindow?: string;
  analysisThreshold: string[];
  dryRun?: boolean;
  behind?: boolean;
}

const seconds = (ms: number) => (ms % 60_000 === 0 && ms > 0 ? `${ms / 60_000}m` : `${Math.round(ms / 1000)}s`);
const stateText = (n: { state: string }) => (n.state === 'already-current' ? 'already-current (reported)' : n.state);

// The human form of one run's status.
export function formatRun(v: RunStatusView): string {
  const c = v.counts;
  const head = [
    `rollout ${v.id}: ${v.app} ${v.version} ${v.status}${v.stopped && v.status !== 'stopped' ? ' (stop requested)' : ''}${v.retryOf !== null ? ` (retry of ${v.retryOf}${v.retryBehind ? ', the nodes behind' : ''})` : ''}`,
    `  started ${when(v.startedAt)}${v.endedAt ? `, ended ${when(v.endedAt)}` : ''}; selector ${shown(v.selector) || '(every node)'}`,
    `  canaries ${v.canaries}${v.namedCanaries.length ? ` (named ${v.namedCanaries.join(',')})` : ''}, seed ${v.canarySeed}: ${v.canaryNodes.join(',') || '-'}; batch ${v.batch} (${v.batchSize} nodes); bake ${seconds(v.bakeMs)}${v.bakeUntil ? ` (until ${when(v.bakeUntil)})` : ''}; verdict timeout ${seconds(v.verdictTimeoutMs)}${v.allowRetryReverted ? '; retrying reverted nodes' : ''}`,
    `  failures ${v.failures} of ${v.maxFailures} tolerated; refusals tolerated ${v.refusedLimit} (--max-refused ${v.maxRefused}); fetch failures per batch --max-fetch-failures ${v.maxFetchFailures}; windows ${describeWindows(v.windows, v.tz)}${v.nextWindowAt ? `, next at ${when(v.nextWindowAt)}` : ''}${v.startAt ? `; starts at ${when(v.startAt)}` : ''}`,
    `  targeted ${c.targeted}, not targeted ${c.notTargeted}; confirmed ${c.confirmed}, already current ${c.alreadyCurrent}, refused ${c.refused}, reverted ${c.reverted}${c.fetchFailed ? `, could not fetch ${c.fetchFailed}` : ''}, pending ${c.pending}${c.excluded ? `, excluded ${c.excluded}` : ''}; behind ${c.behind}`,
  ];
  head.push(...analysisLines(v));
  if (v.haltReason) head.push(`  halted: ${v.haltReason.code}: ${v.haltReason.message}`);
  if (v.pauseReason) head.push(`  paused: ${v.pauseReason.code}: ${v.pauseReason.message}`);
  const rows = [['NODE', 'HOST', 'STATE', 'REASON', 'BATCH', 'ATTEMPT', 'OUTCOME', 'RECEIPT-LOST']];
  for (const n of v.nodes) {
    rows.push([n.nodeId, n.hostname ?? '-', stateText(n), n.reason ?? '-', n.batch === null ? '-' : n.batch === 0 ? 'canary' : String(n.batch), n.attemptId ?? '-', n.outcome ?? '-', n.receiptLost.length ? n.receiptLost.join(',') : '-']);
  }
  // Each verdict's reason as the node's helper wrote it, below the table (a message is long).
  const why = v.nodes.filter((n) => n.reasonMessage).map((n) => `  ${n.nodeId} (${n.hostname ?? '-'}) ${n.outcome ?? n.state} ${n.reasonCode ?? '-'}: ${n.reasonMessage}`);
  const off = (list: RunStatusView['behind']) => list.map((b) => `${b.nodeId} (${b.hostname}, at ${b.current ?? 'none'})`).join(', ');
  const behind = v.behind.length ? [`  behind rollout ${v.behindRunId}: ${off(v.behind)}`] : [];
  // Why apart: a node at a newer version is not behind, and `retry --behind` leaves it alone.
  const ahead = v.ahead?.length ? [`  ahead of rollout ${v.behindRunId} (newer, not asked): ${off(v.ahead)}`] : [];
  const lines = (l: string[]) => l.map((x) => shown(x) + '\n').join('');
  return lines(head) + (v.nodes.length ? table(rows) : '  no nodes\n') + lines([...why, ...behind, ...ahead]);
}

const stepText = (step: number) => (step === 0 ? 'the canaries' : `batch ${step}`);
const signalValue = (signal: string, v: number | null) => (v === null ? 'no data' : signal === 'error-ratio' ? `${(v * 100).toFixed(v < 0.001 && v > 0 ? 3 : 2)} %` : `${v.toFixed(2)}/h`);
const cohortText = (signal: string, c: { nodes: number; value: number | null; sample: number }) =>
  `${signalValue(signal, c.value)} (${c.nodes} node${c.nodes === 1 ? '' : 's'}, ${c.sample} ${signal === 'error-ratio' ? 'req' : 'node-min'})`;

// The analysis's lines of a run's status (docs/design.md §19): the policy, the step it waits for, and
// each step's window and judgement with every signal's figures per cohort.
export function analysisLines(v: Pick<RunStatusView, 'analysis' | 'status'>): string[] {
  const a = v.analysis;
  if (!a) return [];
  if (a.mode === 'off') return ['  analysis off'];
  const t = a.thresholds;
  const lines = [`  analysis ${a.mode}, window ${seconds(a.windowMs)}; fails when canaries are worse by restart-rate ${t.restartRate}/h, liveness-failures ${t.livenessRate}/h, error-ratio ${(t.errorRatio * 100).toFixed(2)} %`];
  if (a.waiting) lines.push(`  waiting for the analysis of ${stepText(a.waiting.step)}: the window ends at ${when(a.waiting.until)}`);
  for (const s of a.steps) {
    if (s.verdict === null) {
      lines.push(`  analysis of ${stepText(s.step)}: window ${when(s.from)} to ${when(s.to)}, not judged yet${v.status === 'running' || v.status === 'paused' || v.status === 'waiting' ? ` (the window ends at ${when(s.to)})` : ''}`);
      continue;
    }
    lines.push(`  analysis of ${stepText(s.step)}: ${s.verdict} (${s.mode}: ${s.effect}) at ${when(s.judgedAt)}, window ${when(s.from)} to ${when(s.to)}${s.resumedAt ? `; resumed by ${s.resumedBy ?? '-'} at ${when(s.resumedAt)}` : ''}`);
    for (const g of s.signals) lines.push(`    ${g.signal} ${g.verdict}: canary ${cohortText(g.signal, g.canary)} vs baseline ${cohortText(g.signal, g.baseline)}; ${g.why}`);
  }
  return lines;
}

// The human form of a dry run (its --json document): what would be targeted, in which batches, when.
export function formatDryRun(d: DryRunView): string {
  const { run } = d;
  const c = d.counts;
  const lines = [
    `dry run: ${run.app} ${run.version}, nothing was written; selector ${shown(run.selector) || '(every node)'}`,
    `  targeted ${c.targeted}, not targeted ${c.notTargeted}, already current ${c.alreadyCurrent}${c.excluded ? `, excluded ${c.excluded}` : ''}; budget: ${run.maxFailures} failures, refusals up to ${d.refusedLimit} (--max-refused ${run.maxRefused}), fetch failures per batch ${run.maxFetchFailures}; bake ${seconds(run.bakeMs)}; windows ${describeWindows(run.windows, run.tz)}; analysis ${run.analysis?.mode ?? "off"}${run.analysis && run.analysis.mode !== "off" ? ` (window ${seconds(run.analysis.windowMs)})` : ""}`,
    `  canary seed ${run.canarySeed}: \`rollout start ... --seed ${run.canarySeed}\` follows this plan`,
  ];
  // Each node by its id and, as a person knows it, its hostname.
  const named = (id: string) => `${id} (${d.hostnames?.[id] || '-'})`;
  for (const n of d.nodes) if (n.state !== 'pending') lines.push(`  ${named(n.nodeId)}: ${stateText(n)}${n.reason ? ` (${n.reason})` : ''}`);
  for (const b of d.batches) lines.push(`  ${b.batch === 0 ? 'canaries' : `batch ${b.batch}`} at ${when(b.at)}${b.notAfter ? ` (window until ${when(b.notAfter)})` : ''}: ${b.nodes.map(named).join(', ')}`);
  lines.push(`  then: ${d.status}${d.endsAt ? ` at ${when(d.endsAt)} if every node confirms` : ''}${d.truncated ? ' (plan cut short: more steps than a dry run plays)' : ''}`);
  return lines.map((l) => shown(l) + '\n').join('');
}

const collect = (v: string, acc: string[]) => [...acc, v];

// The run policy flags of `rollout start` (and `target set`).
export function addRunFlags(c: Command): Command {
  return c
    .option('--select <selector>', 'only the nodes whose labels match (env=prod,tier!=db,region in (eu,us),!legacy)')
    .option('--canaries <n>', 'canaries chosen at random (seeded) among the targets, confirmed and baked before the first batch (default 1)')
    .option('--canary <nodeId>', 'a named canary (repeatable), before the random ones', collect, [] as string[])
    .option('--seed <n>', 'the seed of the random canary choice (default: a fresh one, recorded in the run)')
    .option('--batch <n|p%>', 'nodes per batch after the canaries: a count, or a percentage of the targets (default 1)')
    .option('--bake <duration>', 'how long after a batch\'s last confirmation before the next batch (default 5m; 0 allowed)')
    .option('--max-failures <n>', 'failed, reverted or timed-out nodes beyond the canaries tolerated (default 0)')
    .option('--max-refused <n|p%>', 'refusals tolerated before the run halts (default 50%)')
    .option('--max-fetch-failures <n|p%>', 'nodes of one batch that may fail to fetch the artifact (each also counts in --max-failures); more halts the run: the artifact cannot be fetched (default 20%)')
    .option('--verdict-timeout <duration>', 'how long each node has to answer (default 30m)')
    .option('--allow-retry-reverted', 'also send the version to nodes that reverted it before')
    .option('--window <spec>', "issue only inside this window, like 'Mon-Fri 02:00-05:00' (repeatable)", collect, [] as string[])
    .option('--tz <zone>', 'the IANA time zone of the windows (default UTC)')
    .option('--start-at <time>', 'issue nothing before this ISO 8601 time with its zone')
    .option('--analysis <mode>', 'judge each step against the nodes still on the old version: off, observe (record what it would do; the default), enforce (a fail halts, too little data pauses)')
    .option('--analysis-window <duration>', 'how long each step is watched before it is judged, from 2m to 1h (default 10m)')
    .option('--analysis-threshold <name=value>', 'how much worse than the baseline fails: restart-rate=0.5 (per node-hour), liveness-failures=1 (per node-hour), error-ratio=0.5% (repeatable)', collect, [] as string[])
    .option('--dry-run', 'print the plan the planner would follow, write nothing');
}

const isDryRun = (v: RunStatusView | DryRunView): v is DryRunView => (v as DryRunView).dryRun === true;

// `steward-control rollout start|status|stop|pause|resume|retry`
export function registerRollout(program: Command): void {
  const rollout = program.command('rollout').description('fleet rollouts: canaries, then batches, within a failure budget and windows');
  const print = (cmd: Command, v: RunStatusView | DryRunView): void => void (jsonOf(cmd) ? printJson(v) : process.stdout.write(isDryRun(v) ? formatDryRun(v) : formatRun(v)));

  addRunFlags(rollout.command('start <app> <version>').description('start a rollout of a catalog release to the selected nodes that run the app')).action(
    async (app: string, version: string, o: RunFlags, cmd: Command) => print(cmd, await invoke(cmd, (await ops()).rolloutStart, { app, version, ...o })),
  );
  addRunFlags(rollout.command('retry <app>').description("a new run of the app's last rollout over the nodes it did not confirm (--behind: of its last succeeded one, over the nodes behind it)"))
    .option('--behind', 'retry the nodes behind the last succeeded run instead')
    .action(async (app: string, o: RunFlags, cmd: Command) => print(cmd, await invoke(cmd, (await ops()).rolloutRetry, { app, ...o })));
  rollout
    .command('stop <app>')
    .description('stop the running rollout of the app (attempts already sent stay)')
    .action(async (app: string, _o: unknown, cmd: Command) => print(cmd, await invoke(cmd, (await ops()).rolloutStop, { app })));
  for (const [name, what] of [['pause', 'issue nothing new (issued attempts keep their timeouts, and their verdicts count)'], ['resume', 'issue again after a pause']] as const) {
    rollout
      .command(`${name} <app>`)
      .description(`${name} the running rollout of the app: ${what}`)
      .action(async (app: string, _o: unknown, cmd: Command) => {
        const o = await ops();
        print(cmd, await invoke(cmd, name === 'pause' ? o.rolloutPause : o.rolloutResume, { app }));
      });
  }
  rollout
    .command('status [app]')
    .description('the latest rollout of the app (or of every app)')
    .action(async (app: string | undefined, _o: unknown, cmd: Command) => {
      const out = await invoke(cmd, (await ops()).rolloutStatus, { app });
      if (jsonOf(cmd)) return printJson(out);
      process.stdout.write(out.runs.length ? out.runs.map(formatRun).join('\n') : 'no rollouts\n');
    });
  rollout
    .command('list [app]')
    .description('every rollout of the app (or of every app), newest first: status, times, halt reason')
    .action(async (app: string | undefined, _o: unknown, cmd: Command) => {
      const runs = await invokeAll<unknown, RunSummary>(cmd, (await ops()).rolloutList, { app });
      if (jsonOf(cmd)) return printJson({ runs });
      const rows = [['RUN', 'APP', 'VERSION', 'STATUS', 'STARTED', 'ENDED', 'SELECTOR', 'HALT']];
      for (const r of runs) {
        const status = `${r.status}${r.status === 'running' && r.paused ? ' (paused)' : ''}${r.retryOf !== null ? ` (retry of ${r.retryOf})` : ''}`;
        rows.push([String(r.id), r.app, r.version, status, when(r.startedAt), when(r.endedAt), r.selector || '(every node)', r.haltReason ? `${r.haltReason.code}: ${r.haltReason.message}` : '-']);
      }
      process.stdout.write(runs.length ? table(rows) : 'no rollouts\n');
    });
}
