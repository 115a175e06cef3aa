import { test } from 'node:test';
import assert from 'node:assert/strict';
import { listReceipts } from '../../../src/helper/ops/receipts.js';
import type { HostConfig } from '../../../src/core/config-schema.js';
import type { StoredReceipt } from '../../../src/helper/receipts/receipt-store.js';

const config = { apps: { web: { runner: 'process' } } } as unknown as HostConfig;
const stored = (seq: number) => ({ envelope: { payload: `p${seq}`, sig: 's', keyId: '0123456789abcdef' }, payload: { seq } }) as unknown as StoredReceipt;

test('the receipts op answers the helper keyId and the envelopes in seq order', async () => {
  const asked: (string | undefined)[] = [];
  const store = { keyId: '0123456789abcdef', list: async (app?: string) => (asked.push(app), [stored(1), stored(2)]) };
  assert.deepEqual(await listReceipts(store, config, 'web'), { helperKeyId: '0123456789abcdef', receipts: [stored(1).envelope, stored(2).envelope] });
  await listReceipts(store, config);
  assert.deepEqual(asked, ['web', undefined]);
});

test('the receipts op refuses an app that is not in the host config', async () => {
  const store = { keyId: '0123456789abcdef', list: async () => [] };
  await assert.rejects(listReceipts(store, config, 'api'), { code: 'UNKNOWN_APP' });
});
