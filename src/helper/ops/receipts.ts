import type { HostConfig } from '../../core/config-schema.js';
import { requireApp } from '../../host/config.js';
import type { Envelope } from '../../core/release-schemas.js';
import type { ReceiptStore } from '../receipts/receipt-store.js';

export interface ReceiptsResult {
  // The helper key's id; callers verify against helper.pub themselves.
  helperKeyId: string;
  // Sorted by seq.
  receipts: Envelope[];
}

// Lists the signed receipts of one app (which must be in the config), or of every app.
export async function listReceipts(store: Pick<ReceiptStore, 'keyId' | 'list'>, config: HostConfig, app?: string): Promise<ReceiptsResult> {
  if (app !== undefined) requireApp(config, app);
  const stored = await store.list(app);
  return { helperKeyId: store.keyId, receipts: stored.map((r) => r.envelope) };
}
