// A host whose steward-agent is an app the helper runs (the `process` runner, no systemd), for the
// tests of the agent's probe (docs/design.md §14): a real helper, a fake control plane the agent enrolls
// with, and signed agent releases made from this checkout's bundle (or by a test's own layout).
// As root, the helper, agentctl and so the agent run as `nobody`, who owns the whole host: a
// process app runs as a user other than root, and that user must reach helper.sock, which
// without a `steward` group only the helper's own user can.
import { chownSync, lstatSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { RELEASE_FILE_NAME } from '../../src/core/release-schemas.js';
import { AGENT_APP, layOutAgentTree, packTree } from '../../src/install/agent-release-pack.js';
import { agentctl, IS_ROOT, makeHost, makeReleaseKey, manifestFor, REPO, startHelper, type CliResult, type HelperProcess, type ReleaseKey, type RunAsIds, type TestHost } from './host.js';
import { FakeControlPlane } from './fake-control-plane.js';

// nobody:nogroup on Debian and Ubuntu.
const NOBODY: RunAsIds = { uid: 65534, gid: 65534 };

export interface AgentAppHost {
  host: TestHost;
  cp: FakeControlPlane;
  // The running helper (restartHelper replaces it).
  readonly helper: HelperProcess;
  key: ReleaseKey;
  // Whom the host's programs run as (undefined: this process's user).
  runAs: RunAsIds | undefined;
  agentctl(args: string[]): Promise<CliResult>;
  // Packs `tree` (an agent release tree) as `version`, signs it, and updates the agent to it.
  update(version: string, tree: string): Promise<CliResult>;
  // Lays out this checkout's agent as `version` in a fresh folder under scratch, with the
  // release file `health` (and `start`: this runner starts it) and the start command's
  // `extraArgs`; returns the tree.
  agentTree(version: string, opts?: { health?: Record<string, unknown>; extraArgs?: string[] }): Promise<string>;
  // SIGKILLs the helper and starts a new one, waiting until its start-up recovery is over.
  restartHelper(): Promise<void>;
  cleanup(): Promise<void>;
}

// The start command of an agent release tree on this host: node, the tree's launcher, the root.
export function agentStart(host: TestHost, extraArgs: string[] = []): { command: string[]; env: Record<string, string> } {
  return { command: [process.execPath, 'bin/steward-agent.js', '--root', host.root, ...extraArgs], env: { DEBUG: 'steward:*' } };
}

// Rewrites the release file of an agent tree for this host: name, version, `start`, `health`.
export function writeAgentReleaseFile(host: TestHost, tree: string, version: string, health: Record<string, unknown> | undefined, extraArgs: string[] = []): void {
  const rf = { name: AGENT_APP, version, start: agentStart(host, extraArgs), ...(health ? { health } : {}) };
  writeFileSync(path.join(tree, RELEASE_FILE_NAME), JSON.stringify(rf, null, 2) + '\n', { mode: 0o644 });
}

function chownTree(p: string, ids: RunAsIds): void {
  chownSync(p, ids.uid, ids.gid);
  if (!lstatSync(p).isDirectory()) return;
  for (const name of readdirSync(p)) chownTree(path.join(p, name), ids);
}

// A host with the agent app in its config, its helper running and enrolled with a fake control
// plane (nothing runs the agent yet: the first update installs it).
export async function makeAgentAppHost(): Promise<AgentAppHost> {
  const runAs = IS_ROOT ? NOBODY : undefined;
  const host = makeHost({ apps: { [AGENT_APP]: { runner: 'process', stopTimeoutMs: 5000 } } });
  const key = makeReleaseKey(host, [AGENT_APP]);
  const base = path.dirname(host.root);
  if (runAs) chownTree(base, runAs);
  const cp = new FakeControlPlane();
  await cp.listen();
  let helper: HelperProcess | null = null;
  try {
    helper = await startHelper(host, {}, { runAs });
    const run = (args: string[]) => agentctl(host, args, {}, undefined, { runAs });
    cp.tokens.add('agent-probe-token');
    const enrolled = await run(['enroll', '--control-plane', cp.url, '--token', 'agent-probe-token', '--json']);
    if (enrolled.code !== 0) throw new Error(`enroll failed: ${enrolled.stdout}${enrolled.stderr}`);
    let h = helper;
    let n = 0;
    return {
      host,
      cp,
      get helper() {
        return h;
      },
      key,
      runAs,
      agentctl: run,
      async agentTree(version, opts = {}) {
        const tree = path.join(host.scratch, `agent-tree-${version}-${++n}`);
        await layOutAgentTree(REPO, tree, version);
        writeAgentReleaseFile(host, tree, version, opts.health, opts.extraArgs);
        return tree;
      },
      async update(version, tree) {
        const tgz = path.join(host.scratch, `${AGENT_APP}-${version}-${++n}.tgz`);
        await packTree(tree, tgz);
        const bytes = readFileSync(tgz);
        const manifest = path.join(host.scratch, `${AGENT_APP}-${version}-${n}.manifest`);
        writeFileSync(manifest, JSON.stringify(key.sign(manifestFor(AGENT_APP, version, bytes))));
        if (runAs) {
          chownTree(tgz, runAs);
          chownTree(manifest, runAs);
        }
        return run(['update', AGENT_APP, version, '--file', tgz, '--manifest', manifest, '--json']);
      },
      async restartHelper() {
        await h.kill();
        h = await startHelper(host, {}, { runAs });
      },
      async cleanup() {
        await run(['stop', AGENT_APP]).catch(() => null);
        await h.stop();
        await cp.stop();
        host.cleanup();
      },
    };
  } catch (err) {
    await helper?.stop();
    await cp.stop();
    host.cleanup();
    throw err;
  }
}
