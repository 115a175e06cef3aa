import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Metadata, MetadataKind, Root, Snapshot, Targets } from '@tufjs/models';
import { REPO } from '../helpers/host.js';

// @tufjs/models 4.1 builds every map it parses or serializes (a root's keys and roles, a
// snapshot's meta, a targets' targets, a delegation's keys and roles) with `reduce` over object
// spreads: each entry copies all the entries before it. That is quadratic in the entries: 740 ms
// to trust one update with 300 apps delegated, over a second for a delegation with 3,000 targets
// (bench/trust.ts). patches/@tufjs+models+4.1.1.patch, applied by `npm ci`'s postinstall
// (patch-package), builds them with Object.fromEntries instead: linear, and the same objects.
// These tests hold the patch applied (a fresh `npm ci` that skipped it fails here, not in a
// benchmark nobody runs) and the parsed and serialized forms the same as before it.

const dist = path.dirname(createRequire(path.join(REPO, 'package.json')).resolve('@tufjs/models'));

test('the installed @tufjs/models builds no map by spreading an accumulator (patches/ is applied)', () => {
  const spreads: string[] = [];
  for (const name of readdirSync(dist).filter((n) => n.endsWith('.js'))) {
    const lines = readFileSync(path.join(dist, name), 'utf8').split('\n');
    lines.forEach((line, i) => {
      if (/\.\.\.acc\b/.test(line) && !/TOP_LEVEL_ROLE_NAMES/.test(lines[i - 1] ?? '')) spreads.push(`${name}:${i + 1}: ${line.trim()}`);
    });
  }
  // The root's default roles (four names, when a root is made with none) are the one spread left.
  assert.deepEqual(spreads, [], 'run `npm ci` (its postinstall applies patches/) or check the patch still applies to this version');
});

type TargetsJson = Parameters<typeof Targets.fromJSON>[0];

// A delegation's roles, parsed as tuf-js parses them: within a top-level targets.
function delegationsOf(json: unknown): NonNullable<Targets['delegations']> {
  const t = Targets.fromJSON({ _type: 'targets', spec_version: '1.0.31', version: 1, expires: '2030-01-01T00:00:00Z', targets: {}, delegations: json } as TargetsJson);
  return t.delegations as NonNullable<Targets['delegations']>;
}

const KEY = { keytype: 'ed25519', scheme: 'ed25519', keyval: { public: 'a'.repeat(64) } };

function roundTrip<T>(json: T, parse: (j: T) => { toJSON(): unknown }): unknown {
  return JSON.parse(JSON.stringify(parse(structuredClone(json)).toJSON()));
}

test('targets, snapshot, delegations and root parse and serialize as the unpatched code did: every entry, in order, own properties only', () => {
  const target = JSON.stringify({ length: 3, hashes: { sha256: 'b'.repeat(64) } });
  // Parsed from text, as a metadata file off the wire is: `__proto__` is then an own key like
  // any other, and must stay one (never the map's prototype), as the spread kept it.
  const wire = JSON.parse(`{"_type":"targets","spec_version":"1.0.31","version":4,"expires":"2030-01-01T00:00:00Z",
    "targets":{"web/1.0.0/manifest.json":${target},"__proto__":${target},"constructor":${target},"web/1.0.1/manifest.json":${target}},
    "delegations":{"keys":{"k1":${JSON.stringify(KEY)},"__proto__":${JSON.stringify(KEY)},"k2":${JSON.stringify(KEY)}},
      "roles":[{"name":"app.web","keyids":["k1"],"threshold":1,"terminating":true,"paths":["web/*/*"]},
               {"name":"app.api","keyids":["k2"],"threshold":1,"terminating":true,"paths":["api/*/*"]}]}}`) as TargetsJson & { targets: Record<string, unknown> };
  const parsed = Targets.fromJSON(structuredClone(wire));
  assert.deepEqual(Object.keys(parsed.targets), Object.keys(wire.targets), 'every target, in the order of the file');
  assert.equal(Object.getPrototypeOf(parsed.targets), Object.prototype);
  assert.ok(Object.hasOwn(parsed.targets, '__proto__'), '__proto__ is an own target');
  assert.deepEqual(roundTrip(wire, (j) => Targets.fromJSON(j)), wire);
  assert.deepEqual(Object.keys(parsed.delegations?.keys ?? {}), ['k1', '__proto__', 'k2']);
  assert.equal(Object.getPrototypeOf(parsed.delegations?.keys), Object.prototype);
  assert.deepEqual(Object.keys(parsed.delegations?.roles ?? {}), ['app.web', 'app.api']);

  const snapshot = { _type: 'snapshot', spec_version: '1.0.31', version: 9, expires: '2030-01-01T00:00:00Z', meta: { 'targets.json': { version: 3 }, 'app.web.json': { version: 2 }, 'app.api.json': { version: 7 } } };
  assert.deepEqual(roundTrip(snapshot, (j) => Snapshot.fromJSON(j as TargetsJson)), snapshot);

  const root = {
    _type: 'root',
    spec_version: '1.0.31',
    version: 2,
    expires: '2030-01-01T00:00:00Z',
    consistent_snapshot: true,
    keys: { k1: KEY, k2: KEY },
    roles: { root: { keyids: ['k1'], threshold: 1 }, targets: { keyids: ['k1'], threshold: 1 }, snapshot: { keyids: ['k2'], threshold: 1 }, timestamp: { keyids: ['k2'], threshold: 1 } },
  };
  assert.deepEqual(roundTrip(root, (j) => Root.fromJSON(j as TargetsJson)), root);
  assert.deepEqual(Object.keys(Metadata.fromJSON(MetadataKind.Root, { signed: structuredClone(root), signatures: [] } as TargetsJson).signed.roles), ['root', 'targets', 'snapshot', 'timestamp']);
});

test('a delegation naming one role twice keeps the last, at the first one place, as the spread did', () => {
  const d = delegationsOf({
    keys: { k1: KEY },
    roles: [
      { name: 'app.web', keyids: ['k1'], threshold: 1, terminating: true, paths: ['web/*/*'] },
      { name: 'app.api', keyids: ['k1'], threshold: 1, terminating: true, paths: ['api/*/*'] },
      { name: 'app.web', keyids: ['k1'], threshold: 1, terminating: false, paths: ['other/*'] },
    ],
  });
  assert.deepEqual(Object.keys(d.roles ?? {}), ['app.web', 'app.api']);
  assert.deepEqual(d.roles?.['app.web']?.paths, ['other/*']);
});

test('malformed maps are refused with the messages tuf-js reads', () => {
  assert.throws(() => Targets.fromJSON({ _type: 'targets', spec_version: '1.0.31', version: 1, expires: '2030-01-01T00:00:00Z', targets: { a: 'x' } } as TargetsJson), /targets must be an object/);
  assert.throws(() => delegationsOf({ keys: { k: 'x' } }), /keys is malformed/);
  assert.throws(() => Snapshot.fromJSON({ _type: 'snapshot', spec_version: '1.0.31', version: 1, expires: '2030-01-01T00:00:00Z', meta: { a: 1 } } as TargetsJson), /meta field is malformed/);
});
