import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
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

// A private CA and a certificate it signed for localhost and 127.0.0.1, valid one day, in `dir`
// (as a fleet with its own CA has): `ca.pem` (what a host trusts), and the server's key and
// certificate (the leaf alone, as servers send it: a client that does not trust the CA gets
// UNABLE_TO_VERIFY_LEAF_SIGNATURE).
export function privateCa(dir: string, name = 'ca'): { caFile: string; ca: Buffer; key: Buffer; cert: Buffer } {
  const f = (s: string) => path.join(dir, `${name}-${s}`);
  const run = (args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' });
  run(['req', '-x509', ...EC_P256, '-nodes', '-keyout', f('ca.key'), '-out', f('ca.pem'), '-days', '1', '-subj', `/CN=steward test ${name}`, '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
  run(['req', ...EC_P256, '-nodes', '-keyout', f('server.key'), '-out', f('server.csr'), '-subj', '/CN=localhost']);
  writeFileSync(f('server.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n');
  run(['x509', '-req', '-in', f('server.csr'), '-CA', f('ca.pem'), '-CAkey', f('ca.key'), '-set_serial', '1', '-days', '1', '-out', f('server.pem'), '-extfile', f('server.ext')]);
  return { caFile: f('ca.pem'), ca: readFileSync(f('ca.pem')), key: readFileSync(f('server.key')), cert: readFileSync(f('server.pem')) };
}
