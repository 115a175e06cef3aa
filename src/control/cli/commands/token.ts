import type { Command } from 'commander';
import { StewardError } from '../../../core/errors.js';
import { formatLabels, parseLabels } from '../../../core/labels.js';
import { printJson, table, when } from '../../../cli/output.js';
import { createToken } from '../../enroll/tokens.js';
import type { TokenRow } from '../../store/store.js';
import { jsonOf, withStore } from '../context.js';
import { parseDuration } from '../parse-options.js';

const collect = (v: string, acc: string[]) => [...acc, v];

// What `token list` shows of a token: its state at `now`.
function tokenState(t: TokenRow, now: number): 'used' | 'revoked' | 'expired' | 'valid' {
  if (t.usedAt !== null) return 'used';
  if (t.revokedAt !== null) return 'revoked';
  return t.expiresAt <= now ? 'expired' : 'valid';
}

// `steward-control token create [--ttl 1h] [--label k=v]...`, `token list`, `token revoke <id>`
export function registerToken(program: Command): void {
  const token = program.command('token').description('enrollment tokens');
  token
    .command('create')
    .description('create a single-use enrollment token (shown once; only its hash is stored)')
    .option('--ttl <duration>', 'how long it stays valid', '1h')
    .option('--label <k=v>', 'a label the enrolled node gets (repeatable)', collect, [] as string[])
    .action(async (o: { ttl: string; label: string[] }, cmd: Command) => {
      const ttlMs = parseDuration(o.ttl, '--ttl');
      const labels = parseLabels(o.label, '--label');
      if (Object.keys(labels).some((k) => k.startsWith('claimed.'))) throw new StewardError('USAGE', '--label: claimed.* keys are what a node proposes itself; a token carries plain keys');
      const t = await withStore(cmd, (store) => store.write((tx) => createToken(tx, ttlMs, labels)));
      if (jsonOf(cmd)) return printJson(t);
      process.stdout.write(t.token + '\n');
      process.stderr.write(`steward-control: token ${t.id} valid until ${when(t.expiresAt)}, for one enrollment${Object.keys(labels).length ? `; its node gets ${formatLabels(labels)}` : ''}\n`);
    });
  token
    .command('list')
    .description('every enrollment token: id, state, labels, the node that used it')
    .action(async (_o: unknown, cmd: Command) => {
      const { tokens, now } = await withStore(cmd, (store) => store.read(async (tx) => ({ tokens: await tx.tokens.list(), now: await tx.now() })));
      const view = tokens.map((t) => ({ ...t, state: tokenState(t, now) }));
      if (jsonOf(cmd)) return printJson({ tokens: view });
      const rows = [['ID', 'STATE', 'CREATED', 'EXPIRES', 'USED BY', 'LABELS']];
      for (const t of view) rows.push([t.id, t.state, when(t.createdAt), when(t.expiresAt), t.usedBy ?? '-', formatLabels(t.labels)]);
      process.stdout.write(view.length ? table(rows) : 'no tokens\n');
    });
  token
    .command('revoke <id>')
    .description('revoke an unused token (it enrolls nothing from now on)')
    .action(async (id: string, _o: unknown, cmd: Command) => {
      const t = await withStore(cmd, (store) => store.write(async (tx) => tx.tokens.revoke(id, await tx.now())));
      if (!t) throw new StewardError('NOT_FOUND', `no token ${JSON.stringify(id)} (\`steward-control token list\`)`);
      if (t.usedAt !== null) throw new StewardError('TOKEN_INVALID', `token ${id} was already used by node ${t.usedBy}; remove the node instead (\`steward-control nodes remove ${t.usedBy}\`)`);
      if (jsonOf(cmd)) return printJson({ revoked: t.id, revokedAt: t.revokedAt });
      process.stdout.write(`revoked ${t.id}\n`);
    });
}
