// Hostile bodies on the admin API (docs/design.md §12), from an authenticated admin: what is not a JSON
// object, over the limit, or a broken upload frame is refused with BAD_REQUEST (413 when too
// large), changes nothing, and the server goes on answering.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_UPLOAD_HEAD_BYTES } from '../../src/control/admin/read-upload.js';
import { MAX_BODY_BYTES } from '../../src/core/control-paths.js';
import { addOperator, adminCall, type AdminRequest } from '../helpers/admin-client.js';
import { dumpStore, startControlInProcess, type Control } from '../helpers/control-harness.js';

let c: Control;
let admin = '';

before(async () => {
  c = await startControlInProcess({ admin: {} });
  admin = await addOperator(c.store, 'adam', 'admin');
});
after(() => c.close());

const CASES: Array<{ name: string; path: string; request: AdminRequest; status: number; message: RegExp }> = [
  { name: 'a body that is not JSON', path: '/v1/admin/token/create', request: { raw: Buffer.from('{"ttl": "1h"'), headers: { 'content-type': 'application/json' } }, status: 400, message: /not JSON/ },
  { name: 'a JSON array', path: '/v1/admin/token/create', request: { json: [{ ttl: '1h' }] }, status: 400, message: /not a JSON object/ },
  { name: 'JSON null', path: '/v1/admin/token/create', request: { json: null }, status: 400, message: /not a JSON object/ },
  { name: 'a body over the limit', path: '/v1/admin/token/create', request: { json: { ttl: '1h', pad: 'x'.repeat(MAX_BODY_BYTES) } }, status: 413, message: new RegExp(`over the limit of ${MAX_BODY_BYTES} bytes`) },
  { name: 'a body over the limit without a Content-Length', path: '/v1/admin/token/create', request: { json: { ttl: '1h', pad: 'x'.repeat(MAX_BODY_BYTES) }, headers: { 'transfer-encoding': 'chunked' } }, status: 413, message: /over the limit/ },
  { name: "an upload whose head never ends", path: '/v1/admin/release/add', request: { raw: Buffer.alloc(MAX_UPLOAD_HEAD_BYTES + 10, 0x41) }, status: 413, message: /head-too-large/ },
  { name: 'an upload with no newline at all', path: '/v1/admin/release/add', request: { raw: Buffer.from('{"app":"web"}') }, status: 400, message: /no-head/ },
  { name: 'an upload whose head is not JSON', path: '/v1/admin/release/add', request: { raw: Buffer.from('not json\ntarball bytes') }, status: 400, message: /not JSON/ },
  { name: 'a query parameter given twice', path: '/v1/admin/nodes?limit=1&limit=500', request: { method: 'GET' }, status: 400, message: /given twice/ },
];

for (const k of CASES) {
  test(`${k.name} is refused ${k.status} BAD_REQUEST and changes nothing`, async () => {
    const before = dumpStore(c.store);
    const r = await adminCall(c.server.url, k.path, { token: admin, ...k.request, headers: { ...k.request.headers } });
    assert.deepEqual([r.status, r.body?.error?.code], [k.status, 'BAD_REQUEST'], JSON.stringify(r.body).slice(0, 300));
    assert.match(r.body.error.message, k.message);
    assert.deepEqual(dumpStore(c.store), before);
    assert.equal((await adminCall(c.server.url, '/v1/admin/nodes', { token: admin })).status, 200, 'the server still answers');
  });
}

test('a wrong input inside a well-formed body is a USAGE error, as the CLI would report it', async () => {
  const r = await adminCall(c.server.url, '/v1/admin/token/create', { token: admin, json: { ttl: ['1h'] } });
  assert.deepEqual([r.status, r.body.error.code], [400, 'USAGE']);
});
