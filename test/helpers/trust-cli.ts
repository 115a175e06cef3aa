// The trust CLI's tests' tools: steward-control run through --server at a fake (or real) admin
// listener with an operator token, and Ed25519 key files written as an operator keeps them.
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { CONTROL_BIN } from './serve-process.js';

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
  json: any;
}

export function controlAt(server: string, args: string[], token = `so_${'T'.repeat(32)}`): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CONTROL_BIN, '--server', server, ...args], { env: { ...process.env, STEWARD_CONTROL_TOKEN: token, STEWARD_CONTROL_DB: '', STEWARD_CONTROL_URL: '' }, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      let json: unknown;
      try {
        json = JSON.parse(stdout);
      } catch {
        /* not JSON */
      }
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr, json });
    });
  });
}

export interface KeyFiles {
  name: string;
  key: string;
  pub: string;
}

// DIR/NAME.key (PKCS#8 PEM) and DIR/NAME.pub (SPKI PEM), as `steward-control keys create` writes them.
export function writeKeyPair(dir: string, name: string): KeyFiles {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const key = path.join(dir, `${name}.key`);
  const pub = path.join(dir, `${name}.pub`);
  writeFileSync(key, privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600 });
  writeFileSync(pub, publicKey.export({ format: 'pem', type: 'spki' }));
  return { name, key, pub };
}
