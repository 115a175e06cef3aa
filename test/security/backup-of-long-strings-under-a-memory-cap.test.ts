// A backup file of long strings must not take a restore's memory: the file that took 4.3 GiB and
// aborted (leaving its temporary database beside the target) was rows of 15 MiB strings, each
// under the old 16 MiB line limit, held by the hundred before their batch went to the database.
// Now a line is at most MAX_LINE_BYTES, a column at most its own bound, a batch at most
// ROW_BATCH_BYTES: under a 96 MiB heap, such files are refused BACKUP_INVALID, the target left
// as it was with no temporary file beside it.
import { test } from 'node:test';
import { createWriteStream } from 'node:fs';
import path from 'node:path';
import { once } from 'node:events';
import { constants as zc, createGzip } from 'node:zlib';
import { backupBody, restoreRefusedInvalid, testBackupKey } from '../helpers/backup-file.js';
import { cliJson } from '../helpers/control-daemon-nodes.js';
import { controlCli } from '../helpers/fleet.js';
import { describeEachBackend, type StoreBackend } from '../helpers/store-backends.js';
import { scratchDir } from '../helpers/scratch.js';

const tmp = () => scratchDir('steward-long-backup-');
const MiB = 1024 * 1024;
const HEAP = ['--max-old-space-size=96'];

// A real signed backup's header, then table `settings` with `rows` rows whose value is `chars`
// characters long, gzipped as it is written (the test never holds the file in memory). No end
// line: the restore must refuse it long before.
async function longStringsFile(backend: StoreBackend, rows: number, chars: number): Promise<string> {
  const dir = tmp();
  const db = await backend.createDatabase();
  const real = path.join(dir, 'real.backup');
  await cliJson({ cli: (a: string[]) => controlCli(db, ['--artifacts', path.join(dir, 'artifacts'), ...a]) }, ['backup', '--key', testBackupKey().key, '--out', real]);
  const [header] = backupBody(real);
  const file = path.join(dir, 'long-strings.backup');
  const gz = createGzip({ level: zc.Z_BEST_SPEED });
  const out = gz.pipe(createWriteStream(file));
  const write = async (b: Buffer | string) => {
    if (!gz.write(b)) await once(gz, 'drain');
  };
  await write(JSON.stringify(header) + '\n' + JSON.stringify({ table: 'settings', columns: ['key', 'value'] }) + '\n');
  const piece = Buffer.alloc(MiB, 'x');
  for (let i = 0; i < rows; i++) {
    await write(`["k${i}","`);
    for (let left = chars; left > 0; left -= MiB) await write(left >= MiB ? piece : piece.subarray(0, left));
    await write('"]\n');
  }
  gz.end();
  await once(out, 'close');
  return file;
}

describeEachBackend((backend) => {
  test('rows of 15 MiB strings are refused under a 96 MiB heap, leaving no temporary file', { timeout: 300_000 }, async () => {
    await restoreRefusedInvalid(backend, await longStringsFile(backend, 24, 15 * MiB), /a line longer than/, { nodeArgs: HEAP });
  });

  test('rows just under the line limit are refused at their first row by the column bound', { timeout: 300_000 }, async () => {
    await restoreRefusedInvalid(backend, await longStringsFile(backend, 200, 2 * MiB - 64), /row 1 of table settings: column value holds \d+ characters of text, more than its 65536/, { nodeArgs: HEAP });
  });
});
