import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { generateKeyPair } from '../../src/platform/keys.js';
import { runIn as run, shIn as sh, writeIn } from '../helpers/container-exec.js';
import { bootOrSkip, CONTAINER_REPO, type SystemdContainer } from '../helpers/systemd-container.js';

// The attack (issue 15 item 13): `agentctl install` handed a bad input — the agent release
// key's private half, a missing file, a host config root must not trust or cannot load, a folder
// it would write into that another user owns — used to fail only when it reached that input,
// after it had made the user, the units, the code and the config, and maybe copied the private
// key's bytes. Every input is checked first: each of these is refused and nothing is written.
// Under a real systemd (a booted container), where a good install does write all of that.

const AGENTCTL = `${CONTAINER_REPO}/bin/agentctl.js`;

// Everything install writes or makes, as one listing (path, mode, owner, size), and whether the
// user steward exists. Equal before and after: nothing was written.
async function hostState(box: SystemdContainer): Promise<string> {
  const places = '/etc/steward /opt/steward /var/lib/steward /var/lib/steward-agent /run/steward /etc/sysusers.d /etc/tmpfiles.d /etc/systemd/system';
  const files = await sh(box, `find ${places} -printf '%p %m %u %s\\n' 2>/dev/null | sort; true`);
  const user = await run(box, 'getent', ['passwd', 'steward']);
  return `${files.stdout}user steward: ${user.code === 0 ? 'exists' : 'absent'}\n`;
}

interface BadInput {
  name: string;
  // Makes the scenario's files in the container; returns install's extra arguments.
  setup(box: SystemdContainer): Promise<string[]>;
  code: string;
  says: RegExp;
}

const privatePem = generateKeyPair().privatePem;
const rsaPublicPem = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ type: 'spki', format: 'pem' }).toString();

const BAD: BadInput[] = [
  {
    name: '--agent-key is a private key',
    setup: async (box) => (await writeIn(box, '/root/agent.key', privatePem), ['--agent-key', '/root/agent.key']),
    code: 'USAGE',
    says: /--agent-key \/root\/agent\.key holds a private key/,
  },
  {
    name: '--agent-key names a missing file',
    setup: async () => ['--agent-key', '/root/no-such.pub'],
    code: 'NOT_FOUND',
    says: /--agent-key \/root\/no-such\.pub: .*ENOENT/,
  },
  {
    name: '--agent-key is an RSA public key',
    setup: async (box) => (await writeIn(box, '/root/rsa.pub', rsaPublicPem), ['--agent-key', '/root/rsa.pub']),
    code: 'USAGE',
    says: /--agent-key \/root\/rsa\.pub is not an Ed25519 public key/,
  },
  {
    name: 'a root prefix is given',
    setup: async () => ['--root', '/var/tmp'],
    code: 'USAGE',
    says: /--root is not supported/,
  },
  {
    name: 'the existing host config is not JSON',
    setup: async (box) => (await sh(box, 'mkdir -p /etc/steward && echo "{ not json" > /etc/steward/steward.json'), []),
    code: 'CONFIG_INVALID',
    says: /\/etc\/steward\/steward\.json: not valid JSON/,
  },
  {
    name: 'the existing host config is writable by others',
    setup: async (box) => (await sh(box, 'mkdir -p /etc/steward && echo \'{"apps":{}}\' > /etc/steward/steward.json && chmod 666 /etc/steward/steward.json'), []),
    code: 'CONFIG_INVALID',
    says: /\/etc\/steward\/steward\.json is not trusted: .*writable by group or others \(mode 666\)/,
  },
  {
    name: 'the existing host config names an app user that does not exist',
    setup: async (box) => {
      await sh(box, 'mkdir -p /etc/steward');
      await writeIn(box, '/etc/steward/steward.json', JSON.stringify({ apps: { web: { user: 'nosuchuser', group: 'root' } } }));
      return [];
    },
    code: 'CONFIG_INVALID',
    says: /apps\.web\.user: no user named nosuchuser/,
  },
  {
    name: '/opt/steward is owned by another user',
    setup: async (box) => (await sh(box, 'mkdir -p /opt/steward && chown 65534:65534 /opt/steward'), []),
    code: 'ROOT_UNSAFE',
    says: /refusing to install into \/opt\/steward.*: \/opt\/steward is owned by uid 65534, not root/,
  },
  {
    name: 'the existing helper key is not a key',
    setup: async (box) => (await sh(box, 'mkdir -p -m 700 /var/lib/steward/keys && echo garbage > /var/lib/steward/keys/helper.key && chmod 600 /var/lib/steward/keys/helper.key'), []),
    code: 'STATE_INVALID',
    says: /helper\.key: not an Ed25519 private key/,
  },
];

test('agentctl install refuses each bad input before it changes anything', { timeout: 300_000 }, async (t) => {
  const box = await bootOrSkip(t);
  if (!box) return;
  t.after(() => box.stop());
  for (const bad of BAD) {
    await t.test(bad.name, async () => {
      const args = await bad.setup(box);
      const before = await hostState(box);
      try {
        const r = await run(box, '/usr/bin/node', [AGENTCTL, 'install', ...args, '--json'], 180_000);
        assert.notEqual(r.code, 0, r.text);
        assert.equal(r.json?.error?.code, bad.code, r.text);
        assert.match(r.json.error.message, bad.says);
        assert.equal(await hostState(box), before, 'install wrote nothing');
        // The private key's bytes are nowhere install writes (nor anywhere else in /etc, /opt, /var).
        const body = privatePem.split('\n')[1] as string;
        assert.equal((await run(box, 'grep', ['-rlF', body, '/etc', '/opt/steward', '/var/lib'])).stdout, '');
      } finally {
        await sh(box, 'rm -rf /etc/steward /opt/steward /var/lib/steward /root/agent.key /root/rsa.pub');
      }
    });
  }
});
