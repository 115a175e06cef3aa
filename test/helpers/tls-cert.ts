import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

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
