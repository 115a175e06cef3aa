// steward-control's artifact routes (test/helpers/object-server.ts) in a process of their own, as a
// control plane is: in the bench's own process its work (building each pack from its objects'
// records, a thread-pool round trip per file) took turns of the very event loop whose stage it
// served, and charged them to the stage. Driven over IPC: publish a release from a file, offer
// patches or not, close.
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startObjectServer, type ObjectServer } from '../../test/helpers/object-server.js';

type Question = { publish: { version: string; file: string } } | { offerPatches: boolean };
type Ask = Question & { id: number };
type Answer = { id: number; ok: true; index?: { integrity: string; size: number } } | { id: number; ok: false; error: string };

export interface ObjectServerProcess {
  base: string;
  publish(version: string, file: string): Promise<{ integrity: string; size: number }>;
  offerPatches(on: boolean): Promise<void>;
  close(): Promise<void>;
}

export async function startObjectServerProcess(): Promise<ObjectServerProcess> {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['--serve'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const waiting = new Map<number, (a: Answer) => void>();
  let next = 0;
  const base = await new Promise<string>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`the object server exited (${code}) before it listened`)));
    child.once('message', (m) => resolve((m as { base: string }).base));
  });
  child.removeAllListeners('exit');
  child.on('message', (m) => {
    const a = m as Answer;
    waiting.get(a.id)?.(a);
    waiting.delete(a.id);
  });
  const ask = (q: Question): Promise<Answer & { ok: true }> =>
    new Promise((resolve, reject) => {
      const id = next++;
      waiting.set(id, (a) => (a.ok ? resolve(a) : reject(new Error(a.error))));
      child.send({ ...q, id });
    });
  return {
    base,
    publish: async (version, file) => (await ask({ publish: { version, file } })).index as { integrity: string; size: number },
    offerPatches: async (on) => void (await ask({ offerPatches: on })),
    // Disconnected, it removes its artifacts folder and exits; killed only if it does not.
    close: async () => {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.disconnect();
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

async function serve(): Promise<void> {
  const srv: ObjectServer = await startObjectServer();
  const { readFileSync } = await import('node:fs');
  process.on('message', (m: Ask) => {
    void (async (): Promise<Answer> => {
      try {
        if ('publish' in m) return { id: m.id, ok: true, index: await srv.publish(m.publish.version, readFileSync(m.publish.file)) };
        srv.offerPatches = m.offerPatches;
        return { id: m.id, ok: true };
      } catch (err) {
        return { id: m.id, ok: false, error: (err as Error).message };
      }
    })().then((a) => process.send?.(a));
  });
  process.on('disconnect', () => {
    srv.close();
    process.exit(0);
  });
  process.send?.({ base: srv.base });
}

if (process.argv[2] === '--serve') void serve();
