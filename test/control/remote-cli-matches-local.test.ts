// The remote CLI (docs/design.md §12): one list of steward-control commands run twice, on the server
// host's database (--db) and through the admin API (--server with STEWARD_CONTROL_TOKEN), each
// on a fresh control plane with one enrolled node. Every command, error cases included, must
// print the same stdout and stderr (ids, secrets, times and signatures aside) and exit the same.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { keyIdOf } from '../../src/platform/keys.js';
import { FakeNode } from '../helpers/control-harness.js';
import { CONTROL_BIN, startServeProcess, type ServeProcess } from '../helpers/serve-process.js';

const BIN = CONTROL_BIN;
let dir = '';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

interface Side {
  name: 'local' | 'remote';
  db: string;
  // How a command reaches the store: --db FILE, or --server URL with the token in the environment.
  args: string[];
  env: Record<string, string>;
  serve?: ServeProcess;
  fleetUrl: string;
  node?: FakeNode;
  // Values a command printed that later commands name (a token id, a node id).
  saved: Record<string, string>;
}

const sides: Side[] = [];

function run(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: { ...process.env, DEBUG: '', STEWARD_CONTROL_DB: '', STEWARD_CONTROL_URL: '', STEWARD_CONTROL_TOKEN: '', ...env } }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

// Stands for what differs between two control planes: secrets, ids, times, signatures.
function normalize(text: string, side: Side): string {
  let t = text;
  for (const [k, v] of Object.entries(side.saved)) t = t.split(v).join(`<${k}>`);
  return t
    .replace(/so_[A-Za-z0-9_-]{32}/g, '<operator-token>')
    .replace(/\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z\b/g, '<time>')
    .replace(/\b1\d{12}\b/g, '<ms>')
    .replace(/[A-Za-z0-9+/_-]{40,}={0,2}/g, (m) => (m.startsWith('sha512-') ? m : '<blob>'))
    .replace(/\br\d+-[0-9a-f]{16}\b/g, '<attempt>')
    .replace(/"heartbeatAgeMs": \d+/g, '"heartbeatAgeMs": <age>')
    .replace(/"clockSkewMs": -?\d+/g, '"clockSkewMs": <skew>')
    // A table pads a column to its widest cell: a skew or an age of another length moves the
    // spaces after it, so those go with it.
    .replace(/ [+-]\d+(ms|\.\ds|m\d\ds|h\d\dm) +/g, ' <skew> ')
    .replace(/\b\d+(ms|s|m|h|d) ago\b +/g, '<age> ')
    .replace(/\b\d+(ms|s|m|h|d) ago\b/g, '<age>')
    .replace(/local:[\w.=-]+/g, '<actor>')
    .replace(/\badam\b/g, '<actor>');
}

interface Step {
  // The command; `{node}` and `{token}` stand for the side's saved values.
  args: string[];
  // Keeps a value of the JSON output for later steps.
  save?: (json: any, side: Side) => void;
  // Runs after the command on each side (a node heartbeats).
  then?: (side: Side) => Promise<void>;
  // Parses stdout as JSON and rewrites what cannot match (the audit's who and where).
  json?: (json: any) => unknown;
}

const file = (name: string) => path.join(dir, name);

const STEPS: Step[] = [
  { args: ['operator', 'list'] },
  { args: ['release', 'add', 'web', '1.0.0', '--file', '{tgz1}', '--key', '{key}', '--base-url', 'https://cp.example'] },
  { args: ['release', 'add', 'web', '1.1.0', '--file', '{tgz2}', '--key', '{key}', '--base-url', 'https://cp.example', '--json'] },
  { args: ['release', 'add', 'web', '1.1.0', '--file', '{tgz1}', '--key', '{key}', '--base-url', 'https://cp.example'] },
  { args: ['release', 'add', 'web', '1.1.0', '--file', '{tgz1}', '--key', '{key}', '--base-url', 'https://cp.example', '--json'] },
  { args: ['release', 'add', 'web', '1.2.0', '--file', '{tgz3}', '--key', '{other}', '--base-url', 'https://cp.example', '--json'] },
  { args: ['release', 'list'] },
  { args: ['release', 'list', 'web', '--json'] },
  { args: ['keys', 'list'] },
  { args: ['keys', 'allow', 'api', '--key', '{otherPub}', '--json'] },
  { args: ['keys', 'list', '--json'] },
  { args: ['token', 'create', '--label', 'env=prod', '--ttl', '1h', '--json'], save: (j, s) => ((s.saved.token = j.token), (s.saved.tokenId = j.id)), then: enrollNode },
  { args: ['token', 'create', '--ttl', 'soon'] },
  { args: ['token', 'list'] },
  { args: ['token', 'revoke', '{tokenId}', '--json'] },
  { args: ['token', 'revoke', 'no-such-token'] },
  { args: ['nodes'] },
  { args: ['nodes', '--json'] },
  { args: ['nodes', '--select', 'env in (prod'] },
  { args: ['nodes', 'label', '{node}', 'tier=web', '--json'] },
  { args: ['nodes', 'label', '{node}', 'Not A Label'] },
  { args: ['nodes', '--select', 'tier=web'] },
  { args: ['rollout', 'start', 'web', '1.1.0', '--dry-run', '--canaries', '0', '--batch', '100%', '--seed', '7'] },
  { args: ['rollout', 'start', 'web', '1.1.0', '--canaries', '0', '--batch', '100%', '--bake', '0', '--seed', '7', '--json'] },
  { args: ['rollout', 'start', 'web', '1.1.0', '--json'] },
  { args: ['rollout', 'pause', 'web'] },
  { args: ['rollout', 'resume', 'web', '--json'] },
  { args: ['rollout', 'status', 'web'], then: answerActive },
  { args: ['rollout', 'status', 'web', '--json'] },
  { args: ['rollout', 'pause', 'api', '--json'] },
  { args: ['rollout', 'retry', 'web'] },
  { args: ['receipts'] },
  { args: ['receipts', '--json'] },
  { args: ['release', 'remove', 'web', '1.0.0', '--json'] },
  { args: ['release', 'remove', 'web', '9.9.9'] },
  { args: ['operator', 'add', 'temp', '--role', 'viewer', '--json'] },
  { args: ['operator', 'add', 'temp', '--role', 'viewer'] },
  { args: ['operator', 'add', 'other', '--role', 'root'] },
  { args: ['operator', 'rotate', 'temp'] },
  { args: ['operator', 'list', '--json'] },
  { args: ['operator', 'remove', 'temp'] },
  { args: ['operator', 'remove', 'temp', '--json'] },
  { args: ['nodes', 'remove', '{node}', '--json'] },
  { args: ['nodes', '--json'] },
  { args: ['hook', 'add', 'pager', '--url', 'http://127.0.0.1:9/h', '--events', 'run.halted,target.behind', '--json'], json: (j) => ({ ...j, secret: typeof j.secret, createdAt: typeof j.createdAt, createdBy: null }) },
  { args: ['hook', 'add', 'pager', '--url', 'http://127.0.0.1:9/h', '--events', 'run.halted'] },
  { args: ['hook', 'add', 'bad', '--url', 'http://hooks.example.com/h', '--events', 'run.halted', '--json'] },
  { args: ['hook', 'add', 'bad', '--url', 'https://hooks.example.com/h', '--events', 'run.exploded'] },
  { args: ['hook', 'list', '--json'], json: (j) => ({ hooks: j.hooks.map((h: Record<string, unknown>) => ({ ...h, createdAt: typeof h.createdAt, createdBy: null })) }) },
  { args: ['hook', 'remove', 'pager', '--json'] },
  { args: ['hook', 'remove', 'pager'] },
  { args: ['audit', '--since', 'yesterday'] },
  { args: ['audit', '--since', '1h', '--json'], json: (j) => ({ entries: j.entries.map((e: Record<string, unknown>) => ({ ...e, id: null, source: null })) }) },
];

async function enrollNode(side: Side): Promise<void> {
  const node = new FakeNode({ clock: { now: () => Date.now() }, server: { url: side.fleetUrl }, token: () => side.saved.token as string }, 'web-1');
  await node.enroll();
  node.setCurrent('web', '1.0.0');
  const hb = await node.heartbeat();
  assert.equal(hb.status, 200, JSON.stringify(hb.body));
  side.node = node;
  side.saved.node = node.nodeId;
  side.saved.helperKey = keyIdOf(node.helper.publicKey);
}

// The node takes what the run asks of it and answers `active`, as a helper would.
async function answerActive(side: Side): Promise<void> {
  for (let i = 0; i < 50; i++) {
    if ((await side.node!.answer('active')).length > 0) return runEnded(side);
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`${side.name}: the run never asked the node for web 1.1.0`);
}

// The receipt ends the run on the control plane's next pass, not at once: the next step compares
// the run's status on both sides, so both wait until it has ended.
async function runEnded(side: Side): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const r = await run([...side.args, 'rollout', 'status', 'web', '--json'], side.env);
    if (r.code === 0 && (JSON.parse(r.stdout) as { runs: Array<{ endedAt: number | null }> }).runs.every((x) => x.endedAt !== null)) return;
    await new Promise((res) => setTimeout(res, 100));
  }
  assert.fail(`${side.name}: the run of web 1.1.0 never ended after its node answered active`);
}

before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'steward-remote-cli-'));
  writeFileSync(file('web-1.0.0.tgz'), 'web 1.0.0');
  writeFileSync(file('web-1.1.0.tgz'), 'web 1.1.0');
  writeFileSync(file('web-1.2.0.tgz'), 'web 1.2.0');
  for (const k of ['release', 'other']) assert.equal((await run(['keys', 'create', '--out', dir, '--name', k])).code, 0);
  for (const name of ['local', 'remote'] as const) {
    const db = file(`${name}.db`);
    assert.equal((await run(['--db', db, 'init'])).code, 0);
    const add = await run(['--db', db, 'operator', 'add', 'adam', '--role', 'admin', '--json']);
    assert.equal(add.code, 0, add.stderr);
    const s = await startServeProcess(db, name === 'remote' ? ['--admin-listen', '127.0.0.1:0'] : []);
    const side: Side = { name, db, serve: s, fleetUrl: s.urls.listening, saved: { dir: path.dirname(db), db: path.basename(db) }, args: name === 'local' ? ['--db', db] : ['--server', s.urls.admin as string], env: name === 'local' ? {} : { STEWARD_CONTROL_TOKEN: JSON.parse(add.stdout).token } };
    sides.push(side);
  }
});

after(async () => {
  for (const s of sides) await s.serve?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const PLACES: Record<string, string> = { '{tgz1}': 'web-1.0.0.tgz', '{tgz2}': 'web-1.1.0.tgz', '{tgz3}': 'web-1.2.0.tgz', '{key}': 'release.key', '{other}': 'other.key', '{otherPub}': 'other.pub' };

function argsFor(step: Step, side: Side): string[] {
  return step.args.map((a) => (PLACES[a] ? file(PLACES[a]) : a.replace(/\{(\w+)\}/g, (m, k: string) => side.saved[k] ?? m)));
}

test('every command prints the same and exits the same on the database and through the admin API', async () => {
  const differences: string[] = [];
  for (const step of STEPS) {
    const runs = await Promise.all(sides.map((s) => run([...s.args, ...argsFor(step, s)], s.env)));
    const shown = runs.map((r, i) => {
      const side = sides[i] as Side;
      if (step.save && r.code === 0) step.save(JSON.parse(r.stdout), side);
      const stdout = step.json && r.code === 0 ? JSON.stringify(step.json(JSON.parse(r.stdout)), null, 2) : r.stdout;
      return { code: r.code, stdout: normalize(stdout, side), stderr: normalize(r.stderr, side) };
    });
    if (step.then) for (const s of sides) await step.then(s);
    const label = step.args.join(' ');
    try {
      assert.deepEqual(shown[1], shown[0]);
    } catch (err) {
      differences.push(`${label}:\n${(err as Error).message}`);
    }
  }
  assert.deepEqual(differences, []);
});

test('through the admin API a missing or wrong token exits 3 UNAUTHENTICATED and a role too low 3 FORBIDDEN, as a refusal', async () => {
  const remote = sides[1] as Side;
  const none = await run([...remote.args, 'nodes', '--json'], {});
  assert.deepEqual([none.code, JSON.parse(none.stdout).error.code], [3, 'UNAUTHENTICATED']);
  const wrong = await run([...remote.args, 'nodes', '--json'], { STEWARD_CONTROL_TOKEN: 'so_' + 'E'.repeat(32) });
  assert.deepEqual([wrong.code, JSON.parse(wrong.stdout).error.code], [3, 'UNAUTHENTICATED']);
  const viewer = await run([...remote.args, 'operator', 'add', 'vic', '--role', 'viewer', '--json'], remote.env);
  const low = await run([...remote.args, 'token', 'create', '--json'], { STEWARD_CONTROL_TOKEN: JSON.parse(viewer.stdout).token });
  assert.deepEqual([low.code, JSON.parse(low.stdout).error.code], [3, 'FORBIDDEN']);
  assert.match(JSON.parse(low.stdout).error.message, /vic \(viewer\) may not run `token create`: it needs the operator role/);
});
