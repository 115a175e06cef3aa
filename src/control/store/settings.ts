import type { StoreReader } from './store.js';

export const DEFAULT_HEARTBEAT_SECONDS = 30;

// The heartbeat interval nodes are told (serve's --heartbeat-seconds), default 30 s.
export async function readHeartbeatSeconds(tx: StoreReader): Promise<number> {
  const n = Number(await tx.settings.get('heartbeatSeconds'));
  return Number.isInteger(n) && n > 0 ? n : DEFAULT_HEARTBEAT_SECONDS;
}
