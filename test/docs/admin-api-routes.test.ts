// docs/admin-api.md lists every admin route with its method, role and command, as the
// operations table has them (docs/design.md §12: documented in docs/), and no route that is not one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { methodOf, OPERATIONS, routeOf } from '../../src/control/operations/operations.js';
import { REPO } from '../helpers/host.js';
import { TRUST_ROUTES } from '../../src/control/admin/trust-routes.js';

const doc = readFileSync(path.join(REPO, 'docs', 'admin-api.md'), 'utf8');

test('docs/admin-api.md has a row for every admin route, with its method, role and command', () => {
  for (const op of OPERATIONS) {
    const row = `| \`${methodOf(op)}\` | \`${routeOf(op)}\` | ${op.role} | \`${op.command}\` |`;
    assert.ok(doc.includes(row), `docs/admin-api.md lacks the row ${row}`);
  }
});

test('docs/admin-api.md names no route that does not exist', () => {
  const routes = new Set(OPERATIONS.map(routeOf));
  const named = [...doc.matchAll(/\| `(?:GET|POST)` \| `(\/v1\/admin\/[^`]+)` \|/g)].map((m) => m[1] as string);
  assert.deepEqual(named.filter((r) => !routes.has(r)), []);
  assert.equal(named.length, OPERATIONS.length);
});

test("docs/admin-api.md has a row for every trust route (docs/design.md §21.2), with its method and role, and none that does not exist", () => {
  for (const r of TRUST_ROUTES) {
    const row = `| ${r.method} | \`${r.path.replace('|', '\\|')}\` | ${r.role} |`;
    assert.ok(doc.includes(row), `docs/admin-api.md lacks the row ${row}`);
  }
  const named = [...doc.matchAll(/^\| (?:GET|POST|PUT) \| `(\/v1\/admin\/trust[^`]*)` \|/gm)].map((m) => (m[1] as string).replace('\\|', '|'));
  assert.deepEqual(named.sort(), TRUST_ROUTES.map((r) => r.path).sort());
});
