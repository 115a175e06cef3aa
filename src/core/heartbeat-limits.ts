// The heartbeat's size limits (docs/design.md §6), apart from heartbeat-schema.ts so that the agent's
// heartbeat path can use them without loading zod (issue 8, row 5).
export const MAX_HEARTBEAT_APPS = 256;
// docs/design.md §6: at most 64 of the oldest pending receipts go in one heartbeat.
export const MAX_HEARTBEAT_RECEIPTS = 64;
// docs/design.md §12: the receipts of one heartbeat are at most 512 KiB JSON-encoded (a receipt with a log
// tail is up to ~14 KiB), so a backlog never pushes a heartbeat past the 1 MiB body limit.
export const MAX_HEARTBEAT_RECEIPT_BYTES = 512 * 1024;
// The highest heartbeat seq the agent adopts from a control plane's 409 or keeps in seq.json.
// Why 2^50 and not the safe integers' end: a seq adopted there must still be incremented, and
// 2^53 - 2^50 (7.9e15) more heartbeats take longer than any host lives, at one a second; no
// honest node reaches 2^50 either (35 million years at one heartbeat a second).
export const MAX_ADOPTED_SEQ = 2 ** 50;
// The latest time a JavaScript Date holds (8.64e15 ms, the year 275760): a control plane's
// serverTime beyond it is no time at all (`new Date(t).toISOString()` throws).
export const MAX_DATE_MS = 8.64e15;
