// A real `steward-control serve` on a database of either backend, its CLI, and what fake nodes
// (control-harness.ts: real keys and signatures over HTTP) need of it: a control plane that can
// be stopped and replaced by another serve on another database while the nodes keep their keys.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createKeys } from '../../src/control/catalog/create-keys.js';
import type { ControlLike } from './control-harness.js';
import { addRelease } from './control-seed.js';
import { controlCli, startControlDaemon, type ControlCliResult, type Daemon } from './fleet.js';

export interface ServedControl {
  db: string;
  artifacts: string;
  url: string;
  daemon: Daemon & { url: string };
  // `steward-control --db <db> --artifacts <artifacts> ...args`.
  cli(args: string[]): Promise<ControlCliResult>;
  stop(): Promise<void>;
}

// Starts serve on `db` (1 s heartbeats) on 127.0.0.1:`port` (0: any), its tarballs in `artifacts`.
export async function serveControl(db: string, artifacts: string, port = 0): Promise<ServedControl> {
  const daemon = await startControlDaemon(db, port, 1, { args: ['--artifacts', artifacts] });
  return { db, artifacts, url: daemon.url, daemon, cli: (args) => controlCli(db, ['--artifacts', artifacts, ...args]), stop: () => daemon.stop() };
}

// Runs the CLI and fails with its output unless it exits 0; its JSON.
export async function cliJson(c: Pick<ServedControl, 'cli'>, args: string[]): Promise<any> {
  const r = await c.cli([...args, '--json']);
  if (r.code !== 0) throw new Error(`steward-control ${args.join(' ')} exited ${r.code}: ${r.stdout}${r.stderr}`);
  return r.json;
}

// What fake nodes talk to: the current serve's URL (moved with `moveTo`) and tokens from its CLI.
export function nodesControl(first: ServedControl): ControlLike & { moveTo(c: ServedControl): void } {
  let current = first;
  const server = { url: first.url };
  return {
    clock: { now: () => Date.now() },
    server,
    token: async () => (await cliJson(current, ['token', 'create'])).token as string,
    moveTo(c) {
      current = c;
      server.url = c.url;
    },
  };
}

// Adds app@version to the catalog from a tarball of `bytes`, kept and served by `c`: its key and
// the release made in this process by what `keys create` and `release add` run on the database
// (control-seed.ts), two processes less; the release is not what these tests are about.
export async function addKeptRelease(c: ServedControl, dir: string, app: string, version: string, bytes: Buffer): Promise<void> {
  mkdirSync(dir, { recursive: true });
  const keys = await createKeys(path.join(dir, `keys-${app}-${version}`), 'release');
  const file = path.join(dir, `${app}-${version}.tgz`);
  writeFileSync(file, bytes);
  await addRelease(c.db, c.artifacts, { app, version, file, baseUrl: c.url, key: keys.privateKeyFile });
}
