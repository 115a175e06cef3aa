// One host of the demo fleet: a root prefix with its host config (app `web`, or only another
// app), the release key trusted for web, a steward-helper and, once enrolled, a steward-agent.
import { chmodSync, copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { run, runJson, startDaemon, waitFor, type Daemon } from './processes.js';

const isRoot = process.getuid?.() === 0;

export interface FleetHost {
  name: string;
  env: string;
  root: string;
  nodeId: string | null;
  helper: Daemon | null;
  agent: Daemon | null;
}

// Lays out a host under `base/<name>`: config naming the control plane, and the release key
// trusted for web unless `releasePub` is null (a host that trusts releases by the fleet's TUF root
// given at enrolment). Without `web`, its only app is `cache` (a host the rollouts of web must
// leave alone).
export function makeFleetHost(base: string, name: string, env: string, controlUrl: string, releasePub: string | null, web = true): FleetHost {
  const root = path.join(base, name);
  mkdirSync(path.join(root, 'etc/steward'), { recursive: true, mode: 0o755 });
  chmodSync(root, 0o755);
  if (releasePub !== null) {
    const trusted = path.join(root, 'etc/steward/trusted-keys/web');
    mkdirSync(trusted, { recursive: true, mode: 0o755 });
    copyFileSync(releasePub, path.join(trusted, 'release.pub'));
  }
  const app = { runner: 'process', keepReleases: 3, ...(isRoot ? { user: 'nobody', group: 'nogroup' } : {}) };
  writeFileSync(path.join(root, 'etc/steward/steward.json'), JSON.stringify({ apps: web ? { web: app } : { cache: app }, controlPlane: { url: controlUrl } }, null, 2));
  return { name, env, root, nodeId: null, helper: null, agent: null };
}

// Starts the host's helper and waits until its start (recovery, first pass) is over.
export async function startHostHelper(host: FleetHost): Promise<void> {
  host.helper = startDaemon(`${host.name} helper`, 'helper', ['--root', host.root]);
  await waitFor(`${host.name}'s helper`, 15_000, async () => {
    if (host.helper?.child.exitCode !== null) throw new Error(`${host.name}'s helper exited: ${host.helper?.output()}`);
    const r = await run('agentctl', ['--root', host.root, 'status', '--json']);
    return r.code === 0 && JSON.parse(r.stdout).recovering === false ? true : undefined;
  });
}

// Enrolls the host with a one-use token, as `agentctl enroll` does at install time; with
// `trustRoot`, the fleet's exported TUF root (`--trust-root`), which the host trusts from then on.
export async function enrollHost(host: FleetHost, controlUrl: string, token: string, trustRoot?: string): Promise<string> {
  const answer = await runJson<{ nodeId: string }>('agentctl', ['--root', host.root, 'enroll', '--control-plane', controlUrl, '--token', token, ...(trustRoot ? ['--trust-root', trustRoot] : [])]);
  host.nodeId = answer.nodeId;
  return answer.nodeId;
}

// Starts the host's agent (heartbeats, relays receipts, converges).
export function startHostAgent(host: FleetHost): void {
  host.agent = startDaemon(`${host.name} agent`, 'agent', ['--root', host.root], { DEBUG: 'steward:agent*' });
}

// The version `current` points at on this host, from agentctl status.
export async function currentOf(host: FleetHost): Promise<string | null> {
  const st = await runJson<{ apps: Array<{ name: string; current: string | null }> }>('agentctl', ['--root', host.root, 'status']);
  return st.apps.find((a) => a.name === 'web')?.current ?? null;
}

// Stops the agent and the helper, then the app (it outlives the helper by design).
export async function stopHost(host: FleetHost): Promise<void> {
  await host.agent?.stop();
  await host.helper?.stop();
  try {
    const record = JSON.parse(readFileSync(path.join(host.root, 'var/lib/steward/supervisor/web.json'), 'utf8'));
    if (record.process?.pid) process.kill(-record.process.pid, 'SIGKILL');
  } catch {
    // no app ran on this host
  }
}
