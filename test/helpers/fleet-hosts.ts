// Whole hosts for fleet tests: a root prefix with its config, the release key trusted for web,
// a real steward-helper and, once enrolled, a real steward-agent.
import { copyFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { agentctl, makeHost, processApp, startHelper, type HelperProcess, type TestHost } from './host.js';
import { killApps } from './app-processes.js';
import { startAgentProcess, type AgentProcess } from './agent-process.js';

export interface FleetHost {
  name: string;
  host: TestHost;
  helper: HelperProcess;
  agent: AgentProcess | null;
  nodeId: string;
  apps: string[];
}

// A host running `apps` (process apps), with `releasePub` trusted for each.
export async function makeFleetHost(name: string, apps: string[], releasePub: string): Promise<FleetHost> {
  const host = makeHost({ apps: Object.fromEntries(apps.map((a) => [a, processApp({ stopTimeoutMs: 1000 })])) });
  for (const app of apps) {
    const dir = path.join(host.paths.trustedKeysDir, app);
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    copyFileSync(releasePub, path.join(dir, 'release.pub'));
  }
  return { name, host, helper: await startHelper(host), agent: null, nodeId: '', apps };
}

// Enrolls the host with `token` and starts its agent.
export async function enrollAndStart(h: FleetHost, url: string, token: string): Promise<void> {
  const r = await agentctl(h.host, ['enroll', '--control-plane', url, '--token', token, '--json']);
  if (r.code !== 0) throw new Error(`${h.name}: enroll exited ${r.code}: ${r.stderr}${r.stdout}`);
  h.nodeId = r.json.nodeId;
  h.agent = startAgentProcess(h.host);
}

// The version of `app` that `current` names on the host.
export async function currentOn(h: FleetHost, app: string): Promise<string | null> {
  const r = await agentctl(h.host, ['status', app, '--json']);
  return r.json?.apps?.[0]?.current ?? null;
}

// Stops the agent, the helper and the apps, and removes the host.
export async function removeFleetHost(h: FleetHost): Promise<void> {
  await h.agent?.stop();
  await h.helper.stop();
  killApps(h.host, h.apps);
  h.host.cleanup();
}
