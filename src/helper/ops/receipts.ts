import type { HostConfig } from '../../core/config-schema.js';
import { requireApp } from '../../host/config.js';
import type { ReceiptsResult } from '../../protocol/answers.js';
import type { ReceiptStore } from '../receipts/receipt-store.js';

// Lists the signed receipts of one app (which must be in the config), or of every app.
export async function listReceipts(store: Pick<ReceiptStore, 'keyId' | 'list'>, config: HostConfig, app?: string): Promise<ReceiptsResult> {
  if (app !== undefined) requireApp(config, app);
  const stored = await store.list(app);
  return { helperKeyId: store.keyId, receipts: stored.map((r) => r.envelope) };
}
