// What the control plane said it accepts (docs/design.md §16), as the agent tells the helper:
// /var/lib/steward-agent/accepts.json, written by the agent after each heartbeat answer that
// changed it, read by the helper when it signs a receipt. A helper signs a receipt payload version
// above 1 only when this file lists it: a control plane that never said so gets v1.
import path from 'node:path';
import * as z from './zod-mini.js';
import type { HostPaths } from './paths.js';
import { intSchema, versionSchema } from './names.js';
import { RECEIPT_VERSIONS } from './receipt-schema.js';

export const ACCEPTS_SCHEMA_VERSION = 1;

// The receipt versions a control plane may list: positive integers, a few (a newer one than this
// steward knows is kept in the list and simply never chosen).
export const receiptVersionListSchema = z.array(intSchema(1, 1_000_000)).check(z.minLength(1), z.maxLength(16));

export const acceptsFileSchema = z.strictObject({
  schemaVersion: z.literal(ACCEPTS_SCHEMA_VERSION),
  receiptVersions: receiptVersionListSchema,
  // The version of the agent that wrote it. An agent relays only the receipt versions it reads
  // itself: when the host's steward-agent app runs another version (an older agent rolled back
  // to, which knows neither v2 nor this file), the file speaks for nobody and receipts are v1.
  agentVersion: versionSchema,
});
export type AcceptsFile = z.infer<typeof acceptsFileSchema>;

// The file in the agent's folder.
export function acceptsFile(paths: HostPaths): string {
  return path.join(paths.agentDir, 'accepts.json');
}

// The newest receipt version both this steward and the control plane take (1 when they share no other).
export function receiptVersionFor(accepted: readonly number[] | null): 1 | 2 | 3 {
  const mine = RECEIPT_VERSIONS as readonly number[];
  const both = (accepted ?? []).filter((v) => mine.includes(v));
  return both.includes(3) ? 3 : both.includes(2) ? 2 : 1;
}

// The receipt versions an agent offered in RECEIPT_VERSIONS_HEADER ("1, 2, 3"): the numbers it
// lists, in order, at most 16; anything else in it is ignored.
export function parseOfferedVersions(header: string | string[] | undefined): number[] {
  const text = Array.isArray(header) ? header.join(',') : (header ?? '');
  return [...new Set(text.split(',').map((s) => s.trim()).filter((s) => /^[1-9]\d{0,5}$/.test(s)).map(Number))].slice(0, 16);
}
