import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import { REPO } from '../helpers/host.js';
import { decodeGolden, encodeGolden, type Json } from '../helpers/golden-encoding.js';
import { heartbeatEnvelopeSchema } from '../../src/control/heartbeat/verify-heartbeat.js';
import { actedFileSchema, controlPlaneFileSchema, seqFileSchema } from '../../src/agent/agent-file-schemas.js';
import { enrollmentFileSchema } from '../../src/agent/enrollment-schema.js';
import { hostConfigSchema } from '../../src/core/config-schema.js';
import { errorAnswerSchema, heartbeatAnswerSchema } from '../../src/core/control-api.js';
import { heartbeatAppSchema } from '../../src/core/heartbeat-schema.js';
import { journalSchema } from '../../src/core/journal-schema.js';
import { outboxFileSchema } from '../../src/core/outbox-schema.js';
import { receiptPayloadSchema, receiptSeqFileSchema, receiptsFileSchema } from '../../src/core/receipt-schema.js';
import { relayMarkSchema } from '../../src/core/relay-mark.js';
import { manifestPayloadSchema, markerSchema, releaseFileSchema } from '../../src/core/release-schemas.js';
import { runRecordSchema } from '../../src/core/run-record-schema.js';
import { appStateSchema, quarantineEntrySchema } from '../../src/core/state-schemas.js';
import { nodeStateSchema } from '../../src/host/node-state-schema.js';
import { ALL_OPS } from '../../src/protocol/ops.js';
import { progressEventSchema, requestEnvelopeSchema, requestSchemas, responseSchema } from '../../src/protocol/schemas.js';

// Every JSON shape is one zod schema (docs/design.md §15). Before the hand-written checkers that stood
// beside the schemas went (issue 16), their verdicts on the inputs of their property tests were
// recorded here, one file per shape (test/golden/<shape>.json; the encoding of inputs JSON
// cannot hold is test/helpers/golden-encoding.ts; the recording code, check-arbitraries.ts and
// golden-selection.ts, went with the last checker). Each schema must reproduce every verdict:
// the same inputs refused, the others accepted with the same value (defaults filled in; a case
// without `value` returned its input).
//
// A deliberate change to a shape changes verdicts: STEWARD_GOLDEN_WRITE=1 rewrites the files from
// the schemas, and the diff (one case a line) shows each verdict that moved, for review.

interface SchemaLike {
  safeParse(v: unknown): { success: true; data: unknown } | { success: false };
}
const SCHEMAS: Record<string, SchemaLike> = {
  'host-config': hostConfigSchema,
  journal: journalSchema,
  'app-state': appStateSchema,
  'quarantine-entry': quarantineEntrySchema,
  'run-record': runRecordSchema,
  marker: markerSchema,
  'manifest-payload': manifestPayloadSchema,
  'release-file': releaseFileSchema,
  'receipt-payload': receiptPayloadSchema,
  'receipts-file': receiptsFileSchema,
  'receipt-seq-file': receiptSeqFileSchema,
  'relay-mark': relayMarkSchema,
  'node-state': nodeStateSchema,
  'request-envelope': requestEnvelopeSchema,
  ...Object.fromEntries(ALL_OPS.map((op) => [`request.${op}`, requestSchemas[op]])),
  'agent-seq-file': seqFileSchema,
  'agent-acted-file': actedFileSchema,
  'agent-control-plane-file': controlPlaneFileSchema,
  'outbox-file': outboxFileSchema,
  'enrollment-file': enrollmentFileSchema,
  'heartbeat-app': heartbeatAppSchema,
  'progress-event': progressEventSchema,
  response: responseSchema,
  'heartbeat-answer': heartbeatAnswerSchema,
  'error-answer': errorAnswerSchema,
  'heartbeat-envelope': heartbeatEnvelopeSchema,
};

const DIR = path.join(REPO, 'test/golden');
const WRITE = process.env.STEWARD_GOLDEN_WRITE === '1';

interface GoldenCase {
  input: Json;
  accepted: boolean;
  value?: Json;
}
interface GoldenFile {
  shape: string;
  cases: GoldenCase[];
}

test('every golden file has its schema here, and every schema here its golden file', () => {
  const files = readdirSync(DIR).filter((f) => f.endsWith('.json')).map((f) => f.slice(0, -'.json'.length));
  assert.deepEqual(files.sort(), Object.keys(SCHEMAS).sort());
});

for (const [shape, schema] of Object.entries(SCHEMAS)) {
  test(`the ${shape} schema reproduces every verdict of its golden file`, () => {
    const file = path.join(DIR, `${shape}.json`);
    const text = readFileSync(file, 'utf8');
    const golden = JSON.parse(text) as GoldenFile;
    assert.equal(golden.shape, shape);
    if (WRITE) {
      const cases = golden.cases.map((c): GoldenCase => {
        const r = schema.safeParse(decodeGolden(c.input));
        if (!r.success) return { input: c.input, accepted: false };
        return isDeepStrictEqual(r.data, decodeGolden(c.input)) ? { input: c.input, accepted: true } : { input: c.input, accepted: true, value: encodeGolden(r.data) };
      });
      writeFileSync(file, `${text.slice(0, text.indexOf('"cases":['))}"cases":[\n${cases.map((c) => JSON.stringify(c)).join(',\n')}\n]}\n`);
      return;
    }
    let accepted = 0;
    for (const [i, c] of golden.cases.entries()) {
      const r = schema.safeParse(decodeGolden(c.input));
      const what = `${shape} case ${i}: ${JSON.stringify(c.input).slice(0, 400)}`;
      assert.equal(r.success, c.accepted, `${what}: ${c.accepted ? 'accepted' : 'refused'} when recorded`);
      if (r.success) {
        accepted++;
        // Without `value`, the value recorded was the input itself (deep-equal).
        assert.deepEqual(r.data, decodeGolden(c.value ?? c.input), `${what}: not the recorded value`);
      }
    }
    // Both verdicts are in the file, or it holds the schema to nothing.
    assert.ok(accepted > 0 && accepted < golden.cases.length, `${shape}: ${accepted} of ${golden.cases.length} cases accepted`);
  });
}
