// enrollment.json in the agent's folder: what enrollment gave this node.
import * as z from '../core/zod-mini.js';
import { epochMsSchema, intSchema, keyIdSchema } from '../core/names.js';

export const ENROLLMENT_SCHEMA_VERSION = 1;

export const enrollmentFileSchema = z.strictObject({
  schemaVersion: z.literal(ENROLLMENT_SCHEMA_VERSION),
  nodeId: z.string().check(z.minLength(1), z.maxLength(128)),
  controlPlaneUrl: z.url(),
  enrolledAt: epochMsSchema,
  // The control plane's interval at enrollment; each heartbeat answer replaces it in memory.
  heartbeatSeconds: intSchema(1, 86_400),
  // The node key's id, to notice a node.key that is not the enrolled one.
  nodeKeyId: keyIdSchema,
});
export type EnrollmentFile = z.infer<typeof enrollmentFileSchema>;
