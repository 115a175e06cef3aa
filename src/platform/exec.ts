import { execa } from 'execa';

// Durable tree (DESIGN §2): one syncfs of the file system holding `dir` (`sync -f`)
// instead of an fsync per extracted file.
export async function syncFileSystem(dir: string): Promise<void> {
  await execa('sync', ['-f', dir], { extendEnv: false, env: { PATH: '/usr/local/bin:/usr/bin:/bin' }, stdin: 'ignore' });
}
