import { test } from 'node:test';
import assert from 'node:assert/strict';
import { faultsFromEnv, IO_FAULT_OPS, IO_FAULT_POINTS, noFaults } from '../../src/platform/faults.js';

// The I/O half of the fault seam (the SIGKILL half is proved inert in kill-points.test.ts).

const io = (faults: ReturnType<typeof faultsFromEnv>, point: (typeof IO_FAULT_POINTS)[number], op: (typeof IO_FAULT_OPS)[number]) => {
  try {
    faults.io(point, op);
    return null;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code ?? 'no code';
  }
};

test('with an empty root prefix the seam is inert whatever STEWARD_FAULTS says', () => {
  const spec = IO_FAULT_POINTS.flatMap((p) => IO_FAULT_OPS.flatMap((o) => [`enospc:${o}:${p}`, `eio:${o}:${p}`])).join(',');
  const faults = faultsFromEnv({ STEWARD_FAULTS: spec + ',enospc:verdict' }, '');
  assert.equal(faults, noFaults, 'no prefix: the inert seam itself');
  for (const p of IO_FAULT_POINTS) for (const o of IO_FAULT_OPS) assert.equal(io(faults, p, o), null, `${o}:${p} stays inert`);
  assert.doesNotThrow(() => faults.write('verdict'));
  // The control: the same spec with a prefix does fail, so the checks above can fail.
  const armed = faultsFromEnv({ STEWARD_FAULTS: IO_FAULT_POINTS.flatMap((p) => IO_FAULT_OPS.map((o) => `enospc:${o}:${p}`)).join(',') }, '/x');
  for (const p of IO_FAULT_POINTS) for (const o of IO_FAULT_OPS) assert.equal(io(armed, p, o), 'ENOSPC', `${o}:${p} armed`);
});

test('without STEWARD_FAULTS the seam is inert', () => {
  assert.equal(faultsFromEnv({}, '/x'), noFaults);
  assert.equal(faultsFromEnv({ STEWARD_FAULTS: '' }, '/x'), noFaults);
});

test('an I/O fault fails only its op at its point: every time, or the Nth time with @N', () => {
  const faults = faultsFromEnv({ STEWARD_FAULTS: 'eio:fsync:journal,enospc:rename:receipt@2' }, '/x');
  assert.equal(io(faults, 'journal', 'fsync'), 'EIO');
  assert.equal(io(faults, 'journal', 'fsync'), 'EIO', 'every time without @N');
  assert.equal(io(faults, 'journal', 'write'), null, 'another op of the same point');
  assert.equal(io(faults, 'state', 'fsync'), null, 'the same op of another point');
  assert.equal(io(faults, 'receipt', 'rename'), null, '@2: not the first');
  assert.equal(io(faults, 'receipt', 'rename'), 'ENOSPC', '@2: the second');
  assert.equal(io(faults, 'receipt', 'rename'), null, '@2: not the third');
});

test('the older enospc:<write point> form still fails its verdict write', () => {
  const faults = faultsFromEnv({ STEWARD_FAULTS: 'enospc:verdict' }, '/x');
  assert.throws(() => faults.write('verdict'), { code: 'ENOSPC' });
  assert.doesNotThrow(() => faults.write('rollback-verdict'));
  assert.equal(io(faults, 'journal', 'write'), null, 'it arms no I/O fault');
});
