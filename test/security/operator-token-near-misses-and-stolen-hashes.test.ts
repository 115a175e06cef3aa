// Guessing an operator token (docs/design.md §12): the token is hashed (sha256) and the hash compared
// with every operator's by crypto.timingSafeEqual, so a near miss tells nothing, a copy of the
// stored hashes is no token, and a damaged stored hash fails closed. Behaviour only: a timing
// claim would be a benchmark.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { findOperatorByToken, hashSecret, mintOperatorToken } from '../../src/control/operators/operator-tokens.js';
import type { OperatorRow } from '../../src/control/store/store.js';
import { addOperator, adminCall } from '../helpers/admin-client.js';
import { dumpStore, startControlInProcess, type Control } from '../helpers/control-harness.js';

let c: Control;
let token = '';

before(async () => {
  c = await startControlInProcess({ admin: {} });
  await addOperator(c.store, 'anna', 'viewer');
  token = await addOperator(c.store, 'vera', 'viewer');
  await addOperator(c.store, 'zoe', 'viewer');
});
after(() => c.close());

const swap = (ch: string) => (ch === 'A' ? 'B' : 'A');

test('near misses of a real token are all 401: last or first character changed, a prefix, an extension, another case', async () => {
  const misses = [
    token.slice(0, -1) + swap(token.at(-1) as string),
    token.slice(0, 3) + swap(token[3] as string) + token.slice(4),
    token.slice(0, -1),
    token + 'A',
    token.slice(0, 3) + token.slice(3).replace(/[a-z]/g, (x) => x.toUpperCase()).replace(/[A-Z]/, (x) => x.toLowerCase()),
    ` ${token}`,
  ].filter((m) => m !== token);
  for (const m of misses) {
    const r = await adminCall(c.server.url, '/v1/admin/nodes', { token: m });
    assert.equal(r.status, 401, JSON.stringify(m));
  }
  assert.equal((await adminCall(c.server.url, '/v1/admin/nodes', { token })).status, 200);
});

test('the hash kept in the database is not a token: sent as one it is 401', async () => {
  const stored = (dumpStore(c.store).operators as Array<{ name: string; tokenHash: string }>).find((o) => o.name === 'vera')?.tokenHash;
  assert.equal(stored, hashSecret(token), 'only the sha256 is stored');
  for (const t of [stored as string, `so_${(stored as string).slice(0, 32)}`]) assert.equal((await adminCall(c.server.url, '/v1/admin/nodes', { token: t })).status, 401);
});

test('every operator is found by its own token, wherever it stands in the list, and a damaged stored hash matches nothing', () => {
  const tokens = [mintOperatorToken(), mintOperatorToken(), mintOperatorToken()];
  const rows: OperatorRow[] = tokens.map((t, i) => ({ name: `op${i}`, role: 'viewer', tokenHash: hashSecret(t), createdAt: 0, rotatedAt: null }));
  for (const [i, t] of tokens.entries()) assert.equal(findOperatorByToken(rows, t)?.name, `op${i}`);
  const damaged = rows.map((r, i) => (i === 1 ? { ...r, tokenHash: r.tokenHash.slice(0, 20) } : r));
  assert.equal(findOperatorByToken(damaged, tokens[1] as string), null, 'a short stored hash is compared without throwing, and fails');
  assert.equal(findOperatorByToken(damaged, tokens[2] as string)?.name, 'op2');
  assert.equal(findOperatorByToken(rows, 'not-a-token'), null);
});
