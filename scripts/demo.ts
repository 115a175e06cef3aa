// npm run demo: the whole loop in a temp folder, no root needed. A control plane on loopback
// (SQLite in the temp folder) and five hosts, each a steward-helper and a steward-agent in its
// own root prefix, enrolled with labelled tokens: one env=staging, four env=prod, one of which
// does not run the app. A rollout to staging; one to prod with two canaries, a 50 % batch and a
// failure budget of 0, paused and resumed on the way (the host without the app is never asked);
// a broken release halted by its canary on staging before prod is touched; an operator's manual
// rollback left alone; and the receipts the control plane verified, as a timeline. The fleet trusts
// releases by TUF (docs/trust.md): root and web keys made in the temp folder, the signing
// ceremony through the admin API, each release signed by both web keys, and the hosts enrolled
// with the exported root and no release key of their own.
import { chmodSync, mkdirSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { removeTree } from '../src/platform/fs-atomic.js';
import { currentOf, enrollHost, makeFleetHost, startHostAgent, startHostHelper, stopHost, type FleetHost } from './demo/fleet-host.js';
import { run, runJson, startDaemon, waitFor, type Daemon } from './demo/processes.js';
import { buildRelease } from './demo/releases.js';

const bold = (s: string) => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s);
const say = (s: string) => process.stdout.write(s + '\n');
function step(title: string): void {
  say(`\n${bold('== ' + title)}`);
}

// Runs steward-control and shows the command and its human output, indented.
async function control(db: string, args: string[]): Promise<void> {
  say(`$ steward-control ${args.map((a) => (/[\s()%]/.test(a) ? `'${a}'` : a)).join(' ')}`);
  const r = await run('control', ['--db', db, ...args]);
  process.stdout.write(r.stdout.replace(/^/gm, '  ').replace(/ +$/, ''));
  if (r.code !== 0) throw new Error(`steward-control ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
}

interface RolloutStatus {
  version: string;
  status: string;
  counts: { confirmed: number; pending: number };
  nodes: Array<{ nodeId: string; state: string }>;
  haltReason?: { code: string; nodeId?: string; message: string } | null;
}

const status = async (db: string): Promise<RolloutStatus> => (await runJson<{ runs: RolloutStatus[] }>('control', ['--db', db, 'rollout', 'status', 'web'])).runs[0]!;

// Waits for the run of `version` to end and shows it; returns its final status.
async function untilEnded(db: string, version: string): Promise<RolloutStatus> {
  const final = await waitFor(`the rollout of web ${version} to end`, 120_000, async () => {
    const st = await status(db);
    return st.version === version && ['succeeded', 'halted', 'stopped'].includes(st.status) ? st : undefined;
  });
  await control(db, ['rollout', 'status', 'web']);
  return final;
}

async function main(): Promise<number> {
  const base = mkdtempSync(path.join(os.tmpdir(), 'steward-fleet-demo-'));
  chmodSync(base, 0o755);
  const work = path.join(base, 'work');
  const cpDir = path.join(base, 'control');
  mkdirSync(work, { mode: 0o755 });
  mkdirSync(cpDir, { mode: 0o700 });
  const db = path.join(cpDir, 'control.db');
  const hosts: FleetHost[] = [];
  let cp: Daemon | null = null;
  try {
    step('A control plane on loopback, its SQLite database in the temp folder (serve --init creates it)');
    cp = startDaemon('steward-control', 'control', ['--db', db, 'serve', '--init', '--listen', '127.0.0.1:0', '--admin-listen', '127.0.0.1:0', '--heartbeat-seconds', '1']);
    const [url, adminUrl] = await waitFor('steward-control to listen', 15_000, async () => {
      if (cp?.child.exitCode !== null) throw new Error(`steward-control exited: ${cp?.output()}`);
      const u = /listening on (\S+)/.exec(cp.output())?.[1];
      const a = /admin API on (\S+)/.exec(cp.output())?.[1];
      return u && a ? ([u, a] as const) : undefined;
    });
    say(`steward-control listening on ${url} (admin API on ${adminUrl}), database ${db}`);

    step('TUF trust (docs/trust.md): three root keys and two web keys, which their holders keep offline (here, the temp folder)');
    const keysDir = path.join(base, 'offline-keys');
    mkdirSync(keysDir, { mode: 0o700 });
    const names = ['root-alice', 'root-bob', 'root-carol', 'web-dana', 'web-erin'] as const;
    for (const n of names) await runJson('control', ['keys', 'create', '--out', keysDir, '--name', n]);
    const pub = (n: (typeof names)[number]) => path.join(keysDir, `${n}.pub`);
    const key = (n: (typeof names)[number]) => path.join(keysDir, `${n}.key`);
    say(`keys: ${names.map((n) => `${n}.key/.pub`).join(', ')} in ${keysDir}`);
    const token = (await run('control', ['--db', db, 'operator', 'add', 'demo-admin', '--role', 'admin'])).stdout.trim();
    // The trust commands run through the admin API, where the keys are: each prints one line here.
    const remote = async (args: string[], show: RegExp): Promise<void> => {
      say(`$ steward-control --server ${adminUrl} ${args.map((a) => a.replaceAll(keysDir + '/', '')).join(' ')}`);
      const r = await run('control', ['--server', adminUrl, ...args], { STEWARD_CONTROL_TOKEN: token });
      if (r.code !== 0) throw new Error(`steward-control ${args.join(' ')} exited ${r.code}: ${r.stderr}${r.stdout}`);
      const lines = r.stdout.split('\n').filter((l) => show.test(l));
      say(`  ${(lines.length > 0 ? lines : [r.stdout.trim().split('\n').at(-1) ?? '']).map((l) => l.trim().replace(/ \(signed: [^)]*\)/, '').replace(/; may sign: .*$/, '')).join('; ')}`);
    };
    await remote(['trust', 'init', '--keys', `${pub('root-alice')},${pub('root-bob')},${pub('root-carol')}`, '--threshold', '2'], /published once/);
    for (const holder of ['root-alice', 'root-bob', 'root-alice'] as const) await remote(['trust', 'sign-root', '--key', key(holder)], /^\s*(published|put|\d+ of \d+ signatures)/);
    await remote(['trust', 'delegate', 'web', '--keys', `${pub('web-dana')},${pub('web-erin')}`, '--threshold', '2'], /targets v2|pending/);
    for (const holder of ['root-alice', 'root-bob'] as const) await remote(['trust', 'sign-root', '--key', key(holder)], /^\s*(published|\d+ of \d+ signatures)/);
    const fleetRoot = path.join(cpDir, 'fleet-root.json');
    await remote(['trust', 'export-root', '--out', fleetRoot], /^wrote/);

    step('Four releases of web, each signed by both web keys (v3 is broken: it exits at start; v2.1 exits a few seconds after)');
    for (const [version, broken] of [['1.0.0', false], ['2.0.0', false], ['2.1.0', 'late'], ['3.0.0', true]] as const) {
      const tgz = buildRelease(work, version, broken);
      await remote(['release', 'add', 'web', version, '--file', tgz, '--base-url', url, '--key', key('web-dana'), '--key', key('web-erin')], /^added|app\.web/);
    }

    step('Five hosts, each a helper and an agent in its own root, enrolled with a one-use token that labels it and the fleet\'s TUF root (no release key on the hosts)');
    const fleet: Array<[string, string, boolean]> = [['staging-1', 'staging', true], ['prod-1', 'prod', true], ['prod-2', 'prod', true], ['prod-3', 'prod', true], ['prod-cache', 'prod', false]];
    for (const [name, env, web] of fleet) {
      const host = makeFleetHost(base, name, env, url, null, web);
      hosts.push(host);
      await startHostHelper(host);
      const { token } = await runJson<{ token: string }>('control', ['--db', db, 'token', 'create', '--ttl', '10m', '--label', `env=${env}`]);
      const nodeId = await enrollHost(host, url, token, fleetRoot);
      startHostAgent(host);
      say(`${name}: root ${host.root}, enrolled as node ${nodeId} with env=${env}${web ? '' : ' (it runs cache, not web)'}`);
    }
    await waitFor('five nodes heartbeating, on TUF', 30_000, async () => {
      const nodes = await runJson<{ nodes: Array<{ apps: unknown[]; trust: { scheme: string } | null; metadataStale: boolean }> }>('control', ['--db', db, 'nodes']);
      return nodes.nodes.filter((n) => n.apps.length > 0 && n.trust?.scheme === 'tuf' && !n.metadataStale).length === 5 ? true : undefined;
    });
    await control(db, ['nodes']);
    say('each node\'s heartbeats report trust tuf (root v1), its metadata fresh (`nodes --json`: trust, metadataStale)');
    const [staging, , , , cache] = hosts as [FleetHost, FleetHost, FleetHost, FleetHost, FleetHost];
    const prod = hosts.filter((h) => h.env === 'prod' && h !== cache);

    step('Roll web 1.0.0 out to staging only');
    await control(db, ['rollout', 'start', 'web', '1.0.0', '--select', 'env=staging', '--bake', '0', '--verdict-timeout', '60s']);
    if ((await untilEnded(db, '1.0.0')).status !== 'succeeded') throw new Error('the staging rollout did not succeed');
    for (const h of hosts) say(`${h.name} runs web ${(await currentOf(h)) ?? '-'}`);

    step('Then to prod: two canaries, a 50 % batch, a failure budget of 0; paused as soon as it starts');
    await control(db, ['rollout', 'start', 'web', '1.0.0', '--dry-run', '--select', 'env=prod', '--canaries', '2', '--batch', '50%', '--max-failures', '0', '--bake', '2s', '--seed', '7']);
    await control(db, ['rollout', 'start', 'web', '1.0.0', '--select', 'env=prod', '--canaries', '2', '--batch', '50%', '--max-failures', '0', '--bake', '2s', '--seed', '7', '--verdict-timeout', '60s']);
    await control(db, ['rollout', 'pause', 'web']);
    // The canaries were issued before the pause: they finish; nothing new goes out while paused.
    await waitFor('the two canaries to confirm', 60_000, async () => ((await status(db)).counts.confirmed === 2 ? true : undefined));
    await new Promise((r) => setTimeout(r, 3000));
    const paused = await status(db);
    if (paused.status !== 'paused' || paused.counts.pending !== 1) throw new Error(`the paused run shows ${paused.status} with ${paused.counts.pending} pending`);
    await control(db, ['rollout', 'status', 'web']);
    say('paused: the canaries confirmed and baked, the batch waits; the host without web is not-targeted');
    await control(db, ['rollout', 'resume', 'web']);
    if ((await untilEnded(db, '1.0.0')).status !== 'succeeded') throw new Error('the prod rollout did not succeed');
    for (const h of prod) if ((await currentOf(h)) !== '1.0.0') throw new Error(`${h.name} does not run 1.0.0`);
    say(`every prod host that runs web is on 1.0.0; ${cache.name} was never asked`);

    step('The broken v3 to staging: its canary rolls it back and the run halts; prod is never touched');
    await control(db, ['rollout', 'start', 'web', '3.0.0', '--select', 'env=staging', '--bake', '0', '--verdict-timeout', '60s']);
    const r3 = await untilEnded(db, '3.0.0');
    if (r3.status !== 'halted') throw new Error(`the rollout of 3.0.0 ended ${r3.status}, not halted`);
    for (const h of [staging, ...prod]) {
      const cur = await currentOf(h);
      if (cur !== '1.0.0') throw new Error(`${h.name} runs ${cur}, not 1.0.0`);
    }
    say(`${staging.name} rolled 3.0.0 back and quarantined it; every host still runs web 1.0.0`);
    // The signed receipt carried the failed version's last log lines to the control plane.
    const { receipts: back } = await runJson<{ receipts: Array<{ outcome: string; targetVersion: string | null; logTail: string | null }> }>('control', ['--db', db, 'receipts', '--app', 'web']);
    const tail = back.find((x) => x.outcome === 'rolled-back' && x.targetVersion === '3.0.0')?.logTail ?? '';
    if (!tail.includes('cannot read its settings')) throw new Error(`the rollback's receipt carries no log lines of 3.0.0: ${JSON.stringify(tail)}`);
    say('why, in its own words: the rollback\'s receipt carries the last lines 3.0.0 wrote');
    await control(db, ['receipts', '--app', 'web', '--select', 'env=staging', '--logs']);

    step('v2.1 to staging: it passes its check, then keeps exiting; the host rolls it back inside its watch window (the run\'s bake) and the run halts');
    await control(db, ['rollout', 'start', 'web', '2.1.0', '--select', 'env=staging', '--bake', '30s', '--verdict-timeout', '60s']);
    const r21 = await untilEnded(db, '2.1.0');
    if (r21.status !== 'halted') throw new Error(`the rollout of 2.1.0 ended ${r21.status}, not halted`);
    if ((await currentOf(staging)) !== '1.0.0') throw new Error(`${staging.name} does not run 1.0.0 after the rollback of 2.1.0`);
    say(`${staging.name} confirmed 2.1.0, then heard it exit twice within its window (its release allows one exit) and rolled it back: UNHEALTHY_AFTER_ACTIVATION, the canary's revert`);

    step('v2 to prod, then an operator rolls prod-3 back by hand; the control plane does not undo it');
    await control(db, ['rollout', 'start', 'web', '2.0.0', '--select', 'env=prod', '--canaries', '0', '--batch', '100%', '--bake', '0', '--verdict-timeout', '60s']);
    if ((await untilEnded(db, '2.0.0')).status !== 'succeeded') throw new Error('the rollout of 2.0.0 did not succeed');
    const p3 = prod[2] as FleetHost;
    say(`$ agentctl --root ${p3.root} rollback web`);
    const rb = await run('agentctl', ['--root', p3.root, 'rollback', 'web']);
    process.stdout.write(rb.stdout.replace(/^/gm, '  ').replace(/ +$/, ''));
    if (rb.code !== 0) throw new Error(`the manual rollback exited ${rb.code}: ${rb.stderr}`);
    await waitFor('the rollback receipt to reach the control plane', 30_000, async () => {
      const { receipts } = await runJson<{ receipts: Array<{ nodeId: string; outcome: string; fromVersion: string | null; targetVersion: string | null }> }>('control', ['--db', db, 'receipts']);
      return receipts.some((x) => x.nodeId === p3.nodeId && x.fromVersion === '2.0.0' && x.targetVersion === '1.0.0' && x.outcome === 'active') ? true : undefined;
    });
    await new Promise((r) => setTimeout(r, 3000));
    if ((await currentOf(p3)) !== '1.0.0') throw new Error(`${p3.name} no longer runs 1.0.0`);
    await control(db, ['rollout', 'status', 'web']);
    say(`${p3.name} still runs 1.0.0 several heartbeats later: it is listed behind the last succeeded run (\`rollout retry --behind\` would ask it), and the manual rollback put a hold`);

    step('A target keeps prod on 2.0.0: a host enrolled now converges with no command, and each node behind says why');
    await control(db, ['target', 'set', 'prod-web', '--app', 'web', '--version', '2.0.0', '--select', 'env=prod', '--canaries', '0', '--batch', '100%', '--bake', '0', '--verdict-timeout', '60s']);
    const late = makeFleetHost(base, 'prod-4', 'prod', url, null, true);
    hosts.push(late);
    await startHostHelper(late);
    const { token: lateToken } = await runJson<{ token: string }>('control', ['--db', db, 'token', 'create', '--ttl', '10m', '--label', 'env=prod']);
    late.nodeId = await enrollHost(late, url, lateToken, fleetRoot);
    startHostAgent(late);
    say(`prod-4: enrolled as node ${late.nodeId} with env=prod after the target was set; no rollout is started for it`);
    await waitFor('prod-4 to run web 2.0.0', 90_000, async () => ((await currentOf(late)) === '2.0.0' ? true : undefined));
    interface TargetNode { nodeId: string; state: string; reason: { reason: string } | null }
    const behind = await waitFor('the target to show who is behind', 30_000, async () => {
      const t = await runJson<{ nodes: TargetNode[] }>('control', ['--db', db, 'target', 'status', 'prod-web']);
      const b = t.nodes.filter((n) => n.reason !== null);
      return b.length === 2 ? b : undefined;
    });
    await control(db, ['target', 'status', 'prod-web']);
    const why = Object.fromEntries(behind.map((n) => [n.nodeId, n.reason?.reason]));
    if (why[p3.nodeId ?? ''] !== 'held' || why[cache.nodeId ?? ''] !== 'app-not-reported') throw new Error(`the nodes behind the target say ${JSON.stringify(why)}`);
    say(`prod-4 converged by itself; ${p3.name} is behind because its operator holds it, ${cache.name} because it runs no web: one reason each`);

    step('The timeline: every receipt as the control plane verified it');
    await control(db, ['receipts']);

    step('Clean up');
    for (const h of hosts) await stopHost(h);
    await cp.stop();
    cp = null;
    say('agents, helpers, apps and the control plane stopped; temp folder removed');
    return 0;
  } catch (err) {
    for (const d of [cp, ...hosts.flatMap((h) => [h.helper, h.agent])]) {
      if (d) process.stderr.write(`\n--- ${d.name} output (last 3000 characters) ---\n${d.output().slice(-3000)}\n`);
    }
    throw err;
  } finally {
    for (const h of hosts) await stopHost(h).catch(() => undefined);
    await cp?.stop();
    // Release trees are read-only; removeTree opens them first when not root.
    await removeTree(base);
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`demo failed: ${(err as Error).message}\n`);
    process.exit(1);
  },
);
