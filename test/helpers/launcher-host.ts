// A host for the launcher's tests (systemd/steward-launcher, docs/design.md §14): a temp root with the
// app steward's release store, a package tree, and a fake runtime that records what the
// launcher exec'd and then acts as that tree's `behaviour` file says:
//   good   ready: a trial commits with the real commitTrial, every start resets the start count
//   exit   exits 1 at once, never ready (a crash at start, a hang the start timeout ends)
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { hostPaths, type HostPaths } from '../../src/core/paths.js';
import { fsyncDir } from '../../src/platform/fs-atomic.js';
import { loadTree } from '../crash/fs-model.js';
import { REPO } from './host.js';
import { commitFakeTrial, writeMarker } from './launcher-commit-steps.js';

export { writeMarker } from './launcher-commit-steps.js';

export const LAUNCHER = path.join(REPO, 'systemd/steward-launcher');
// dash when there is one (Debian's /bin/sh): no bashism may slip through.
export const SHELL = existsSync('/usr/bin/dash') ? '/usr/bin/dash' : '/bin/sh';
const COMMIT = path.join(REPO, 'dist/test/helpers/launcher-commit.js');

export type Behaviour = 'good' | 'exit';

// One exec the launcher made, as the fake runtime recorded it.
export interface Run {
  decision: string;
  version: string;
  // The tree it ran: `package`, `versions/<v>`, or the path itself when it is neither.
  tree: string;
  args: string;
}

export interface Start {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  // What it exec'd, or null when it ran nothing.
  run: Run | null;
}

const FAKE_NODE = `#!/bin/sh
# The launcher tests' runtime: records the exec, then behaves as the tree's behaviour file says.
set -eu
# The kill test's mv and sync act on the launcher only.
unset KILL_AT
while [ $# -gt 0 ]; do case $1 in *steward-helper.js) break ;; esac; shift; done
tree=\${1%/bin/steward-helper.js}
shift
printf '%s|%s|%s|%s\\n' "$STEWARD_SELF_DECISION" "$STEWARD_SELF_VERSION" "$tree" "$*" >>"$FAKE_LOG"
# The crash explorer's mark of each exec, in the traced root: ran/<its line in the log>.
if [ -n "\${FAKE_MARK:-}" ]; then : >"$FAKE_MARK/$(wc -l <"$FAKE_LOG")"; fi
# good only when the file says exactly that, trailing newlines aside (what $(cat) would give), read
# without a process: the launcher's tests start this thousands of times.
b=
if [ -f "$tree/behaviour" ]; then { IFS= read -r b || true; while IFS= read -r more || [ -n "$more" ]; do [ -z "$more" ] || b=; done; } <"$tree/behaviour"; fi
[ "$b" = good ] || exit 1
# Ready. The steps below are taken by the test's own process once this exits 0, where nothing
# traces them (launcher-commit-steps.ts).
if [ -n "\${FAKE_READY_BY_TEST:-}" ]; then exit 0; fi
if [ "$STEWARD_SELF_DECISION" = trial ]; then "$FAKE_REAL_NODE" "$FAKE_COMMIT" "$FAKE_ROOT" "$STEWARD_SELF_VERSION" "$tree"; fi
# Ready: the start count is reset, as resetStartCounter does (rm, then fsync of the folder); no rm
# is started when there is nothing to remove.
starts=$FAKE_ROOT/var/lib/steward/self/starts
if [ -e "$starts" ] || [ -L "$starts" ]; then rm -f "$starts"; fi
sync "$FAKE_ROOT/var/lib/steward/self"
`;

export class LauncherHost {
  readonly root: string;
  readonly paths: HostPaths;
  readonly packageDir: string;
  readonly log: string;
  readonly node: string;
  readonly selfDir: string;
  readonly appDir: string;

  // Lays out `base`: root/, the package tree pkg/<packageVersion>/, the fake runtime.
  constructor(
    readonly base: string,
    readonly packageVersion: string,
    packageBehaviour: Behaviour = 'good',
  ) {
    this.root = path.join(base, 'root');
    this.paths = hostPaths(this.root);
    this.selfDir = this.paths.selfDir;
    this.appDir = path.join(this.paths.appsDir, 'steward');
    mkdirSync(path.join(this.root, 'var/lib/steward'), { recursive: true, mode: 0o755 });
    mkdirSync(path.join(this.appDir, 'versions'), { recursive: true, mode: 0o755 });
    this.packageDir = path.join(base, 'pkg', packageVersion);
    writeTree(this.packageDir, packageBehaviour);
    this.log = path.join(base, 'runs.log');
    writeFileSync(this.log, '');
    this.node = path.join(base, 'fake-node');
    writeFileSync(this.node, FAKE_NODE, { mode: 0o755 });
  }

  // versions/<version> of the app steward with a marker as staging writes it.
  addRelease(version: string, behaviour: Behaviour, opts: { marker?: boolean } = {}): string {
    const dir = path.join(this.appDir, 'versions', version);
    writeTree(dir, behaviour);
    if (opts.marker !== false) writeMarker(dir, version);
    return dir;
  }

  setCurrent(version: string): void {
    const link = path.join(this.appDir, 'current');
    rmSync(link, { force: true });
    symlinkSync(`versions/${version}`, link);
  }

  // What `current` points at now, or null.
  current(): string | null {
    try {
      return readlinkSync(path.join(this.appDir, 'current'));
    } catch {
      return null;
    }
  }

  writeSelf(name: string, text: string | Buffer): void {
    mkdirSync(this.selfDir, { recursive: true, mode: 0o700 });
    writeFileSync(path.join(this.selfDir, name), text);
  }

  readSelf(name: string): string | null {
    try {
      return readFileSync(path.join(this.selfDir, name), 'utf8');
    } catch {
      return null;
    }
  }

  env(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
    return {
      PATH: process.env.PATH,
      STEWARD_PACKAGE_DIR: this.packageDir,
      STEWARD_LAUNCHER_ROOT: this.root,
      STEWARD_NODE: this.node,
      FAKE_LOG: this.log,
      FAKE_ROOT: this.root,
      FAKE_REAL_NODE: process.execPath,
      FAKE_COMMIT: COMMIT,
      ...extra,
    };
  }

  // Every exec recorded so far, oldest first.
  runs(): Run[] {
    return parseRuns(readFileSync(this.log, 'utf8'), this);
  }

  // One start of `launcher` (the real one unless a test passes a wrong one), waited for. A good
  // fake helper's ready steps (the trial's commit, the start count's reset) are taken here once
  // the fake runtime exits 0: the same steps in the same order as the runtime takes them where
  // it is traced, without starting node for each trial (launcher-commit-steps.ts).
  async start(opts: { launcher?: string; args?: string[]; env?: NodeJS.ProcessEnv } = {}): Promise<Start> {
    const before = this.runs().length;
    const child = spawn(SHELL, [opts.launcher ?? LAUNCHER, ...(opts.args ?? [])], { env: this.env({ ...opts.env, FAKE_READY_BY_TEST: '1' }), stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    let [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on('close', (c, s) => resolve([c, s])));
    const runs = this.runs();
    const run = runs.length > before ? (runs[runs.length - 1] as Run) : null;
    if (run && code === 0) {
      try {
        await this.ready(run);
      } catch (err) {
        // What the runtime's `set -e` made of a failed step: its error on stderr, exit 1.
        stderr += `${(err as Error).stack ?? String(err)}\n`;
        code = 1;
      }
    }
    return { code, signal, stderr, run };
  }

  // What the fake runtime does once ready, after a start that ran `run`.
  private async ready(run: Run): Promise<void> {
    if (run.decision === 'trial') {
      const tree = run.tree === 'package' ? this.packageDir : run.tree.startsWith('versions/') ? path.join(this.appDir, run.tree) : run.tree;
      await commitFakeTrial(this.root, run.version, tree);
    }
    const self = path.join(this.root, 'var/lib/steward/self');
    rmSync(path.join(self, 'starts'), { force: true });
    // As the runtime's `sync <folder>`, which fails on a missing folder as this does.
    await fsyncDir(self);
  }

  // `n` starts one after another (systemd's Restart=always after each exit).
  // `untilFixed`: a start that left every file it could read as it found them (the root and the
  // package tree, by content; the launcher reads no clock, and its environment is the same at
  // every start) is a fixed point: each start after it would make the same decision and exec the
  // same tree, so its result stands for the remaining starts instead of running them. What the
  // crash tests check of the later starts (each ran something, how often a tree ran, the last ones
  // settled) is then what the real starts would give; h.runs() holds only those that ran.
  async starts(n: number, opts: { launcher?: string; untilFixed?: boolean } = {}): Promise<Start[]> {
    const out: Start[] = [];
    let before = opts.untilFixed ? await this.filesDigest() : '';
    for (let i = 0; i < n; i++) {
      const st = await this.start(opts);
      out.push(st);
      if (!opts.untilFixed) continue;
      const after = await this.filesDigest();
      if (after === before) {
        while (out.length < n) out.push(st);
        break;
      }
      before = after;
    }
    return out;
  }

  // The root and the package tree by content (crash/fs-model.ts: every path, its type, mode,
  // owner, and a file's bytes or a link's target).
  private async filesDigest(): Promise<string> {
    const digests = await Promise.all([this.root, this.packageDir].map(async (dir) => (existsSync(dir) ? (await loadTree(dir)).digest() : '-')));
    return digests.join(' ');
  }
}

function writeTree(dir: string, behaviour: Behaviour): void {
  mkdirSync(path.join(dir, 'bin'), { recursive: true, mode: 0o755 });
  writeFileSync(path.join(dir, 'bin/steward-helper.js'), '// a fake helper: the fake runtime reads ../behaviour\n');
  writeFileSync(path.join(dir, 'behaviour'), behaviour);
}

export function parseRuns(text: string, host: { packageDir: string; appDir: string }): Run[] {
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const [decision = '', version = '', tree = '', args = ''] = l.split('|');
      const versions = path.join(host.appDir, 'versions') + '/';
      const name = tree === host.packageDir ? 'package' : tree.startsWith(versions) ? `versions/${tree.slice(versions.length)}` : tree;
      return { decision, version, tree: name, args };
    });
}

// A copy of the launcher with `edits` made, each of which must apply: a deliberately wrong
// launcher, to show that a test catches what it is about.
export function wrongLauncher(dir: string, name: string, edits: [string | RegExp, string][]): string {
  let text = readFileSync(LAUNCHER, 'utf8');
  for (const [from, to] of edits) {
    const next = text.replace(from, to);
    if (next === text) throw new Error(`the wrong launcher ${name}: ${String(from)} is not in systemd/steward-launcher any more`);
    text = next;
  }
  const file = path.join(dir, `launcher-${name}`);
  writeFileSync(file, text, { mode: 0o755 });
  return file;
}

// Whether `sh -n` (dash) accepts a script.
export function shellParses(file: string): boolean {
  return spawnSync(SHELL, ['-n', file]).status === 0;
}
