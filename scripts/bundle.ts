// Bundles each program with esbuild (docs/design.md §15): `npm run build` (and `prepare`, which `npm ci`
// runs) compiles with tsc, then this bundles tsc's output into dist/bundle/<program>/, one
// folder per program so that a program's folder is all it needs (the agent's release carries
// its folder alone). Each folder holds the program's entry `<program>.js`, the extraction
// worker `tarball-worker.js` when the program stages, the chunks of what the program loads
// only when needed (agentctl's commands, enrollment), so that lazy imports stay lazy, and
// agentctl's and steward-control's command runners, `run-<module>.js`, each built alone (Program.separate). Native
// addons (better-sqlite3) stay outside, imported from node_modules. dist/bundle/<program>.meta.json
// is esbuild's metafile (of all the program's builds): which source files each output file holds,
// read by the tests that hold what a daemon loads.
//
//   node dist/scripts/bundle.js
import { build, type Metafile, type Plugin } from 'esbuild';
import { cpSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface Program {
  name: string;
  // tsc's output of the program's entry module, relative to the checkout.
  entry: string;
  // Folders the program reads beside its code, relative to the checkout, copied into its bundle's
  // folder under their base name (the dashboard: src/control/admin/ui-files.ts).
  assets?: string[];
  // A folder of tsc's output, relative to the checkout, whose modules the program's entry imports
  // one at a time (agentctl's command runners, src/cli/main.ts): each is bundled by a build of its
  // own into `<folder name>-<module>.js`, so that it shares no chunk with the entry or with another
  // and a run loads that one file (and the chunks of what it imports only when needed). The
  // entry's build imports them by that name.
  separate?: string;
  // Packages that the program's code imports by their default export only, bundled once into
  // `<package>.js` beside the rest and imported from there by every build of the program: with
  // `separate`, each build would otherwise carry a copy of its own (pg: 150 KB in each of twelve
  // runners). A package here must hold no steward code: one file, one instance in a process.
  shared?: string[];
}

export const PROGRAMS: Program[] = [
  { name: 'agentctl', entry: 'dist/src/cli/main.js', separate: 'dist/src/cli/run' },
  { name: 'steward-helper', entry: 'dist/src/helper/main.js' },
  { name: 'steward-agent', entry: 'dist/src/agent/main.js' },
  { name: 'steward-control', entry: 'dist/src/control/cli/start.js', assets: ['dist/src/ui'], separate: 'dist/src/control/cli/run', shared: ['pg'] },
];

// The extraction worker, its own entry in every program that stages: platform/tarball.ts starts
// it as `new URL('./tarball-worker.js', import.meta.url)`, i.e. beside whichever output file
// holds that code, and every output of a program sits in the program's one folder. The lstat
// worker of a stage from objects (platform/stat-ahead.ts, `./stat-worker.js`) likewise.
// The socket keeper (docs/design.md §17), likewise: sockets/keeper-client.ts starts
// `new URL('./socket-keeper.js', import.meta.url)` as a process of its own.
const WORKERS = [
  { name: 'tarball-worker', entry: 'dist/src/platform/tarball-worker.js', startedBy: 'dist/src/platform/tarball.js' },
  { name: 'stat-worker', entry: 'dist/src/platform/stat-worker.js', startedBy: 'dist/src/platform/stat-ahead.js' },
  { name: 'socket-keeper', entry: 'dist/src/helper/sockets/socket-keeper.js', startedBy: 'dist/src/helper/sockets/keeper-client.js' },
];

// Packages with a native addon: never bundled, resolved from node_modules where they run.
export const NATIVE = ['better-sqlite3'];

// Optional packages that a dependency require()s inside a try (debug asks for supports-color, pg for pg-native),
// not installed. Left as a require() they would be looked for on the host at run time, in any
// node_modules above the bundle (a file found there would run as the program's code): each is
// bundled as a module that throws as a missing package does, so the dependency behaves as now.
const ABSENT = ['supports-color', 'pg-native'];

const absentPackages: Plugin = {
  name: 'absent-packages',
  setup(b) {
    const filter = new RegExp(`^(${ABSENT.join('|')})$`);
    b.onResolve({ filter }, (args) => ({ path: args.path, namespace: 'absent' }));
    b.onLoad({ filter: /.*/, namespace: 'absent' }, (args) => ({
      contents: `throw Object.assign(new Error(${JSON.stringify(`Cannot find module '${args.path}'`)}), { code: 'MODULE_NOT_FOUND' });`,
      loader: 'js',
    }));
  },
};

// zod's namespaces re-export every locale (`z.locales`, `core.locales`: 63 files, ~330 KiB of
// source), and a namespace used as a value keeps all of its members in a bundle, so every daemon
// would hold them all in its heap. steward sets English only (src/core/zod-mini.ts): the locales
// index is bundled as one that holds `en` alone.
const englishOnly: Plugin = {
  name: 'zod-english-only',
  setup(b) {
    b.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) => (/[\\/]zod[\\/]/.test(args.importer) ? { path: path.join(path.dirname(args.importer), '..', 'locales', 'en.js'), namespace: 'zod-locales' } : undefined));
    b.onLoad({ filter: /.*/, namespace: 'zod-locales' }, (args) => ({ contents: `export { default as en } from ${JSON.stringify(args.path)};`, loader: 'js', resolveDir: path.dirname(args.path) }));
  },
};

// Leaves the imports of the modules of `dir` (absolute) as imports of the files their own builds
// write beside this one (Program.separate).
const separateModules = (dir: string): Plugin => ({
  name: 'separate-modules',
  setup(b) {
    b.onResolve({ filter: /^\.\.?\// }, (args) => {
      const target = path.resolve(args.resolveDir, args.path);
      return path.dirname(target) === dir ? { path: `./${separateName(dir, target)}.js`, external: true } : undefined;
    });
  },
});

// Leaves the imports of the packages of Program.shared as imports of the one file each is bundled in.
const sharedPackages = (names: string[]): Plugin => ({
  name: 'shared-packages',
  setup(b) {
    const filter = new RegExp(`^(${names.join('|')})$`);
    b.onResolve({ filter }, (args) => (args.kind === 'entry-point' ? undefined : { path: `./${args.path}.js`, external: true }));
  },
});

// The name of the output file of the separate module `file` of `dir`, without .js.
const separateName = (dir: string, file: string): string => `${path.basename(dir)}-${path.basename(file, '.js')}`;

export const BUNDLE_DIR = 'dist/bundle';

// The metafile of `program`'s build, relative to the checkout.
export const metafileOf = (program: string): string => `${BUNDLE_DIR}/${program}.meta.json`;

// Bundles one program into `repo`/dist/bundle/<name>/ and returns its metafile.
async function bundleProgram(repo: string, p: Program, workers: Array<(typeof WORKERS)[number]>): Promise<Metafile> {
  const outdir = path.join(repo, BUNDLE_DIR, p.name);
  // Why: a chunk of an earlier build (another hash) must not linger in the program's folder,
  // which is copied whole into the agent's release and /opt/steward/lib.
  rmSync(outdir, { recursive: true, force: true });
  const entryPoints: Record<string, string> = { [p.name]: path.join(repo, p.entry) };
  for (const w of workers) entryPoints[w.name] = path.join(repo, w.entry);
  const separateDir = p.separate ? path.join(repo, p.separate) : null;
  const shared = p.shared ?? [];
  const metas = [await bundleFiles(repo, outdir, entryPoints, separateDir, shared)];
  // Each shared package alone, without splitting: the file that every build imports it from.
  for (const name of shared) metas.push(await bundleFiles(repo, outdir, { [name]: name }, null, [], false));
  // One build per separate module: a build of several would put what they share in chunks. One
  // after the other, as two of them may write the same chunk (same content, same name).
  if (separateDir) {
    for (const f of readdirSync(separateDir).filter((n) => n.endsWith('.js')).sort()) {
      metas.push(await bundleFiles(repo, outdir, { [separateName(separateDir, f)]: path.join(separateDir, f) }, separateDir, shared));
    }
  }
  const meta: Metafile = { inputs: Object.assign({}, ...metas.map((m) => m.inputs)), outputs: Object.assign({}, ...metas.map((m) => m.outputs)) };
  // Anything else left outside would be resolved on the host at run time: refused here.
  const outputs = new Set(Object.keys(meta.outputs).map((o) => `./${path.basename(o)}`));
  for (const [out, o] of Object.entries(meta.outputs)) {
    for (const i of o.imports) {
      if (i.external && !i.path.startsWith('node:') && !builtinModules.includes(i.path) && !NATIVE.includes(i.path) && !outputs.has(i.path)) {
        throw new Error(`${out} imports ${i.path}, which is not bundled: bundle it, or name it in NATIVE or ABSENT (scripts/bundle.ts)`);
      }
    }
  }
  for (const a of p.assets ?? []) cpSync(path.join(repo, a), path.join(outdir, path.basename(a)), { recursive: true });
  return meta;
}

// One esbuild build of `entryPoints` into `outdir`; the modules of `separateDir` and the packages
// `shared` stay out of it.
async function bundleFiles(repo: string, outdir: string, entryPoints: Record<string, string>, separateDir: string | null, shared: string[], splitting = true): Promise<Metafile> {
  const r = await build({
    absWorkingDir: repo,
    entryPoints,
    outdir,
    bundle: true,
    splitting,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    entryNames: '[name]',
    chunkNames: '[name]-[hash]',
    external: NATIVE,
    plugins: [absentPackages, englishOnly, ...(separateDir ? [separateModules(separateDir)] : []), ...(shared.length ? [sharedPackages(shared)] : [])],
    // The CommonJS packages (commander, debug, proper-lockfile) call require() for node's own
    // modules; an ES module has no require of its own.
    banner: { js: "import { createRequire as __stewardRequire } from 'node:module';\nconst require = __stewardRequire(import.meta.url);" },
    // Why minified (whitespace and syntax, names kept for stack traces): a daemon keeps the source
    // of every file it loaded in its heap (the figure: bench/README.md, row 5, round 16).
    // The linked source maps lead back to src/*.ts through tsc's maps (node --enable-source-maps).
    minifyWhitespace: true,
    minifySyntax: true,
    sourcemap: 'linked',
    sourcesContent: false,
    metafile: true,
    logLevel: 'warning',
  });
  return r.metafile;
}

// The source files (relative to `repo`) that the outputs of `meta` hold.
function inputsOf(meta: Metafile): Set<string> {
  return new Set(Object.values(meta.outputs).flatMap((o) => Object.keys(o.inputs)));
}

// Bundles every program. A program whose code starts the extraction worker gets it as an entry;
// the check runs on the built graph, so a program that starts staging later cannot miss it.
export async function bundleAll(repo: string): Promise<void> {
  for (const p of PROGRAMS) {
    let meta = await bundleProgram(repo, p, []);
    const workers = WORKERS.filter((w) => inputsOf(meta).has(w.startedBy));
    if (workers.length > 0) meta = await bundleProgram(repo, p, workers);
    writeFileSync(path.join(repo, metafileOf(p.name)), JSON.stringify(meta));
  }
}

if (process.argv[1]?.endsWith('bundle.js')) {
  // dist/scripts/bundle.js -> the checkout
  await bundleAll(path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..'));
}
