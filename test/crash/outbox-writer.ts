// The traced program of the explorer's outbox scenario: the agent's real Outbox (src/agent/
// outbox.ts) taking receipts and removing acknowledged ones, step by step as a heartbeat loop
// would. argv: <outbox.json> <plan.json>; plan = {publicPem, steps: [{take: envelopes} | {ack: seqs}]}.
import { readFileSync } from 'node:fs';
import { Outbox } from '../../src/agent/outbox.js';
import type { Envelope } from '../../src/core/release-schemas.js';
import { parsePublicKey } from '../../src/platform/keys.js';

type Step = { take: Envelope[] } | { ack: number[] };

const [file, planFile] = process.argv.slice(2) as [string, string];
const plan = JSON.parse(readFileSync(planFile, 'utf8')) as { publicPem: string; steps: Step[] };
const key = parsePublicKey(plan.publicPem);
const outbox = await Outbox.open(file);
for (const step of plan.steps) {
  if ('take' in step) await outbox.take(key, step.take);
  else await outbox.ack(step.ack);
}
process.stdout.write(JSON.stringify({ highestSeq: outbox.highestSeq, pending: outbox.pendingSeqs }) + '\n');
