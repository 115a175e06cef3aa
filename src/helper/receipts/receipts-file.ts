import { mustParse } from '../../core/must-parse.js';
import { StewardError } from '../../core/errors.js';
import { receiptPayloadSchema, type ReceiptPayload } from '../../core/receipt-schema.js';
import type { Envelope } from '../../core/release-schemas.js';

// Decodes a stored envelope's payload without verifying it: the helper reads back what it
// wrote into a root-only folder. Anything that is not a receipt payload is STATE_INVALID.
export async function decodeStored(file: string, envelope: Envelope): Promise<ReceiptPayload> {
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8'));
  } catch (err) {
    throw new StewardError('STATE_INVALID', `${file}: a receipt payload is not JSON`, { cause: err });
  }
  return mustParse(receiptPayloadSchema, json, 'STATE_INVALID', `${file}: a receipt payload is invalid`);
}
