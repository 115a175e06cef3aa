import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { AddonNotBuilt } from '../../scripts/package/sqlite-addon.js';
import { PACKAGE_DEFAULT_CONFIG } from '../../src/install/install-layout.js';
import { StewardError } from '../../src/core/errors.js';
import type { Envelope } from '../../src/core/release-schemas.js';
import { decodeStored } from '../../src/helper/receipts/receipts-file.js';
import { appRelease, freePort } from '../fixtures/app-releases.js';
import { REPO, sri } from './host.js';
import { helperReceipts } from './helper-status.js';
import { appStatusIn, helperStatusIn, pathIn, runIn as run, shIn as sh, writeIn, type RunResult } from './container-exec.js';
import { buildDeb, STEWARD_DEB, type DebBuilder } from './deb-cache.js';
import { skipUnlessCI } from './skip.js';
import { bootOrSkip, waitFor, type SystemdContainer } from './systemd-container.js';

// A booted systemd container that dpkg can install steward's .deb (or steward-control's) into:
// its /usr and dpkg's database are overlays of this host's (the writes land in a temp folder),
// the .deb is built into a folder bound at /opt/deb.

// dpkg's database, at the top: systemd-nspawn makes no parent folders for an overlay's mount
// point, and /var of a volatile container is an empty tmpfs.
const ADMINDIR = '/dpkg';

export interface DebContainer {
  box: SystemdContainer;
  // The .deb's path inside the container, and steward's version.
  deb: string;
  version: string;
  // dpkg's arguments with the container's database.
  dpkg(...args: string[]): string[];
  // Builds another package of the same code at `version` (scripts/package.ts --version) and
  // returns its path inside the container.
  buildDeb(version: string): Promise<string>;
}

// Boots the container (or skips the test, see bootOrSkip) and builds the .deb with `builder`;
// both are undone when the test ends. A builder that would have to compile better-sqlite3
// (AddonNotBuilt) skips the test as bootOrSkip does.
export async function bootForDpkg(t: TestContext, builder: DebBuilder = STEWARD_DEB): Promise<DebContainer | null> {
  return (await bootSeveralForDpkg(t, 1, builder))?.[0] ?? null;
}

// `count` containers as bootForDpkg's, booted at the same time while the .deb is built once: one
// folder with the package, bound into each at /opt/deb; each its own overlays. Null (the test
// skipped) when any cannot boot.
export async function bootSeveralForDpkg(t: TestContext, count: number, builder: DebBuilder = STEWARD_DEB): Promise<DebContainer[] | null> {
  const out = mkdtempSync(path.join(os.tmpdir(), 'steward-deb-'));
  const boxes: SystemdContainer[] = [];
  // One hook, in this order: node:test runs a test's after hooks in the order they were added, and
  // the overlays' upper folders are in `out`; removed under a running container, its /usr loses
  // the unit files dpkg wrote there (and poweroff.target with them), so systemd refuses to power off.
  t.after(async () => {
    await Promise.all(boxes.map((box) => box.stop()));
    rmSync(out, { recursive: true, force: true });
  });
  const folder = (name: string) => {
    mkdirSync(path.join(out, name), { recursive: true });
    return path.join(out, name);
  };
  const debDir = folder('deb');
  const boot = async (i: number) => {
    const box = await bootOrSkip(t, {
      bindRo: [[debDir, '/opt/deb']],
      overlays: [['/usr', folder(`${i}/usr`), '/usr'], ['/var/lib/dpkg', folder(`${i}/dpkg`), ADMINDIR]],
    });
    if (!box) return null;
    boxes.push(box);
    // The host's overrides name groups (ssl-cert) that the container's empty /etc does not have;
    // a Docker image's policy-rc.d (exit 101) would forbid deb-systemd-invoke to start anything,
    // which a real host has not. Both changes land in the overlays' upper layers only.
    // The host's alternatives are in its /etc too: awk, which the launcher compares versions with.
    await sh(box, `: > ${ADMINDIR}/statoverride && rm -f /usr/sbin/policy-rc.d && mkdir -p /etc/alternatives && ln -sfn /usr/bin/mawk /etc/alternatives/awk`);
    return box;
  };
  // gzip -1 rather than xz: the same tree, built in seconds (scripts/package.ts).
  const build = async (version?: string) => {
    const r = await buildDeb(builder, REPO, debDir, { compression: 'gzip', version });
    return { deb: `/opt/deb/${path.basename(r.deb)}`, version: r.version };
  };
  // Settled, all of them, before anything is thrown: a box still booting when the test ended
  // would miss the after hook.
  const [boots, built] = await Promise.all([Promise.allSettled(Array.from({ length: count }, (_, i) => boot(i))), Promise.allSettled([build()])]);
  for (const r of [...boots, ...built]) if (r.status === 'rejected' && !(r.reason instanceof AddonNotBuilt)) throw r.reason;
  const booted = boots.map((r) => (r.status === 'fulfilled' ? r.value : null));
  if (booted.some((box) => box === null)) return null;
  const first = built[0] as PromiseSettledResult<Awaited<ReturnType<typeof build>>>;
  if (first.status === 'rejected') {
    skipUnlessCI(t, (first.reason as AddonNotBuilt).message);
    return null;
  }
  const { deb, version } = first.value;
  return (booted as SystemdContainer[]).map((box) => ({ box, deb, version, dpkg: (...args) => ['--admindir', ADMINDIR, ...args], buildDeb: async (v) => (await build(v)).deb }));
}

// The next patch version: 0.1.0 -> 0.1.1 (a newer package of the same code).
export const nextPatch = (v: string): string => v.replace(/^(\d+\.\d+\.)(\d+).*$/, (_m, head: string, patch: string) => `${head}${Number(patch) + 1}`);

// `agentctl --json status` once it answers (exit 0); the helper's journal in the error if not.
// The wait polls the helper's socket from this process (appStatusIn), then agentctl runs once.
export async function statusOnceUp(box: SystemdContainer): Promise<RunResult> {
  let last = '';
  return waitFor('agentctl status through the packaged helper', async () => {
    if (!(await helperStatusIn(box))) {
      last = 'the helper does not answer on its socket';
      return null;
    }
    const r = await run(box, 'agentctl', ['--json', 'status']);
    last = r.text;
    return r.code === 0 ? r : null;
  }, 30_000, 200).catch(async (err: Error) => {
    const journal = await run(box, 'journalctl', ['-u', 'steward-helper.service', '--no-pager', '-n', '40']);
    throw new Error(`${err.message}: ${last}\n--- the helper's journal ---\n${journal.text}`);
  });
}

// The path of the executable the helper's main process runs (once it answers: right after a
// start, the main process is systemd's fork before its exec).
export async function helperExe(box: SystemdContainer): Promise<string> {
  return (await sh(box, `readlink /proc/${await mainPid(box, 'steward-helper.service')}/exe`)).stdout.trim();
}

// The main pid of a unit, as systemd has it ('0' when none).
export async function mainPid(box: SystemdContainer, unit: string): Promise<string> {
  return (await run(box, 'systemctl', ['show', '-p', 'MainPID', '--value', unit])).stdout.trim();
}

// web's entry of the helper's status (`agentctl --json status web`'s) once web's supervisor says
// `running`, polled over the helper's socket (appStatusIn).
export async function webRunning(box: SystemdContainer): Promise<{ supervisor: { state: string; pid: number }; current: string }> {
  let last: unknown = null;
  return waitFor('web running under the helper', async () => {
    const app = await appStatusIn(box, 'web');
    last = app;
    return app?.supervisor?.state === 'running' ? app : null;
  }, 30_000, 200).catch((err: Error) => {
    throw new Error(`${err.message}: ${JSON.stringify(last)}`);
  });
}

// Puts the app `web` (a test release of test/fixtures/app-releases.ts, unsigned over admin.sock)
// under the packaged helper, run as the user stwweb: the host config gets it, with `processRunner`
// (the helper's default under systemd is a transient unit per app), the helper restarts onto
// that config, and `agentctl update` makes 1.0.0 current. Returns web's pid. `apps`: more apps
// of the config, or other settings of the package's (steward's, say); `more`: other top-level
// settings of the host config (metrics, say).
export async function runWebApp(box: SystemdContainer, processRunner: 'auto' | 'detached' = 'auto', apps: Record<string, unknown> = {}, more: Record<string, unknown> = {}): Promise<number> {
  await sh(box, 'getent passwd stwweb || useradd --system --user-group --no-create-home --shell /usr/sbin/nologin stwweb');
  const web = { runner: 'process', user: 'stwweb', group: 'stwweb' };
  const config = { ...PACKAGE_DEFAULT_CONFIG, ...more, apps: { ...PACKAGE_DEFAULT_CONFIG.apps, web, ...apps }, supervisor: { processRunner } };
  await writeIn(box, '/etc/steward/steward.json', `${JSON.stringify(config, null, 2)}\n`);
  await sh(box, 'systemctl restart steward-helper.service');
  await statusOnceUp(box);
  const tgz = appRelease('web', '1.0.0', await freePort(), { stableMs: 200 });
  await writeIn(box, '/tmp/web-1.0.0.tgz', tgz);
  const up = await run(box, 'agentctl', ['--json', 'update', 'web', '1.0.0', '--file', '/tmp/web-1.0.0.tgz', '--integrity', sri(tgz), '--allow-unsigned'], 120_000);
  assert.equal(up.code, 0, up.text);
  assert.equal(up.json?.outcome, 'active', up.text);
  return (await webRunning(box)).supervisor.pid;
}

// `agentctl --json status <app>`'s entry for the app once the helper has recovered, waited for
// (up to a minute) while it restarts or recovers: a receipt a restarted helper wrote at its
// start may come before its recovery is over. Asked over the helper's socket from this process
// (appStatusIn), every 100 ms.
export async function statusOf(box: SystemdContainer, app: string): Promise<any> {
  return waitFor(`the helper's status of ${app}, recovered`, () => appStatusIn(box, app), 60_000, 100);
}

// The last receipt of the app steward whose payload `match`es, as agentctl would report it, once
// there is one. Waited for in the receipts file first, read from this side through
// /proc/<PID 1>/root (decodeStored, as the helper reads it back): a wait of a minute that polled
// agentctl, a node inside the container, every second or so started none. agentctl then answers
// within the helper's restart, if one is under way.
export async function stewardReceiptMatching(box: SystemdContainer, what: string, match: (payload: any) => boolean, timeoutMs: number): Promise<any> {
  const file = `/proc/${box.pid}/root/var/lib/steward/receipts/steward.json`;
  const onDisk = await waitFor(`${what} in the receipts file`, async () => {
    try {
      const envelopes = (JSON.parse(readFileSync(file, 'utf8')) as { receipts: Envelope[] }).receipts;
      for (const e of envelopes) if (match(await decodeStored(file, e))) return true;
      return false;
    } catch {
      // Not there yet, or caught between two writes (each is a rename: a read sees one whole file).
      return false;
    }
  }, timeoutMs, 200).then(() => true, () => false);
  return waitFor(what, async () => (await stewardReceipts(box))?.filter(match).pop() ?? null, onDisk ? 30_000 : 1000, 500);
}

// The receipts of the app steward, decoded, as `agentctl --json receipts steward` gives them:
// asked over the helper's socket from this process and verified against the host's helper.pub
// (helperReceipts). Null while the helper's unit restarts, or when one does not verify (where
// agentctl exits 1).
export async function stewardReceipts(box: SystemdContainer): Promise<any[] | null> {
  try {
    const list = await helperReceipts(pathIn(box), 'steward');
    return list.some((r) => !r.verified) ? null : list.map((r) => r.payload);
  } catch (err) {
    if (err instanceof StewardError) return null;
    throw err;
  }
}

// How many starts of the helper's unit the launcher ran steward `version` on trial (its own
// journal lines).
export async function trialsOf(box: SystemdContainer, version: string): Promise<number> {
  const j = await run(box, 'journalctl', ['-u', 'steward-helper.service', '--no-pager', '-o', 'cat']);
  return j.stdout.split('\n').filter((l) => l.startsWith(`steward-launcher: running steward ${version} (trial)`)).length;
}
