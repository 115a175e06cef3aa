import { StewardError } from '../../core/errors.js';
import type { RunStateAnswer } from '../../protocol/answers.js';
import type { RunStateRequest } from '../../protocol/schemas.js';
import type { OpContext } from '../server/api-server.js';
import { readCurrent } from '../release-store.js';
import { readRunRecord } from '../runners/run-record.js';
import { isAppAlive, startVersion, stopApp } from '../update/app-process.js';
import { setHold } from './hold.js';
import { preflight } from './preflight.js';
import type { TransactionCore } from './run-transaction.js';

// `start`, `stop`, `restart` (docs/design.md §5): manual starts give the supervisor a fresh budget
// (they revive an app in `error`); `stop` puts a hold, like a rollback, so a control plane
// does not start it again. They take the app's lock like an update.
export async function handleRunState(core: TransactionCore, req: RunStateRequest, ctx: OpContext): Promise<RunStateAnswer> {
  const cfg = core.config.apps[req.app];
  if (cfg?.runner === 'self') {
    throw new StewardError('BAD_REQUEST', `${req.app} is steward itself, the helper run by the unit ${cfg.unit}; systemctl ${req.op} ${cfg.unit}`);
  }
  if (cfg && cfg.runner !== 'process') {
    throw new StewardError('BAD_REQUEST', `${req.app} runs as the unit ${cfg.unit}; systemctl ${req.op} it`);
  }
  if (req.op === 'stop') void ctx.peer(); // for the hold, while the connection is surely open
  await preflight(core, req.app, ctx.kind, { allowBlocked: req.op === 'stop' });
  const held = await core.locks.acquire(req.app, { attemptId: req.op, op: req.op, phase: req.op, startedAt: core.clock.now() });
  try {
    if (req.op === 'stop') {
      await setHold(core, req.app, ctx, 'stop');
      const rec = await readRunRecord(core.paths, req.app).catch(() => null);
      await stopApp(core, req.app);
      // A stopped app's sockets close (sockets/keeper-client.ts): its clients are refused, not left waiting.
      await core.runner.closeSockets?.(req.app);
      return { app: req.app, op: 'stop', changed: rec?.expected === 'running', pid: null, version: rec?.version ?? null };
    }
    const cur = await readCurrent(core.paths, req.app);
    if (cur.state !== 'valid') throw new StewardError('RELEASE_INVALID', `${req.app} has no valid current release to ${req.op}`);
    const rec = await readRunRecord(core.paths, req.app).catch(() => null);
    const alive = rec?.process && rec.version === cur.version ? await isAppAlive(core, req.app, rec.process) : false;
    if (req.op === 'start' && alive && rec?.expected === 'running' && rec.supervisor?.state !== 'error') {
      return { app: req.app, op: 'start', changed: false, pid: rec.process?.pid ?? null, version: cur.version };
    }
    await stopApp(core, req.app);
    const proc = await startVersion(core, req.app, cur.version, 'manual');
    return { app: req.app, op: req.op, changed: true, pid: proc.identity.pid, version: cur.version };
  } finally {
    held.release();
  }
}
