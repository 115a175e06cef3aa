// The label values the control plane's metrics may carry (docs/design.md §12). A series is made for
// every distinct label value, and most values here come from nodes, which are hostile: each
// value is taken from a closed set or checked against its rule, and what falls outside is
// bucketed, so that no node can make the series grow without bound.
import { CONTROL_ERROR_CODES } from '../../core/control-api.js';
import { isReasonCode } from '../../core/errors.js';
import { isAppName } from '../../core/name-checks.js';
import { RECEIPT_OUTCOMES } from '../../core/receipt-schema.js';
import { isVersion } from '../../core/version.js';
import type { AppVersionCount } from '../store/store.js';

// What stands for every value outside the rule or past the cap. "other" is no version and no
// code; "_other" is no app name (an app name starts with [a-z0-9]), so no app can be mistaken for it.
export const OTHER = 'other';
export const OTHER_APP = '_other';
// The version label of an app a node reports without a current version, and the reason label
// of a receipt without a reason.
export const NONE = 'none';

// The most apps the per-version gauge names (those on the most nodes), and the most versions
// per app (likewise); the rest are summed into OTHER_APP and OTHER. At most
// MAX_APPS * (MAX_VERSIONS_PER_APP + 2) + 1 series (NONE and OTHER beside each app's versions,
// and OTHER_APP), whatever nodes report.
export const MAX_APPS = 50;
export const MAX_VERSIONS_PER_APP = 10;

const errorCodes: ReadonlySet<string> = new Set(CONTROL_ERROR_CODES);
const outcomes: ReadonlySet<string> = new Set(RECEIPT_OUTCOMES);

// A heartbeat's result: "ok", or the error code of its answer (a closed set).
export function heartbeatResultLabel(code: string | null): string {
  if (code === null) return 'ok';
  return errorCodes.has(code) ? code : OTHER;
}

// A receipt's outcome (a closed set).
export function outcomeLabel(outcome: string): string {
  return outcomes.has(outcome) ? outcome : OTHER;
}

// A receipt's reason code: one of the closed union of src/core/errors.ts, NONE, or OTHER (a
// signed receipt may carry any string of up to 64 characters there).
export function reasonLabel(code: string | null | undefined): string {
  if (code === null || code === undefined) return NONE;
  return isReasonCode(code) ? code : OTHER;
}

// An app name as a label value: the app-name rule, or OTHER_APP.
export function appLabel(app: unknown): string {
  return isAppName(app) ? app : OTHER_APP;
}

// The nodes per app and version as label values: names and versions checked against their rules,
// then the MAX_APPS apps on the most nodes, each with its MAX_VERSIONS_PER_APP versions on the
// most nodes; the rest summed into OTHER_APP (all its versions as one) and OTHER. Ties go by
// name, so every instance reading the same store reports the same series.
export function boundAppVersions(rows: readonly AppVersionCount[], maxApps = MAX_APPS, maxVersions = MAX_VERSIONS_PER_APP): AppVersionCount[] {
  const byApp = new Map<string, Map<string, number>>();
  const add = (m: Map<string, number>, k: string, n: number) => m.set(k, (m.get(k) ?? 0) + n);
  for (const r of rows) {
    const app = appLabel(r.app);
    const version = r.version === null ? NONE : isVersion(r.version) ? r.version : OTHER;
    let versions = byApp.get(app);
    if (!versions) byApp.set(app, (versions = new Map()));
    add(versions, version, r.nodes);
  }
  const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
  const apps = [...byApp.entries()].filter(([app]) => app !== OTHER_APP).sort(([a, x], [b, y]) => total(y) - total(x) || (a < b ? -1 : 1));
  const out: AppVersionCount[] = [];
  let otherApps = byApp.get(OTHER_APP) ? total(byApp.get(OTHER_APP)!) : 0;
  for (const [i, [app, versions]] of apps.entries()) {
    if (i >= maxApps) {
      otherApps += total(versions);
      continue;
    }
    const named = [...versions.entries()].filter(([v]) => v !== NONE && v !== OTHER).sort(([a, x], [b, y]) => y - x || (a < b ? -1 : 1));
    let other = versions.get(OTHER) ?? 0;
    for (const [j, [version, nodes]] of named.entries()) {
      if (j < maxVersions) out.push({ app, version, nodes });
      else other += nodes;
    }
    if (versions.has(NONE)) out.push({ app, version: NONE, nodes: versions.get(NONE)! });
    if (other > 0) out.push({ app, version: OTHER, nodes: other });
  }
  if (otherApps > 0) out.push({ app: OTHER_APP, version: OTHER, nodes: otherApps });
  return out;
}
