import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import tls from 'node:tls';

// Self-signed certificates made with openssl, for the tests and benches that serve https.

export const EC_P256 = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1'];
export const RSA_2048 = ['-newkey', 'rsa:2048'];

export function hasOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

// A certificate for localhost and 127.0.0.1, valid one day, in `dir`: `<name>.key` and
// `<name>.pem`, with their bytes. `newKey`: openssl's key arguments (default EC P-256).
export function selfSignedCert(dir: string, name = 'cert', newKey = EC_P256): { keyFile: string; certFile: string; key: Buffer; cert: Buffer } {
  const keyFile = path.join(dir, `${name}.key`);
  const certFile = path.join(dir, `${name}.pem`);
  execFileSync('openssl', ['req', '-x509', ...newKey, '-nodes', '-keyout', keyFile, '-out', certFile, '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'], { stdio: 'ignore' });
  return { keyFile, certFile, key: readFileSync(keyFile), cert: readFileSync(certFile) };
}

// One TLS connection to 127.0.0.1:`port` as `localhost`, trusting `ca`, offering `session`: the
// certificate the server showed (its sha256), whether the session was resumed, and the session
// the server gave (TLS 1.3 sends it after the handshake, so a connection that offered none waits
// for it).
export function tlsConnect(port: number, ca: Buffer | Buffer[], session?: Buffer): Promise<{ cert: string; reused: boolean; session: Buffer | undefined }> {
  return new Promise((resolve, reject) => {
    let got: Buffer | undefined;
    const s = tls.connect({ host: '127.0.0.1', port, servername: 'localhost', ca, ...(session ? { session } : {}) }, () => {
      const cert = s.getPeerX509Certificate()?.fingerprint256 ?? '';
      const reused = s.isSessionReused();
      const end = () => {
        s.end();
        resolve({ cert, reused, session: got });
      };
      if (got || session) end();
      else s.once('session', end);
    });
    s.on('session', (x: Buffer) => (got = x));
    s.on('error', reject);
  });
}
