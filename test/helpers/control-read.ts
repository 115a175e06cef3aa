// What `steward-control --db DB --json nodes` and `... rollout status APP` print, read in the
// test's own process by the operations the CLI runs on the same store (src/control/operations/),
// read-only. The tests' waits on a control plane poll these, as those on a helper poll
// helper-status.ts: a steward-control process per poll cost ~0.25 s of CPU, several times a wait.
// What a test asserts about the CLI's output it still reads from the CLI.
import { localActor } from '../../src/control/audit/record-audit.js';
import { artifactsDirOf } from '../../src/control/catalog/artifact-path.js';
import type { NodeView } from '../../src/control/operations/node-ops.js';
import { nodesList } from '../../src/control/operations/node-ops.js';
import { runOperation, type Operation } from '../../src/control/operations/operation.js';
import { receiptsList, type ReceiptView } from '../../src/control/operations/receipt-ops.js';
import { rolloutStatus } from '../../src/control/operations/rollout-ops.js';
import { openStore } from '../../src/control/store/open-store.js';
import type { RunStatusView } from '../../src/control/rollouts/run-status.js';

// Runs the read `op` with `input` on the store at `db` (a SQLite file or a postgres:// URL), as
// `steward-control --db DB` would, and closes the store.
async function readOp<I, O>(db: string, op: Operation<I, O>, input: Record<string, unknown>): Promise<O> {
  if (op.action !== null) throw new Error(`${op.command} is not a read`);
  const store = await openStore(db);
  try {
    return await runOperation({ store, actor: localActor(), artifactsDir: artifactsDirOf(db) }, op, input);
  } finally {
    await store.close();
  }
}

// `nodes --json`'s nodes: every page.
export async function controlNodes(db: string): Promise<NodeView[]> {
  const all: NodeView[] = [];
  let cursor: string | null = null;
  do {
    const page: { nodes: NodeView[]; nextCursor: string | null } = await readOp(db, nodesList, cursor === null ? {} : { cursor });
    all.push(...page.nodes);
    cursor = page.nextCursor;
  } while (cursor !== null);
  return all;
}

// `rollout status APP --json`'s runs.
export async function controlRuns(db: string, app: string): Promise<RunStatusView[]> {
  return (await readOp(db, rolloutStatus, { app })).runs;
}

// `receipts [--app APP] --json`'s receipts: every page.
export async function controlReceipts(db: string, app?: string): Promise<ReceiptView[]> {
  const all: ReceiptView[] = [];
  let cursor: string | null = null;
  do {
    const input: Record<string, unknown> = { ...(app === undefined ? {} : { app }), ...(cursor === null ? {} : { cursor }) };
    const page: { receipts: ReceiptView[]; nextCursor: string | null } = await readOp(db, receiptsList, input);
    all.push(...page.receipts);
    cursor = page.nextCursor;
  } while (cursor !== null);
  return all;
}
