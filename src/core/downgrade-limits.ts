// The limits of signed downgrade authorizations (docs/design.md §18), apart from their schema so that
// steward-control's CLI registers `release allow-downgrade` (--help) without loading zod.

// `release allow-downgrade --expires-days`: 7 unless told, at most 30. Short on purpose: an
// authorization is for going back now, and one that lingers is a way back for whoever later holds
// the control plane's database.
export const DEFAULT_DOWNGRADE_DAYS = 7;
export const MAX_DOWNGRADE_DAYS = 30;
// How far ahead of the helper's clock a notAfter may be: the longest lifetime `allow-downgrade`
// signs, plus the clock difference a heartbeat is accepted with (±5 min, docs/design.md §6). One
// further away was not made by `allow-downgrade` on a clock that agrees with this host's.
export const MAX_DOWNGRADE_AHEAD_MS = MAX_DOWNGRADE_DAYS * 86_400_000 + 5 * 60_000;

// The command an operator runs to authorize going back to `version` of `app`, as messages name it.
export function allowDowngradeCommand(app: string, version: string): string {
  return `steward-control release allow-downgrade ${app} ${version} --key <a release key of ${app}>`;
}

// The app's TUF delegation, when the fleet's repository delegates it (docs/trust.md): `release
// allow-downgrade` then signs with one --key per key up to its threshold.
export interface DowngradeSigners {
  role: string;
  threshold: number;
}

// The remedy a message names for going back to `version` of `app`: the command in backquotes, then
// under TUF how many of which delegation's keys its --key options are. A threshold that is not a
// whole number from 1 (a damaged store) falls back to the one-key form.
export function allowDowngradeRemedy(app: string, version: string, signers?: DowngradeSigners | null): string {
  const t = signers?.threshold;
  if (!signers || !Number.isSafeInteger(t) || (t as number) < 1) return `\`${allowDowngradeCommand(app, version)}\``;
  const base = `steward-control release allow-downgrade ${app} ${version}`;
  if (t === 1) return `\`${base} --key <a key of the ${signers.role} delegation>\``;
  const n = t as number;
  // Every --key written out up to 5; past that, the first two and the last.
  const keys = n <= 5 ? Array.from({ length: n }, (_, i) => `--key <K${i + 1}>`) : ['--key <K1>', '--key <K2>', '...', `--key <K${n}>`];
  return `\`${base} ${keys.join(' ')}\` (${n} of the ${signers.role} delegation's keys)`;
}
