// The heartbeat's size limits (DESIGN §6), apart from heartbeat-schema.ts so that the agent's
// heartbeat path can use them without loading zod (issue 8, row 5).
export const MAX_HEARTBEAT_APPS = 256;
// DESIGN §6: at most 64 of the oldest pending receipts go in one heartbeat.
export const MAX_HEARTBEAT_RECEIPTS = 64;
