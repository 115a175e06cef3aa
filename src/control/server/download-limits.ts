// The defaults of serve's download limits, apart from the server's code: `steward-control serve`
// shows them in its help, which registering the command loads nothing else for.

// How many artifact bodies one instance sends at once (`--max-downloads`); past it a download is
// answered 503 with a Retry-After, which the helper's fetch waits out (docs/design.md §13): a 10 %
// batch of a large fleet then queues instead of taking the network down. Who may take which slot:
// download-access.ts.
export const DEFAULT_MAX_DOWNLOADS = 64;

// The slowest download kept (issue 31 item 11): one that moves fewer than `bytesPerSecond` over
// a window of `windowMs` (measured as bytes handed to the connection) is cut, freeing its slot.
// The default is the helper's own floor (fetch.minBytesPerSecond, 1024 B/s over 30 s): a
// helper slower than that gives up by itself. Kernel buffers take the first megabytes of a
// body at once, so a reader that stalls is cut within two windows.
export interface MinDownloadRate {
  bytesPerSecond: number;
  windowMs: number;
}
export const DEFAULT_MIN_DOWNLOAD_RATE: MinDownloadRate = { bytesPerSecond: 1024, windowMs: 30_000 };
