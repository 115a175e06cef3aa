// enrollment.json's zod schema: the rules agent-file-checks.ts's checkEnrollmentFile stands for
// (the agent reads the file with that checker, without zod; the tests hold the two together).
import { z } from 'zod';
import { epochMsSchema } from '../core/names.js';

export const enrollmentFileSchema = z.strictObject({
  schemaVersion: z.literal(1),
  nodeId: z.string().min(1).max(128),
  controlPlaneUrl: z.string().url(),
  enrolledAt: epochMsSchema,
  // The control plane's interval at enrollment; each heartbeat answer replaces it in memory.
  heartbeatSeconds: z.number().int().min(1).max(86_400),
  // The node key's id, to notice a node.key that is not the enrolled one.
  nodeKeyId: z.string().regex(/^[0-9a-f]{16}$/),
});
