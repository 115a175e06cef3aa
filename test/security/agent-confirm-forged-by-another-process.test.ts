import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { StewardError } from '../../src/core/errors.js';
import { callHelper } from '../../src/protocol/client.js';
import { freePort } from '../fixtures/app-releases.js';
import { makeAgentAppHost } from '../helpers/agent-app-host.js';

// The attack: while the helper probes a new steward-agent that cannot heartbeat, another process
// (a member of group steward, a process of the agent's own user, or the agent the update
// replaced, if it lived on) sends the `agent-confirm` the new agent never will, with a seq and
// a sentAt as good as a real one's, to make the broken release active. The helper takes a
// confirm only from the process it started for the attempt (SO_PEERCRED, then that pid's start
// time): every forged one is refused and the release is rolled back.

const HEALTH = { confirm: 'heartbeat', timeoutMs: 6000, stableMs: 500 };

// A process that sends agent-confirm over `sock` every 100 ms until `ms` pass, printing each
// answer line: a process of its own, with its own pid.
const FORGER = `
const net = require('node:net');
const [sock, seq, ms] = process.argv.slice(1);
const end = Date.now() + Number(ms);
const once = () => new Promise((resolve) => {
  const c = net.connect(sock);
  let buf = '';
  c.on('data', (d) => (buf += d));
  c.on('error', () => resolve());
  c.on('close', () => { const line = buf.split('\\n').find((l) => l.includes('"ok"')); if (line) process.stdout.write(line + '\\n'); resolve(); });
  c.write(JSON.stringify({ v: 1, id: 1, op: 'agent-confirm', seq: Number(seq), sentAt: Date.now() }) + '\\n');
});
(async () => { while (Date.now() < end) { await once(); await new Promise((r) => setTimeout(r, 100)); } })();
`;

test('a confirm of a new agent forged by another process, of any user, is refused and the release is rolled back', { timeout: 180_000 }, async (t) => {
  const a = await makeAgentAppHost();
  t.after(() => a.cleanup());
  const good = await a.update('1.0.0', await a.agentTree('1.0.0', { health: HEALTH }));
  assert.equal(good.json?.outcome, 'active', good.stdout + good.stderr);

  const tree = await a.agentTree('1.0.1', { health: HEALTH, extraArgs: ['--config', 'wrong-control-plane.json'] });
  writeFileSync(path.join(tree, 'wrong-control-plane.json'), JSON.stringify({ apps: { 'steward-agent': { runner: 'process' } }, controlPlane: { url: `http://127.0.0.1:${await freePort()}` } }));
  // A seq the control plane really answered: the forgery is as good as a real agent's claim.
  const seq = Math.max(...a.cp.heartbeats.filter((h) => h.status === 200).map((h) => h.payload.seq));
  const forgeFor = 20_000;

  // A process of the agent's own user (as root: nobody, as the helper and the agent run).
  const child = spawn(process.execPath, ['-e', FORGER, a.host.paths.helperSock, String(seq), String(forgeFor)], { stdio: ['ignore', 'pipe', 'inherit'], ...(a.runAs ?? {}) });
  let childOut = '';
  child.stdout.on('data', (d) => (childOut += d));
  const childDone = new Promise((resolve) => child.once('exit', resolve));
  // And this test's own process (root, when root: any member of the group).
  const ours: string[] = [];
  let forging = true;
  const mine = (async () => {
    while (forging) {
      try {
        await callHelper(a.host.paths.helperSock, { v: 1, id: 1, op: 'agent-confirm', seq, sentAt: Date.now() });
        ours.push('ok');
      } catch (err) {
        ours.push(err instanceof StewardError ? `${err.code}: ${err.message}` : String(err));
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  })();

  const r = await a.update('1.0.1', tree);
  forging = false;
  await mine;
  child.kill();
  await childDone;

  assert.equal(r.json?.outcome, 'rolled-back', r.stdout + r.stderr);
  assert.equal(r.json.reason.code, 'AGENT_UNCONFIRMED', r.json.reason.message);
  const theirs = childOut.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));
  assert.ok(theirs.length > 0, 'the forging child was answered');
  assert.ok(theirs.every((l) => l.ok === false && l.error.code === 'FORBIDDEN'), JSON.stringify(theirs.filter((l) => l.ok !== false || l.error.code !== 'FORBIDDEN')));
  assert.ok(ours.length > 0 && ours.every((l) => l.startsWith('FORBIDDEN: ')), ours.join('\n'));
  // Some were sent while the probe waited: refused for who sent them, not for coming too late.
  const whileProbing = /the confirm came from pid \d+, not from the steward-agent process attempt \S+ started/;
  assert.ok(theirs.some((l) => whileProbing.test(l.error.message)), `the child's forgeries all came outside the probe:\n${childOut}`);
  assert.ok(ours.some((l) => whileProbing.test(l)), `this process's forgeries all came outside the probe:\n${ours.join('\n')}`);
  assert.equal((await a.agentctl(['status', 'steward-agent', '--json'])).json.apps[0].current, '1.0.0');
});
