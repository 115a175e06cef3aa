// Signing and opening directives (docs/design.md §21.1): envelopes of docs/design.md §6 under the
// domain steward-directive-v1, by the director key the fleet's TUF root lists in its signed field
// x-steward-director. The root's keys come under TUF's key ids; an envelope names its key by the
// keyId of docs/design.md §6, so directorKeysOf maps the one to the other.
import type { KeyObject } from 'node:crypto';
import type { Metadata, Root } from '@tufjs/models';
import { DIRECTIVE_CLOCK_SKEW_MS, directivePayloadSchema, MAX_DIRECTIVE_LIFETIME_MS, type DirectivePayload } from '../../core/trust/directive-schema.js';
import { DIRECTOR_FIELD } from '../../core/trust/roles.js';
import type { Envelope } from '../../core/release-schemas.js';
import { DOMAINS, keyIdOf, openEnvelope, signEnvelope } from '../keys.js';
import { publicKeyOfTufKey } from './tuf-keys.js';

// Signs a directive with the director's private key; throws on a payload the schema refuses or
// one that holds longer than a day.
export function signDirective(payload: DirectivePayload, directorKey: KeyObject): Envelope {
  const p = directivePayloadSchema.parse(payload);
  if (p.notAfter <= p.issuedAt || p.notAfter - p.issuedAt > MAX_DIRECTIVE_LIFETIME_MS) {
    throw new RangeError('a directive holds after its issuedAt and for at most 24 hours');
  }
  return signEnvelope(DOMAINS.directive, p, directorKey);
}

// The director's keys a root lists, by their docs/design.md §6 keyId, as openEnvelope takes
// them. A root without the field lists none; a malformed field, a threshold other than 1 (an
// envelope carries one signature) or a key the root does not hold or that is not Ed25519 throws:
// the root is signed by its keys' threshold, so that is an operator's error to show, not to skip.
export function directorKeysOf(root: Metadata<Root> | Root): Map<string, KeyObject> {
  const signed = 'signed' in root ? root.signed : root;
  const field = signed.unrecognizedFields[DIRECTOR_FIELD];
  const out = new Map<string, KeyObject>();
  if (field === undefined) return out;
  const f = field as { keyids?: unknown; threshold?: unknown };
  if (typeof f !== 'object' || f === null || !Array.isArray(f.keyids) || f.keyids.some((id) => typeof id !== 'string') || f.threshold !== 1) {
    throw new TypeError(`the root's ${DIRECTOR_FIELD} is not {keyids: [...], threshold: 1}`);
  }
  for (const id of f.keyids as string[]) {
    const key = signed.keys[id];
    if (!key) throw new TypeError(`the root's ${DIRECTOR_FIELD} names key ${id}, which the root does not hold`);
    const pub = publicKeyOfTufKey(key);
    out.set(keyIdOf(pub), pub);
  }
  return out;
}

export type DirectiveRefusal =
  | 'unknown-key'
  | 'bad-signature'
  | 'bad-encoding'
  | 'bad-json'
  | 'malformed'
  | 'wrong-node'
  | 'wrong-app'
  | 'wrong-version'
  | 'too-long'
  | 'not-yet-valid'
  | 'expired';

export type DirectiveResult = { ok: true; directive: DirectivePayload; keyId: string } | { ok: false; reason: DirectiveRefusal; message: string };

export interface DirectiveExpectation {
  nodeId: string;
  app: string;
  version: string;
  // The host's clock, epoch ms.
  now: number;
}

// Opens a directive for this node, app and version at `now`: the signature over the exact
// payload bytes by a director key first, then the payload. Each refusal names its check.
export function openDirective(envelope: Envelope, directorKeys: ReadonlyMap<string, KeyObject>, expect: DirectiveExpectation): DirectiveResult {
  const opened = openEnvelope(envelope, DOMAINS.directive, directorKeys);
  if (!opened.ok) {
    const message = {
      'unknown-key': `key ${envelope.keyId} is not a director key of the root`,
      'bad-signature': 'the signature does not verify',
      'bad-encoding': 'the payload or signature is not strict base64',
      'bad-json': 'the payload is not JSON',
    }[opened.reason];
    return { ok: false, reason: opened.reason, message };
  }
  const r = directivePayloadSchema.safeParse(opened.payload);
  if (!r.success) return { ok: false, reason: 'malformed', message: 'the payload is not a directive' };
  const d = r.data;
  if (d.nodeId !== expect.nodeId) return { ok: false, reason: 'wrong-node', message: `the directive is for node ${d.nodeId}` };
  if (d.app !== expect.app) return { ok: false, reason: 'wrong-app', message: `the directive is for app ${d.app}` };
  if (d.version !== expect.version) return { ok: false, reason: 'wrong-version', message: `the directive is for version ${d.version}` };
  if (d.notAfter <= d.issuedAt || d.notAfter - d.issuedAt > MAX_DIRECTIVE_LIFETIME_MS) {
    return { ok: false, reason: 'too-long', message: 'the directive holds for more than 24 hours (or not after its issuedAt)' };
  }
  if (d.issuedAt > expect.now + DIRECTIVE_CLOCK_SKEW_MS) {
    return { ok: false, reason: 'not-yet-valid', message: `the directive was issued ${d.issuedAt - expect.now} ms ahead of this host's clock` };
  }
  if (expect.now >= d.notAfter) return { ok: false, reason: 'expired', message: `the directive expired ${expect.now - d.notAfter} ms ago` };
  return { ok: true, directive: d, keyId: opened.keyId };
}
