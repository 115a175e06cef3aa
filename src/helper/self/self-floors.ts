import { isVersion } from '../../core/version.js';
import type { VersionFloor } from '../stage/refusals.js';
import type { SelfSeams } from './self-seams.js';

// The versions an update of the app steward may not go below besides its highest active one
// (docs/self-update.md, "Floors"): the installed package's version, which the launcher always
// boots and no socket goes below (a package is apt's: an older one is installed with apt); and
// the version this helper runs, which only an admin's --allow-downgrade goes below. So a member
// of group steward, over helper.sock, moves steward only forward, even on a host where no
// version of it was ever `active` (a package install, before any self-update).
export function selfFloors(self: SelfSeams | undefined): VersionFloor[] {
  if (!self) return [];
  const floors: VersionFloor[] = [];
  if (self.packageVersion !== null) {
    floors.push({ version: self.packageVersion, what: `the version of the installed package (the floor the launcher always boots; install an older package to go lower)`, insist: false });
  }
  if (isVersion(self.ownVersion)) floors.push({ version: self.ownVersion, what: 'the version this helper runs', insist: true });
  return floors;
}
