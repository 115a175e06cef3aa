import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Outbox } from '../../src/agent/outbox.js';
import type { Envelope } from '../../src/core/release-schemas.js';
import { DOMAINS, signEnvelope } from '../../src/platform/keys.js';
import { REPO } from '../helpers/host.js';
import { explore, formatViolations, recordOps, snapshotRoot, spawnTraced, stateWorkDir, waitExit } from './explorer.js';
import { crashCap, crashSeed, requireStrace } from './settings.js';

const OUTBOX = 'var/lib/steward-agent/outbox.json';

// Issue 7, item 1, the agent's outbox write: the real Outbox takes receipts and removes
// acknowledged ones under strace; in every state a power cut could leave, the outbox opens,
// highestSeq never went down, and every receipt up to highestSeq that the control plane did not
// acknowledge is still pending (one below highestSeq but gone would never be taken again).
test('every crash state of the agent outbox keeps each unacknowledged receipt', async (t) => {
  if (!requireStrace(t)) return;
  const base = mkdtempSync(path.join(os.tmpdir(), 'steward-crash-outbox-'));
  t.after(() => rmSync(base, { recursive: true, force: true }));
  chmodSync(base, 0o755);
  const root = path.join(base, 'root');
  mkdirSync(path.join(root, path.dirname(OUTBOX)), { recursive: true, mode: 0o700 });
  const file = path.join(root, OUTBOX);

  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const now = 1_700_000_000_000;
  const r = (seq: number): Envelope =>
    signEnvelope(DOMAINS.receipt, { v: 1, nodeId: 'n1', app: 'web', attemptId: `a-${seq}`, seq, fromVersion: '1.0.0', targetVersion: '2.0.0', integrity: null, outcome: 'active', startedAt: now, updatedAt: now + seq }, privateKey);
  const receipts = Array.from({ length: 8 }, (_, i) => r(i + 1));

  // Before the run: receipts 1-3 pending.
  const first = await Outbox.open(file);
  await first.take(publicKey, receipts.slice(0, 3));
  const before = { highestSeq: first.highestSeq, pending: [...first.pendingSeqs] };

  // The traced run: take 1-6, ack 1-2, take 1-8, ack 3-4 and 6.
  const acked = new Set([1, 2, 3, 4, 6]);
  const planFile = path.join(base, 'plan.json');
  const publicPem = publicKey.export({ format: 'pem', type: 'spki' }).toString();
  writeFileSync(planFile, JSON.stringify({ publicPem, steps: [{ take: receipts.slice(0, 6) }, { ack: [1, 2] }, { take: receipts }, { ack: [3, 4, 6] }] }));
  const snapshot = await snapshotRoot(root);
  const traceFile = path.join(base, 'outbox.strace');
  const child = spawnTraced([process.execPath, path.join(REPO, 'dist/test/crash/outbox-writer.js'), file, planFile], traceFile);
  await waitExit(child);
  assert.equal(child.exitCode, 0, 'the traced outbox writer succeeded');
  const rec = recordOps(traceFile, root, snapshot);

  const work = await stateWorkDir(base);
  t.after(() => rmSync(work, { recursive: true, force: true }));
  const x = await explore(
    'agent outbox',
    rec,
    work,
    async (stateRoot) => {
      const bad: string[] = [];
      let outbox: Outbox;
      try {
        outbox = await Outbox.open(path.join(stateRoot, OUTBOX));
      } catch (err) {
        return [`the outbox does not open: ${(err as Error).message}`];
      }
      if (outbox.highestSeq < before.highestSeq) bad.push(`highestSeq went down: ${before.highestSeq} -> ${outbox.highestSeq}`);
      const pending = new Set(outbox.pendingSeqs);
      for (let seq = 1; seq <= outbox.highestSeq; seq++) {
        if (!acked.has(seq) && !pending.has(seq)) bad.push(`receipt seq ${seq} is neither pending nor acknowledged, and below highestSeq ${outbox.highestSeq}`);
      }
      return bad;
    },
    { cap: crashCap(), seed: crashSeed() },
  );
  assert.ok(x.checked > 0);
  assert.equal(x.violations.length, 0, formatViolations(x));
});
