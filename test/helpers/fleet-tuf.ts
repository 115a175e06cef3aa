// A fleet on TUF for the end-to-end tests (docs/trust.md, docs/design.md §21): a real
// steward-control (SQLite) with an admin listener and an operator, the repository made by the
// operator's commands exactly as docs/trust.md gives them (`trust init` with three root keys, the
// signing ceremony, `trust delegate web` to two web keys, `release add ... --key w1 --key w2`,
// `trust export-root`), and real hosts (helper and agent) with no release key for web, enrolled
// with `--trust-root`, each heartbeating `tuf`.
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { appRelease, freePort } from '../fixtures/app-releases.js';
import { startAgentProcess, type AgentProcess } from './agent-process.js';
import { killApps } from './app-processes.js';
import { controlRuns } from './control-read.js';
import { controlCli, controlJson, startControlDaemon, waitUntil, type Daemon } from './fleet.js';
import { helperStatus } from './helper-status.js';
import { agentctl, makeHost, processApp, startHelper, type HelperProcess, type TestHost } from './host.js';
import { controlAt, writeKeyPair, type KeyFiles, type Run } from './trust-cli.js';

export interface TufHost {
  host: TestHost;
  helper: HelperProcess;
  agent: AgentProcess;
  nodeId: string;
}

export interface TufFleet {
  db: string;
  control: Daemon & { url: string };
  // The operator's CLI through --server with the token (exit 0 asserted), and the local one (--db, --json).
  op(...args: string[]): Promise<Run>;
  ctl(...args: string[]): Promise<any>;
  // `trust status --json`.
  status(): Promise<any>;
  keys: Record<'ra' | 'rb' | 'rc' | 'w1' | 'w2', KeyFiles>;
  rootFile: string;
  hosts: TufHost[];
  // `release add web <v>` with both web keys (a process app, probe none).
  addRelease(version: string): Promise<Run>;
  // The run of web started last, once it ended, as `rollout status` shows it.
  runEnded(): Promise<any>;
  // web's `current/highestActive` on each host.
  webOnHosts(): Promise<string[]>;
  // The node of `nodes --json` for each host.
  nodes(): Promise<any[]>;
  stop(): Promise<void>;
}

export async function startTufFleet(dir: string, o: { hosts?: number; releases?: string[]; controlArgs?: string[] } = {}): Promise<TufFleet> {
  const db = path.join(dir, 'control.db');
  const adminPort = await freePort();
  const control = await startControlDaemon(db, 0, 1, { args: ['--admin-listen', `127.0.0.1:${adminPort}`, ...(o.controlArgs ?? [])] });
  const hosts: TufHost[] = [];
  const stop = async () => {
    for (const h of hosts) {
      await h.agent.stop();
      await h.helper.stop();
      killApps(h.host, ['web']);
      h.host.cleanup();
    }
    await control.stop();
  };
  try {
    const admin = `http://127.0.0.1:${adminPort}`;
    const add = await controlCli(db, ['operator', 'add', 'ada', '--role', 'admin']);
    assert.equal(add.code, 0, add.stdout + add.stderr);
    const token = add.stdout.trim();
    const op = async (...args: string[]): Promise<Run> => {
      const r = await controlAt(admin, args, token);
      assert.equal(r.code, 0, `steward-control ${args.join(' ')}: ${r.stdout}${r.stderr}`);
      return r;
    };
    const ctl = (...args: string[]): Promise<any> => controlJson(db, args);
    const status = async () => (await op('trust', 'status', '--json')).json;

    // 1. Keys, init, the ceremony, the delegation, the releases, the exported root.
    const [ra, rb, rc, w1, w2] = ['root-alice', 'root-bob', 'root-carol', 'web-dana', 'web-erin'].map((n) => writeKeyPair(dir, n)) as [KeyFiles, KeyFiles, KeyFiles, KeyFiles, KeyFiles];
    await op('trust', 'init', '--keys', `${ra.pub},${rb.pub},${rc.pub}`, '--threshold', '2');
    assert.equal((await status()).pending.root.version, 1);
    const s1 = await op('trust', 'sign-root', '--key', ra.key);
    assert.match(s1.stdout, /1 of 2 signatures/);
    const s2 = await op('trust', 'sign-root', '--key', rb.key);
    assert.match(s2.stdout, /published root v1/);
    let s = await status();
    assert.deepEqual([s.root?.version, s.targets], [1, null], JSON.stringify(s));
    // The top-level targets v1 the publishing signature put pending (Bob signed it already): one
    // more round of the same command.
    const s3 = await op('trust', 'sign-root', '--key', ra.key);
    assert.match(s3.stdout, /published.*targets v1/, s3.stdout);
    s = await status();
    assert.deepEqual([s.root?.version, s.targets?.version, s.repository], [1, 1, true], JSON.stringify(s));
    await op('trust', 'delegate', 'web', '--keys', `${w1.pub},${w2.pub}`, '--threshold', '2');
    await op('trust', 'sign-root', '--key', ra.key);
    await op('trust', 'sign-root', '--key', rb.key);
    s = await status();
    assert.equal(s.targets.version, 2, JSON.stringify(s));
    assert.deepEqual(s.apps.map((x: { app: string; threshold: number }) => [x.app, x.threshold]), [['web', 2]]);
    const addRelease = async (v: string): Promise<Run> => {
      const file = path.join(dir, `web-${v}.tgz`);
      writeFileSync(file, appRelease('web', v, 0, { probe: 'none', stableMs: 300 }));
      const r = await op('release', 'add', 'web', v, '--file', file, '--base-url', control.url, '--key', w1.key, '--key', w2.key, '--json');
      assert.equal(r.json.trust?.role, 'app.web', r.stdout);
      return r;
    };
    for (const v of o.releases ?? []) await addRelease(v);
    const rootFile = path.join(dir, 'root.json');
    await op('trust', 'export-root', '--out', rootFile);
    assert.ok(existsSync(rootFile));

    // 2. Hosts with no release key for web, enrolled with the exported root.
    for (let i = 0; i < (o.hosts ?? 1); i++) {
      const host = makeHost({ apps: { web: processApp({ stopTimeoutMs: 1000 }) } });
      assert.equal(existsSync(path.join(host.paths.trustedKeysDir, 'web')), false, 'no release key for web on the host');
      const helper = await startHelper(host);
      const enrolled = await agentctl(host, ['enroll', '--control-plane', control.url, '--token', (await ctl('token', 'create')).token, '--trust-root', rootFile, '--json']);
      assert.equal(enrolled.code, 0, enrolled.stdout + enrolled.stderr);
      assert.deepEqual(enrolled.json.trust, { scheme: 'tuf', rootVersion: 1 });
      hosts.push({ host, helper, agent: startAgentProcess(host), nodeId: enrolled.json.nodeId });
    }
    const nodes = async () => {
      const all = (await ctl('nodes')).nodes;
      return hosts.map((h) => all.find((x: { nodeId: string }) => x.nodeId === h.nodeId));
    };
    await waitUntil('the nodes to heartbeat their trust as tuf, not stale', 60_000, async () => {
      const ns = await nodes();
      return ns.every((n) => n?.trust?.scheme === 'tuf' && n.trust.timestampVersion !== undefined && n.metadataStale === false && n.apps.length > 0) ? ns : undefined;
    });
    return {
      db,
      control,
      op,
      ctl,
      status,
      keys: { ra, rb, rc, w1, w2 },
      rootFile,
      hosts,
      addRelease,
      async runEnded() {
        await waitUntil('the run to end', 90_000, async () => {
          const [run] = await controlRuns(db, 'web');
          return run && run.status !== 'running' ? true : undefined;
        });
        return (await ctl('rollout', 'status', 'web')).runs[0];
      },
      async webOnHosts() {
        const out: string[] = [];
        for (const h of hosts) {
          const web = (await helperStatus(h.host.root)).apps.find((a: { name: string }) => a.name === 'web');
          out.push(`${web.current}/${web.highestActive}`);
        }
        return out;
      },
      nodes,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
