// What each op of the local API takes (docs/design.md §7), as its schema in schemas.ts returns it:
// the schemas are the source, these are only their types.
import type * as z from '../core/zod-mini.js';
import type { OpName } from './ops.js';
import type { requestSchemas } from './schemas.js';

// The checked request of op `K`.
export type RequestOf<K extends OpName> = z.infer<(typeof requestSchemas)[K]>;

// What a caller says in a request of op `K`: all but the frame {v, id, op}, which the client adds.
export type FieldsOf<K extends OpName> = Omit<RequestOf<K>, 'v' | 'id' | 'op'>;
