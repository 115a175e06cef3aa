// A command-line program whose reader went away (`steward-control nodes | head -1`): the next
// write to stdout fails with EPIPE, which Node raises as an 'error' event on process.stdout, and
// an unhandled one ends the program with a stack trace. As a program killed by SIGPIPE would, it
// stops writing and exits, quietly and with the exit code it had so far: the reader asked for no
// more. Only for commands that print and end; a daemon's stdout is not its purpose.
export function endQuietlyWhenStdoutCloses(): void {
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
    process.exit(typeof process.exitCode === 'number' ? process.exitCode : 0);
  });
}
