import path from 'node:path';
import { isAppName, UNKNOWN_APPS_RECEIPTS } from './name-checks.js';
import { isVersion } from './version.js';

// Every absolute path of docs/design.md §2 under a root prefix ('' in production).
// Builders check app names and versions before joining them into a path.
export interface HostPaths {
  root: string;
  configFile: string;
  trustedKeysDir: string;
  appsDir: string;
  varLib: string;
  journalDir: string;
  stateDir: string;
  supervisorDir: string;
  receiptsDir: string;
  keysDir: string;
  trustDir: string;
  helperKey: string;
  helperPub: string;
  nodeState: string;
  receiptSeq: string;
  selfDir: string;
  appStateRoot: string;
  logDir: string;
  runDir: string;
  appFdsDir: string;
  helperSock: string;
  adminSock: string;
  helperLock: string;
  agentDir: string;
}

// The layout under `root` (an absolute, resolved folder or '').
export function hostPaths(root: string): HostPaths {
  const r = (p: string) => (root ? path.join(root, p) : p);
  return {
    root,
    configFile: r('/etc/steward/steward.json'),
    trustedKeysDir: r('/etc/steward/trusted-keys'),
    appsDir: r('/opt/steward/apps'),
    varLib: r('/var/lib/steward'),
    journalDir: r('/var/lib/steward/journal'),
    stateDir: r('/var/lib/steward/state'),
    supervisorDir: r('/var/lib/steward/supervisor'),
    receiptsDir: r('/var/lib/steward/receipts'),
    keysDir: r('/var/lib/steward/keys'),
    // The helper's TUF trust (docs/design.md §21): the trusted root and metadata, root's, 0700.
    trustDir: r('/var/lib/steward/trust'),
    helperKey: r('/var/lib/steward/keys/helper.key'),
    helperPub: r('/var/lib/steward/helper.pub'),
    nodeState: r('/var/lib/steward/state/node.json'),
    receiptSeq: r('/var/lib/steward/state/receipt-seq.json'),
    // The self-update trial's files (docs/design.md §14), shared with the package's launcher.
    selfDir: r('/var/lib/steward/self'),
    appStateRoot: r('/var/lib/steward-apps'),
    logDir: r('/var/log/steward'),
    runDir: r('/run/steward'),
    // The FIFOs of apps' readiness and watchdog fds (docs/design.md §17): root's, 0711.
    appFdsDir: r('/run/steward-fds'),
    helperSock: r('/run/steward/helper.sock'),
    adminSock: r('/run/steward/admin.sock'),
    helperLock: r('/run/steward/helper.lock'),
    agentDir: r('/var/lib/steward-agent'),
  };
}

function checkApp(app: string): string {
  if (!isAppName(app)) throw new TypeError(`not an app name: ${JSON.stringify(app)}`);
  return app;
}

function checkVersion(version: string): string {
  if (!isVersion(version)) throw new TypeError(`not a version: ${JSON.stringify(version)}`);
  return version;
}

export function appDir(p: HostPaths, app: string): string {
  return path.join(p.appsDir, checkApp(app));
}
export function versionsDir(p: HostPaths, app: string): string {
  return path.join(appDir(p, app), 'versions');
}
export function versionDir(p: HostPaths, app: string, version: string): string {
  return path.join(versionsDir(p, app), checkVersion(version));
}
export function currentLink(p: HostPaths, app: string): string {
  return path.join(appDir(p, app), 'current');
}
// The app's file objects by content (docs/design.md §20), on the file system of its versions/.
export function objectsDir(p: HostPaths, app: string): string {
  return path.join(appDir(p, app), 'objects');
}

export function stagingDir(p: HostPaths, app: string): string {
  return path.join(appDir(p, app), '.staging');
}
export function trustedKeysFor(p: HostPaths, app: string): string {
  return path.join(p.trustedKeysDir, checkApp(app));
}
export function stateFile(p: HostPaths, app: string): string {
  return path.join(p.stateDir, `${checkApp(app)}.json`);
}
export function journalFile(p: HostPaths, app: string): string {
  return path.join(p.journalDir, `${checkApp(app)}.json`);
}
// receipts/<app>.json, or receipts/_unknown-apps.json for UNKNOWN_APPS_RECEIPTS.
export function receiptsFile(p: HostPaths, app: string): string {
  return path.join(p.receiptsDir, `${app === UNKNOWN_APPS_RECEIPTS ? app : checkApp(app)}.json`);
}
export function supervisorFile(p: HostPaths, app: string): string {
  return path.join(p.supervisorDir, `${checkApp(app)}.json`);
}
export function appLogFile(p: HostPaths, app: string): string {
  return path.join(p.logDir, `${checkApp(app)}.log`);
}
