// Convergence and windows (docs/design.md §11): the agent hands the helper no desired entry past its
// notAfter, and hands the others on with it; an expired entry is not recorded as acted on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ActedStore } from '../../src/agent/acted-store.js';
import { convergeDesired } from '../../src/agent/convergence.js';
import type { DesiredEntry } from '../../src/core/control-api.js';

const NOW = 1_800_000_000_000;
const manifest = { payload: 'e30=', sig: 'AAAA', keyId: '0123456789abcdef' };
const entry = (attemptId: string, notAfter?: number): DesiredEntry => ({ app: 'web', version: '2.0.0', attemptId, manifest, ...(notAfter === undefined ? {} : { notAfter }) });

test('an entry at or past its notAfter is not handed to the helper nor recorded; the others are handed on with their notAfter', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-converge-'));
  try {
    const acted = await ActedStore.open(path.join(dir, 'acted.json'));
    const handed: DesiredEntry[] = [];
    const results = await convergeDesired([entry('late', NOW - 1), entry('edge', NOW), entry('open', NOW + 1), entry('plain')], {
      helper: { update: async (e) => (handed.push(e), { attemptId: e.attemptId, app: e.app, accepted: true }) },
      acted,
      clock: { now: () => NOW },
      log: () => {},
    });
    assert.deepEqual(results.map((r) => [r.attemptId, r.result]), [['late', 'expired'], ['edge', 'expired'], ['open', 'accepted'], ['plain', 'accepted']]);
    assert.deepEqual(handed.map((e) => [e.attemptId, e.notAfter]), [['open', NOW + 1], ['plain', undefined]]);
    assert.deepEqual([acted.has('late'), acted.has('edge'), acted.has('open')], [false, false, true]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// A target's revert (docs/design.md §18): a `rollback` entry goes to the helper as its rollback to
// `previous` under the entry's attemptId, never as an update; an agent seam without rollback
// refuses it (acted on, so the control plane's attempt ends by its timeout, not by a retry loop).
test('a rollback entry is handed to the helper as a rollback, not an update', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-converge-'));
  try {
    const acted = await ActedStore.open(path.join(dir, 'acted.json'));
    const updates: string[] = [];
    const rollbacks: string[] = [];
    const results = await convergeDesired([{ ...entry('back'), version: '1.0.0', rollback: true }, entry('up')], {
      helper: {
        update: async (e) => (updates.push(e.attemptId), { attemptId: e.attemptId, app: e.app, accepted: true }),
        rollback: async (e) => (rollbacks.push(e.attemptId), { attemptId: e.attemptId, app: e.app, accepted: true }),
      },
      acted,
      clock: { now: () => NOW },
      log: () => {},
    });
    assert.deepEqual(results.map((r) => [r.attemptId, r.result]), [['back', 'accepted'], ['up', 'accepted']]);
    assert.deepEqual([rollbacks, updates], [['back'], ['up']]);
    const without = await convergeDesired([{ ...entry('back-2'), rollback: true }], { helper: { update: async () => assert.fail('never an update') }, acted, clock: { now: () => NOW }, log: () => {} });
    assert.deepEqual(without.map((r) => [r.attemptId, r.result]), [['back-2', 'refused']]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
