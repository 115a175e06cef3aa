import * as z from './zod-mini.js';
import { intSchema, versionSchema } from './names.js';

// The files of a self-update trial in /var/lib/steward/self/ (docs/design.md §14, docs/self-update.md).
// The launcher (systemd/steward-launcher, a sh script in the package) reads and writes the same
// lines: each is one line of JSON with its keys in this order, and anything else is garbage to
// it. Their schemaVersion stays 1 for as long as a package in the field reads only 1 (docs/design.md
// §16): the launcher is the package's, not a release's, so no release may teach it a new one.
export const SELF_SCHEMA_VERSION = 1;
export const SELF_APP = 'steward';
export const SELF_FILES = ['candidate', 'trying', 'reverted', 'starts', 'fallback', 'package-tried'] as const;
export type SelfFile = (typeof SELF_FILES)[number];
// Starts of `current` in a row without getting ready after which the launcher sets it aside.
export const MAX_UNREADY_STARTS = 3;

// candidate, trying, reverted: which tree is (or was) on trial. `release` is versions/<version>
// of the app steward; `package` is the package's own tree, made a candidate by the launcher.
export const pointerSchema = z.strictObject({
  schemaVersion: z.literal(SELF_SCHEMA_VERSION),
  version: versionSchema,
  source: z.enum(['release', 'package']),
});
export type Pointer = z.infer<typeof pointerSchema>;

// starts: the starts of `current` that did not get ready yet; fallback: a current set aside.
export const startRecordSchema = z.strictObject({
  schemaVersion: z.literal(SELF_SCHEMA_VERSION),
  version: versionSchema,
  starts: intSchema(0, 999),
});
export type StartRecord = z.infer<typeof startRecordSchema>;

// package-tried: the package version the launcher made a candidate once (never again).
export const packageTriedSchema = z.strictObject({
  schemaVersion: z.literal(SELF_SCHEMA_VERSION),
  version: versionSchema,
});
export type PackageTried = z.infer<typeof packageTriedSchema>;

// What the launcher decided, as it tells the helper in STEWARD_SELF_DECISION.
export const LAUNCH_DECISIONS = ['trial', 'current', 'package', 'fallback'] as const;
export type LaunchDecision = (typeof LAUNCH_DECISIONS)[number];

// The lines as the launcher reads and writes them: keys in the schemas' order, no blanks, one
// newline. A reader accepts exactly these (so "valid" means the same to both sides).
export function pointerLine(p: Pointer): string {
  return `${JSON.stringify({ schemaVersion: p.schemaVersion, version: p.version, source: p.source })}\n`;
}
export function startRecordLine(r: StartRecord): string {
  return `${JSON.stringify({ schemaVersion: r.schemaVersion, version: r.version, starts: r.starts })}\n`;
}
export function packageTriedLine(p: PackageTried): string {
  return `${JSON.stringify({ schemaVersion: p.schemaVersion, version: p.version })}\n`;
}
