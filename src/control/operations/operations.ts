// Every operation of steward-control's store, one per CLI command (docs/design.md §12): the local CLI,
// the admin API and the dashboard's session API all run these.
import { auditList } from './audit-ops.js';
import { hookAdd, hookList, hookRemove, hookTest } from './hook-ops.js';
import { nodesLabel, nodesList, nodesRemove } from './node-ops.js';
import { methodOf, routeOf, runOperation, type Operation } from './operation.js';
import { nodesPin, nodesUnpin } from './pin-ops.js';
import { operatorAdd, operatorList, operatorRemove, operatorRotate } from './operator-ops.js';
import { receiptsList } from './receipt-ops.js';
import { keysAllow, keysList, releaseAdd, releaseAllowDowngrade, releaseList, releaseRemove } from './release-ops.js';
import { rolloutList, rolloutPause, rolloutResume, rolloutRetry, rolloutStart, rolloutStatus, rolloutStop } from './rollout-ops.js';
import { targetList, targetPause, targetRemove, targetResume, targetRevert, targetSet, targetStatus } from './target-ops.js';
import { tokenCreate, tokenList, tokenRevoke } from './token-ops.js';

export const OPERATIONS: readonly Operation[] = [
  tokenCreate, tokenList, tokenRevoke,
  nodesList, nodesLabel, nodesRemove, nodesPin, nodesUnpin,
  receiptsList,
  releaseAdd, releaseList, releaseRemove, releaseAllowDowngrade,
  keysList, keysAllow,
  rolloutStart, rolloutRetry, rolloutStop, rolloutPause, rolloutResume, rolloutStatus, rolloutList,
  targetSet, targetList, targetStatus, targetPause, targetResume, targetRemove, targetRevert,
  operatorAdd, operatorList, operatorRemove, operatorRotate,
  auditList,
  hookAdd, hookList, hookRemove, hookTest,
];

const byRoute = new Map(OPERATIONS.map((op) => [routeOf(op), op]));

// The operation at an admin API path (`/v1/admin/rollout/start`), or undefined.
export function operationAt(path: string): Operation | undefined {
  return byRoute.get(path);
}

export { methodOf, routeOf, runOperation };
