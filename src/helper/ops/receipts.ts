import type { HostConfig } from '../../core/config-schema.js';
import { StewardError } from '../../core/errors.js';
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
  if (app !== undefined && !config.apps[app]) throw new StewardError('UNKNOWN_APP', `app ${app} is not in the host config`);
  const stored = await store.list(app);
  return { helperKeyId: store.keyId, receipts: stored.map((r) => r.envelope) };
}
