// Operators' roles (docs/design.md §12), lowest first: a viewer reads everything but log lines; an
// operator also starts, pauses, resumes, stops and retries rollouts, labels nodes, creates and
// revokes enrollment tokens and reads log lines; an admin also manages operators, releases,
// keys and nodes.
import * as z from '../../core/zod-mini.js';
import type { OperatorRole } from '../store/store.js';

export const ROLES = ['viewer', 'operator', 'admin'] as const satisfies readonly OperatorRole[];

export const roleSchema = z.enum(ROLES);

// Operator names: lowercase, no `:` (so no name can pass for the local CLI's `local:<user>`).
export const OPERATOR_NAME_RE = /^[a-z][a-z0-9._-]{0,62}$/;
export const operatorNameSchema = z.string().check(z.regex(OPERATOR_NAME_RE, 'operator names are [a-z][a-z0-9._-]{0,62}'));

// Whether a holder of `has` may do what needs `needs`.
export function roleAllows(has: OperatorRole, needs: OperatorRole): boolean {
  return ROLES.indexOf(has) >= ROLES.indexOf(needs);
}
