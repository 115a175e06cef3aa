// A throwaway PostgreSQL cluster for one test file (docs/design.md §13): initdb and pg_ctl in a mkdtemp
// folder, as `nobody` when the tests run as root (PostgreSQL refuses to run as root), listening
// only on a Unix socket in that folder; a fresh database per test; stopped and removed after.
import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { madeOnce } from './deb-cache.js';

const run = promisify(execFile);
const NOBODY = { uid: 65534, gid: 65534 };

// The folder holding initdb and pg_ctl: the PATH's, else Debian's newest /usr/lib/postgresql/<v>/bin.
// One statement on a connection of its own to `url`, closed after it: what a test does behind
// the store's back (a database made, a row planted, a table listed).
export async function pgQuery(url: string, text: string, args: unknown[] = []): Promise<pg.QueryResult> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await c.query(text, args);
  } finally {
    await c.end();
  }
}

export function findPostgresBin(): string | null {
  for (const dir of (process.env.PATH ?? '').split(':')) if (dir && existsSync(path.join(dir, 'initdb')) && existsSync(path.join(dir, 'pg_ctl'))) return dir;
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return null;
  const versions = readdirSync(base).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a));
  for (const v of versions) if (existsSync(path.join(base, v, 'bin', 'initdb'))) return path.join(base, v, 'bin');
  return null;
}

// Why PostgreSQL cannot run here, or null when it can.
export function postgresMissing(): string | null {
  return findPostgresBin() ? null : 'PostgreSQL is not installed (no initdb on the PATH or in /usr/lib/postgresql/*/bin; Debian: apt-get install postgresql)';
}

export interface PgCluster {
  // The URL of `database` on this cluster.
  url(database: string): string;
  // A new empty database; its URL.
  createDatabase(): Promise<string>;
  // Stops the cluster and removes its folder. Idempotent.
  stop(): Promise<void>;
}

// Starts a cluster (a few seconds: one per test file).
export async function startPostgresCluster(): Promise<PgCluster> {
  const bin = findPostgresBin();
  if (!bin) throw new Error(postgresMissing() ?? 'no PostgreSQL');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-pg-'));
  const data = path.join(dir, 'data');
  const asUser = process.getuid?.() === 0 ? NOBODY : {};
  if (process.getuid?.() === 0) chownSync(dir, NOBODY.uid, NOBODY.gid);
  const pgRun = (tool: string, args: string[]) => run(path.join(bin, tool), args, { cwd: dir, env: { ...process.env, LC_ALL: 'C' }, ...asUser });
  const url = (database: string) => `postgres://steward@localhost/${database}?host=${encodeURIComponent(dir)}`;
  let started = false;
  const stop = async () => {
    if (started) {
      started = false;
      // Why immediate: the cluster and everything in it are thrown away.
      await pgRun('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await initCluster(data, (d) => pgRun('initdb', ['-D', d, '-U', 'steward', '--auth=trust', '--no-sync', '-E', 'UTF8', '--no-instructions']));
    // Only the socket in `dir`; durability settings off: a test cluster survives no crash.
    const options = `-k ${dir} -c listen_addresses='' -c fsync=off -c full_page_writes=off -c synchronous_commit=off`;
    started = true;
    await pgRun('pg_ctl', ['-D', data, '-l', path.join(dir, 'log'), '-w', '-t', '60', '-o', options, 'start']);
  } catch (err) {
    const logText = existsSync(path.join(dir, 'log')) ? readFileSync(path.join(dir, 'log'), 'utf8') : '';
    await stop();
    throw new Error(`starting a PostgreSQL cluster failed: ${(err as Error).message}\n${logText}`);
  }
  let made = 0;
  return {
    url,
    async createDatabase() {
      const name = `t${++made}`;
      await pgQuery(url('postgres'), `CREATE DATABASE ${name}`);
      return url(name);
    },
    stop,
  };
}

// Makes a new cluster's data folder `data` with `initdb`. Within a run of the suite (a test cache
// folder, see deb-cache.ts) the first file's initdb is kept there and every other file copies it,
// owner and modes kept (`cp -a`): about a tenth of initdb's second of CPU, for the twenty-odd
// files that start a cluster. Run alone, a file runs initdb itself.
async function initCluster(data: string, initdb: (dir: string) => Promise<unknown>): Promise<void> {
  const cache = process.env.STEWARD_TEST_CACHE;
  if (!cache) {
    await initdb(data);
    return;
  }
  const template = await madeOnce(path.join(cache, 'pg-template'), (dir) => (existsSync(path.join(dir, 'data', 'PG_VERSION')) ? path.join(dir, 'data') : null), async (tmp) => {
    // Made beside `data`, whose folder its owner (nobody, as root) may write; the cache's may not be.
    await initdb(`${data}.template`);
    await run('cp', ['-a', `${data}.template`, path.join(tmp, 'data')]);
    rmSync(`${data}.template`, { recursive: true, force: true });
  }, 'PostgreSQL data folder');
  await run('cp', ['-a', template, data]);
}
