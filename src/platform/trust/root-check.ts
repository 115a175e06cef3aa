// Whether bytes can be a host's trusted TUF root (docs/design.md §21): TUF root metadata whose own
// keys meet its root threshold (the check tuf-js makes of the root it starts from), naming a
// director key steward can read. agentctl checks a file with it before handing it to the helper,
// which checks it again (and its version against the root it trusts).
import { Metadata, MetadataKind, type Root } from '@tufjs/models';
import { directorKeysOf } from './directive.js';

export function checkTrustRoot(bytes: Buffer): { root: Metadata<Root> } | { why: string } {
  let root: Metadata<Root>;
  try {
    root = Metadata.fromJSON(MetadataKind.Root, JSON.parse(bytes.toString('utf8')));
  } catch (err) {
    return { why: `it is not TUF root metadata (${(err as Error).message})` };
  }
  if (root.signed.type !== MetadataKind.Root) return { why: `it is ${root.signed.type} metadata, not a root` };
  try {
    root.verifyDelegate(MetadataKind.Root, root);
  } catch (err) {
    return { why: `its own keys do not meet its root threshold (${(err as Error).message})` };
  }
  try {
    if (directorKeysOf(root).size === 0) return { why: 'it names no director key (the signed field x-steward-director)' };
  } catch (err) {
    return { why: (err as Error).message };
  }
  return { root };
}
