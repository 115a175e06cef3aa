import { ensureFreeSpace } from '../../platform/disk.js';
import { syncFileSystem } from '../../platform/exec.js';
import { copyLocalToFile, copyLocalToMemory } from '../../platform/copy-local.js';
import { fetchInto, fetchToFile } from '../../platform/http-fetch.js';
import { streamToFile, streamToMemory } from '../../platform/stream-to-file.js';
import { prepareExtraction } from '../../platform/tarball.js';
import type { StageIO } from './stage-io.js';

// The real side effects of staging.
export const realStageIO: StageIO = {
  fetchToFile,
  fetchInto,
  copyLocalToFile,
  streamToFile,
  copyLocalToMemory,
  streamToMemory,
  prepareExtraction,
  ensureFreeSpace,
  syncFileSystem,
};
