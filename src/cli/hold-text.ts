import type { HoldView } from '../core/hold-limits.js';
import { when } from './output.js';

// A hold as agentctl shows it: who, why, since and until when (docs/design.md §18). A helper from
// before expiries sends no `until`: its holds stand until release-hold.
export function describeHold(h: Omit<HoldView, 'until'> & { until?: number | null }): string {
  return `held by ${h.by} since ${when(h.at)} (${h.reason}), ${h.until ? `until ${when(h.until)}` : 'until release-hold'}`;
}
