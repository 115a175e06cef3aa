import assert from 'node:assert/strict';
import { test } from 'node:test';
import { helperClient, type HelperClient } from '../../src/protocol/helper-client.js';
import { ALL_OPS, type OpName } from '../../src/protocol/ops.js';
import { requestSchemas } from '../../src/protocol/schemas.js';

// The least each op needs: an app, and for stage and update a version.
const FIELDS: Record<OpName, Record<string, unknown>> = {
  status: {},
  receipts: {},
  releases: { app: 'web' },
  stage: { app: 'web', version: '1.2.3', integrity: `sha512-${'A'.repeat(86)}==`, allowUnsigned: true, path: '/tmp/web.tgz' },
  update: { app: 'web', version: '1.2.3', noWait: true },
  rollback: { app: 'web', to: '1.2.2' },
  recover: { app: 'web' },
  start: { app: 'web' },
  stop: { app: 'web' },
  restart: { app: 'web' },
  prune: { app: 'web', keep: 2 },
  verify: { app: 'web' },
  'release-hold': { app: 'web' },
  hold: { app: 'web', reason: 'change freeze', forMs: 3_600_000 },
  'agent-confirm': { seq: 1, sentAt: 0 },
  'trust-refresh': { bundle: { v: 1, files: {} } },
  'trust-set-root': { upload: 10 },
};

const methodOf = (op: OpName) => op.replace(/-(\w)/g, (_m, c: string) => c.toUpperCase()) as keyof HelperClient;

test("the helper client has one method per op, and each sends a request its op's schema accepts", async () => {
  const sent: Array<Record<string, unknown>> = [];
  const client = helperClient(async (request) => {
    sent.push(request as Record<string, unknown>);
    return { echoed: (request as { op: string }).op };
  });
  assert.deepEqual(Object.keys(client).sort(), ALL_OPS.map(methodOf).sort());
  for (const op of ALL_OPS) {
    const method = client[methodOf(op)] as (fields: Record<string, unknown>) => Promise<unknown>;
    assert.deepEqual(await method(FIELDS[op]), { echoed: op }, `${op} resolves with the helper's result`);
    const request = sent.at(-1);
    assert.deepEqual(request, { v: 1, id: sent.length, op, ...FIELDS[op] });
    const parsed = requestSchemas[op].safeParse(request);
    assert.ok(parsed.success, `${op}: ${parsed.error?.message}`);
  }
});

test('a method without fields sends only the frame, and each request has the next id', async () => {
  const sent: unknown[] = [];
  const client = helperClient(async (request) => void sent.push(request));
  await client.status();
  await client.receipts();
  assert.deepEqual(sent, [
    { v: 1, id: 1, op: 'status' },
    { v: 1, id: 2, op: 'receipts' },
  ]);
});

test("the options of a call (upload, progress, timeout) reach the transport as they were given", async () => {
  const seen: unknown[] = [];
  const client = helperClient(async (_request, opts) => void seen.push(opts));
  const onProgress = () => {};
  await client.rollback({ app: 'web' }, { onProgress, timeoutMs: 5 });
  assert.deepEqual(seen, [{ onProgress, timeoutMs: 5 }]);
});
