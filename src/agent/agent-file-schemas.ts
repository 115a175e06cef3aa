// The schemas of the agent's seq.json and acted.json, the rules agent-file-checks.ts's checkSeqFile
// and checkActedFile stand for (test/agent/agent-file-checks.test.ts holds them together).
import { z } from 'zod';
import { attemptIdSchema, epochMsSchema } from '../core/names.js';

export const seqFileSchema = z.strictObject({ schemaVersion: z.literal(1), lastSeq: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER) });
export const actedFileSchema = z.strictObject({
  schemaVersion: z.literal(1),
  acted: z.array(z.strictObject({ attemptId: attemptIdSchema, app: z.string().max(64), at: epochMsSchema, answer: z.string().max(64) })),
});
