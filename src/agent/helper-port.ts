// The helper as the agent sees it: four ops over helper.sock (docs/design.md §7).
import { Readable } from 'node:stream';
import type { DesiredEntry, TrustBundle } from '../core/control-api.js';
import { StewardError } from '../core/errors.js';
import { refusedAsUnknown } from '../core/refused-as-unknown.js';
import type { FetchAuth } from '../platform/download-auth.js';
import type { AcceptedAnswer, AgentConfirmAnswer, ReceiptsResult, StatusResult, TrustAnswer, UpdateAnswer } from '../protocol/answers.js';
import { callHelper } from '../protocol/client.js';
import { AGENT_BY } from '../protocol/schemas.js';
import { helperClient } from '../protocol/helper-client.js';

// The seam to the helper. Every method throws StewardError: HELPER_UNREACHABLE when no helper
// answers, else the helper's own error code (RECOVERING, HELD, BUSY, ...).
export interface HelperPort {
  // Every app's signed receipts, sorted by seq (never read from the files).
  receipts(): Promise<ReceiptsResult>;
  status(): Promise<StatusResult>;
  // Hands one desired entry to the helper with noWait: resolves once the helper accepted the
  // attempt (or answered it from an earlier receipt of the same attemptId).
  // `fetchAuth`: the node's credential for the control plane's downloads (download-auth.ts);
  // `mirrors`: the agent's control-plane URLs, each of which serves the artifacts (docs/design.md §18).
  // `trustFetchFailed`: why the newer TUF metadata the control plane offered could not be fetched
  // (docs/design.md §21.3): a refusal it might have lifted is then FETCH_FAILED.
  update(entry: DesiredEntry, fetchAuth?: FetchAuth, mirrors?: readonly string[], trustFetchFailed?: string): Promise<UpdateAnswer | AcceptedAnswer>;
  // Hands a `rollback` desired entry (a target's revert, docs/design.md §18) to the helper as its
  // rollback to `previous`, with noWait and the entry's attemptId: resolves once it accepted.
  rollback(entry: DesiredEntry): Promise<UpdateAnswer | AcceptedAnswer>;
  // Tells the helper that this process had heartbeat `seq`, sent at `sentAt`, answered 2xx
  // (docs/design.md §14): the probe of an update of steward-agent waits for it. FORBIDDEN when no probe
  // waits for this process.
  confirm(heartbeat: { seq: number; sentAt: number }): Promise<AgentConfirmAnswer>;
  // Hands the fleet's TUF metadata to the helper (docs/design.md §21), which trusts what verifies.
  trustRefresh?(bundle: TrustBundle): Promise<TrustAnswer>;
}

// Answers from the helper arrive in well under a second; a helper that says nothing for this
// long is treated as unreachable, and the agent tries again at the next heartbeat.
const HELPER_TIMEOUT_MS = 30_000;

// The real helper behind `socketPath` (helper.sock).
export function socketHelper(socketPath: string): HelperPort {
  const helper = helperClient((request, opts) => callHelper(socketPath, request, { timeoutMs: HELPER_TIMEOUT_MS, ...opts }));
  // docs/design.md §20.2: a helper from before indexed manifests refuses the key as a malformed
  // request (no receipt); the agent asks it again without the key, and sends the key to that
  // helper no more. Which helper that was is its pid and start time as `status` last told (the
  // heartbeat asks for it every tick): a helper that started since, of another version perhaps,
  // is offered the key again, once.
  let helperSeen: string | null = null;
  let indexedRefusedBy: string | null | undefined;
  const indexedRefused = () => indexedRefusedBy !== undefined && indexedRefusedBy === helperSeen;
  return {
    receipts: () => helper.receipts(),
    status: async () => {
      const st = await helper.status();
      helperSeen = `${st.pid}:${st.startedAt}`;
      // A refusal before any status was seen belongs to the helper seen first.
      if (indexedRefusedBy === null) indexedRefusedBy = helperSeen;
      return st;
    },
    confirm: (hb) => helper.agentConfirm(hb),
    // The bundle as upload bytes after the line (up to MAX_TRUST_BUNDLE_BYTES; a line is 64 KiB at most).
    trustRefresh: (bundle) => {
      const bytes = Buffer.from(JSON.stringify(bundle), 'utf8');
      return helper.trustRefresh({ upload: bytes.length }, { upload: { size: bytes.length, stream: Readable.from([bytes]) } });
    },
    // To `previous`, never --to (helper.sock allows only that): the helper's own record of what
    // ran before decides, as `agentctl rollback` does.
    rollback: (e) => helper.rollback({ app: e.app, attemptId: e.attemptId, noWait: true, by: AGENT_BY }),
    // Never force, allowDowngrade or allowUnsigned: the control plane cannot override the
    // helper's refusals (docs/design.md §6), and helper.sock would refuse the last two anyway. notAfter
    // goes along when the entry has one: the helper refuses to start past it (WINDOW_CLOSED).
    update: async (e, fetchAuth, mirrors, trustFetchFailed) => {
      type Req = Parameters<typeof helper.update>[0];
      const base: Req = { app: e.app, version: e.version, manifest: e.manifest, attemptId: e.attemptId, noWait: true, by: AGENT_BY };
      // The run's watch window (docs/design.md §17); a helper from before it refuses the key, and
      // is asked again without it (its versions are then watched by nothing, as before). The
      // same for the fetch's deadline and mirrors (§18): a helper from before them fetches once,
      // from the manifest's URL, as it always did; and for the downgrade authorization (§18),
      // checked by the helper: one from before it refuses the downgrade DOWNGRADE_REFUSED, as it
      // always did.
      const req: Req = {
        ...base,
        ...(e.watchMs !== undefined ? { watchMs: e.watchMs } : {}),
        ...(e.downgrade !== undefined ? { downgrade: e.downgrade } : {}),
        ...(e.directive !== undefined ? { directive: e.directive } : {}),
        ...(e.directive !== undefined && trustFetchFailed !== undefined ? { trustFetchFailed } : {}),
        ...(e.fetchUntil !== undefined ? { fetchUntil: e.fetchUntil } : {}),
        ...(mirrors && mirrors.length > 0 ? { mirrors: [...mirrors] } : {}),
        ...(e.indexedManifest !== undefined && !indexedRefused() ? { indexedManifest: e.indexedManifest } : {}),
      };
      const withAuth: Req = fetchAuth ? { ...req, fetchAuth } : req;
      const refusedKey = (err: unknown, key: string) => err instanceof StewardError && err.code === 'BAD_REQUEST' && err.message.includes(key);
      // Why these fallbacks: a helper older than windows (notAfter) or than download credentials
      // (fetchAuth) refuses the unknown key as a malformed request, changing nothing and making
      // no receipt; the agent checked notAfter just before, so it asks once more as that helper
      // understands (its fetch then goes without a credential, as it always did).
      const ask = async (r: Req): Promise<UpdateAnswer | AcceptedAnswer> => {
        try {
          return await helper.update(r);
        } catch (err) {
          // Exactly this refusal, once: the key is dropped, so the request asked again cannot
          // be refused for it again; any other refusal is thrown as before.
          if (r.indexedManifest !== undefined && refusedAsUnknown(err, 'indexedManifest')) {
            indexedRefusedBy = helperSeen;
            const { indexedManifest: _dropped, ...without } = r;
            return ask(without);
          }
          // The directive (docs/design.md §21): a helper from before TUF trusts release keys only,
          // and refuses the key as unknown; asked again without it, as for indexedManifest.
          if (r.directive !== undefined && refusedAsUnknown(err, 'directive')) {
            const { directive: _dropped, ...without } = r;
            return ask(without);
          }
          // A helper from before trustFetchFailed refuses the key: asked again without it (its
          // refusal then keeps the code newer metadata might have lifted).
          if (r.trustFetchFailed !== undefined && refusedAsUnknown(err, 'trustFetchFailed')) {
            const { trustFetchFailed: _dropped, ...without } = r;
            return ask(without);
          }
          if (r.downgrade !== undefined && refusedKey(err, 'downgrade')) {
            const { downgrade: _dropped, ...without } = r;
            return ask(without);
          }
          if (r.watchMs !== undefined && refusedKey(err, 'watchMs')) {
            const { watchMs: _dropped, ...without } = r;
            return ask(without);
          }
          if ((r.fetchUntil !== undefined || r.mirrors !== undefined) && (refusedKey(err, 'fetchUntil') || refusedKey(err, 'mirrors'))) {
            const { fetchUntil: _until, mirrors: _mirrors, ...without } = r;
            return ask(without);
          }
          if (r.fetchAuth === undefined || !refusedKey(err, 'fetchAuth')) throw err;
          const { fetchAuth: _dropped, ...without } = r;
          return helper.update(without);
        }
      };
      if (e.notAfter === undefined) return ask(withAuth);
      try {
        return await ask({ ...withAuth, notAfter: e.notAfter });
      } catch (err) {
        if (!refusedKey(err, 'notAfter')) throw err;
        return ask(withAuth);
      }
    },
  };
}
