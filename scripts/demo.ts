// npm run demo: the whole loop in a temp folder, no root needed. A control plane on loopback
// (SQLite in the temp folder) and three hosts, each a steward-helper and a steward-agent in its
// own root prefix. The hosts enroll; a rollout of v1 and one of v2 confirm on all three; a
// rollout of a broken v3 is rolled back by its canary and halts before the other two are
// touched; an operator's manual rollback on one host is left alone by the control plane; and
// the receipts the control plane verified are printed as a timeline.
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
  say(`$ steward-control ${args.join(' ')}`);
  const r = await run('control', ['--db', db, ...args]);
  process.stdout.write(r.stdout.replace(/^/gm, '  ').replace(/ +$/, ''));
  if (r.code !== 0) throw new Error(`steward-control ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
}

interface RolloutStatus {
  version: string;
  status: string;
  haltReason?: { code: string; nodeId?: string; message: string } | null;
}

// Starts a rollout and waits for its end; returns the final status document.
async function rollout(db: string, version: string, extra: string[]): Promise<RolloutStatus> {
  await control(db, ['rollout', 'start', 'web', version, '--verdict-timeout', '60s', ...extra]);
  const final = await waitFor(`the rollout of web ${version} to end`, 120_000, async () => {
    const { runs } = await runJson<{ runs: RolloutStatus[] }>('control', ['--db', db, 'rollout', 'status', 'web']);
    const st = runs[0];
    return !st || st.version !== version || st.status === 'running' ? undefined : st;
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
    step('A control plane on loopback, its SQLite database in the temp folder');
    cp = startDaemon('steward-control', 'control', ['--db', db, 'serve', '--init', '--listen', '127.0.0.1:0', '--heartbeat-seconds', '1']);
    const url = await waitFor('steward-control to listen', 15_000, async () => {
      if (cp?.child.exitCode !== null) throw new Error(`steward-control exited: ${cp?.output()}`);
      return /listening on (\S+)/.exec(cp.output())?.[1];
    });
    say(`steward-control listening on ${url}, database ${db}`);

    step('A release key, and three releases of web in the catalog (v3 is broken: it exits at start)');
    await control(db, ['keys', 'create', '--out', path.join(cpDir, 'keys')]);
    const key = path.join(cpDir, 'keys/release.key');
    for (const [version, broken] of [['1.0.0', false], ['2.0.0', false], ['3.0.0', true]] as const) {
      const tgz = buildRelease(work, version, broken);
      await control(db, ['release', 'add', 'web', version, '--file', tgz, '--base-url', url, '--key', key]);
    }

    step('Three hosts: each a helper and an agent in its own root prefix, enrolled with a one-use token');
    for (const name of ['host-1', 'host-2', 'host-3']) {
      const host = makeFleetHost(base, name, url, path.join(cpDir, 'keys/release.pub'));
      hosts.push(host);
      await startHostHelper(host);
      const { token } = await runJson<{ token: string }>('control', ['--db', db, 'token', 'create', '--ttl', '10m']);
      const nodeId = await enrollHost(host, url, token);
      startHostAgent(host);
      say(`${name}: root ${host.root}, enrolled as node ${nodeId}`);
    }
    await waitFor('three nodes heartbeating', 30_000, async () => {
      const nodes = await runJson<{ nodes: Array<{ lastHeartbeatAt: number | null }> }>('control', ['--db', db, 'nodes']);
      return nodes.nodes.filter((n) => n.lastHeartbeatAt !== null).length === 3 ? true : undefined;
    });
    await control(db, ['nodes']);
    say(hosts.map((h) => `${h.name} = ${h.nodeId}`).join(', '));
    const [h1, h2, h3] = hosts as [FleetHost, FleetHost, FleetHost];

    step('Roll out v1, then v2: the canary first, then a batch of two');
    for (const version of ['1.0.0', '2.0.0']) {
      const r = await rollout(db, version, ['--canary', h1.nodeId as string, '--batch', '2']);
      if (r.status !== 'succeeded') throw new Error(`the rollout of ${version} ended ${r.status}`);
      for (const h of hosts) if ((await currentOf(h)) !== version) throw new Error(`${h.name} does not run ${version}`);
    }
    say(`all three hosts run web 2.0.0`);

    step('Roll out the broken v3: the canary rolls it back and the run halts');
    const r3 = await rollout(db, '3.0.0', ['--canary', h1.nodeId as string, '--batch', '2']);
    if (r3.status !== 'halted') throw new Error(`the rollout of 3.0.0 ended ${r3.status}, not halted`);
    for (const h of hosts) {
      const cur = await currentOf(h);
      say(`${h.name} runs web ${cur}`);
      if (cur !== '2.0.0') throw new Error(`${h.name} runs ${cur}, not 2.0.0`);
    }
    say(`host-2 and host-3 were never asked for 3.0.0; host-1 rolled it back and quarantined it`);

    step("An operator rolls host-3 back by hand; the control plane does not undo it");
    say(`$ agentctl --root ${h3.root} rollback web`);
    const rb = await run('agentctl', ['--root', h3.root, 'rollback', 'web']);
    process.stdout.write(rb.stdout.replace(/^/gm, '  ').replace(/ +$/, ''));
    if (rb.code !== 0) throw new Error(`the manual rollback exited ${rb.code}: ${rb.stderr}`);
    // Several heartbeats later host-3 still runs 1.0.0, and the control plane has its receipt.
    await waitFor('the rollback receipt to reach the control plane', 30_000, async () => {
      const { receipts } = await runJson<{ receipts: Array<{ nodeId: string; outcome: string; fromVersion: string | null; targetVersion: string | null }> }>('control', [
        '--db',
        db,
        'receipts',
      ]);
      return receipts.some((x) => x.nodeId === h3.nodeId && x.fromVersion === '2.0.0' && x.targetVersion === '1.0.0' && x.outcome === 'active') ? true : undefined;
    });
    await new Promise((r) => setTimeout(r, 4000));
    if ((await currentOf(h3)) !== '1.0.0') throw new Error('host-3 no longer runs 1.0.0');
    if ((await currentOf(h2)) !== '2.0.0') throw new Error('host-2 no longer runs 2.0.0');
    await control(db, ['nodes']);
    say(`${h3.name} (${h3.nodeId}) still runs 1.0.0 several heartbeats later: no rollout is running, and the manual rollback put a hold`);

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
