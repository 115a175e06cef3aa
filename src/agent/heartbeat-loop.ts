// The heartbeat loop (docs/design.md §6): collect the helper's receipts and status, send one signed
// heartbeat with a seq made durable first, act on the answer, wait, repeat. Nothing the
// control plane or the helper does makes it crash: every failure becomes a logged backoff.
import type { KeyObject } from 'node:crypto';
import { HEARTBEAT_PATH } from '../core/control-paths.js';
import { MAX_HEARTBEAT_RECEIPT_BYTES, MAX_HEARTBEAT_RECEIPTS } from '../core/heartbeat-limits.js';
import { HEARTBEAT_VERSIONS, type HeartbeatApp, type HeartbeatPayload, type HeartbeatVersion } from '../core/heartbeat-schema.js';
import { formatHoldHeader, HOLD_HEADER, MAX_HOLD_SECONDS, type HeartbeatAnswer, type HoldAsk, type TrustBundle } from '../core/control-api.js';
import type { Clock } from '../platform/clock.js';
import { DOWNLOAD_AUTH_TTL_MS, downloadAuthorization } from '../platform/download-auth.js';
import { DOMAINS, keyIdOf, signEnvelope } from '../platform/keys.js';
import type { AcceptsWriter } from './accepts-writer.js';
import type { Outbox } from './outbox.js';
import type { ActedStore } from './acted-store.js';
import { backoffDelayMs, fetchJitterMs, heartbeatIntervalMs, RECEIPT_RETRY_BACKOFF } from './backoff.js';
import type { ControlPlaneClient } from './control-plane-client.js';
import { convergeDesired, type ConvergeResult, type Logf } from './convergence.js';
import { appsForVersion, heartbeatApps } from './heartbeat-apps.js';
import { classifyHeartbeatAnswer, type HeartbeatOutcome } from './heartbeat-answer.js';
import type { HelperPort } from './helper-port.js';
import { needsRefresh, trustReportOf } from './trust-bundle.js';
import type { TrustStatus } from '../protocol/answers.js';
import { escapeControlChars } from '../core/control-chars.js';
import type { AppScrapes } from './metrics/app-scrapes.js';
import type { SeqStore } from './seq-store.js';
import { MIN_WAIT_MS, NO_ROUTE_RETRY_MS, WAIT_SLACK_MS, WAKE_BACKOFF, type WakeSleep } from './wake-wait.js';

export interface HeartbeatDeps {
  clock: Clock;
  // Uniform in [0, 1): jitter for intervals and backoffs.
  random: () => number;
  helper: HelperPort;
  controlPlane: Pick<ControlPlaneClient, 'post'>;
  seq: SeqStore;
  outbox: Outbox;
  acted: ActedStore;
  // Where the receipt versions the control plane accepts go for the helper (docs/design.md §16).
  accepts?: Pick<AcceptsWriter, 'record'>;
  nodeId: string;
  nodeKey: KeyObject;
  // The origin (scheme://host:port) of the control plane the helper's downloads carry the
  // node's credential to (download-auth.ts); none: no credential (a test without one).
  downloadOrigin?: () => string;
  // The control-plane URLs the helper may fetch an artifact path from (docs/design.md §18).
  downloadMirrors?: () => readonly string[];
  // Reads helper.pub afresh; called when the helper names a key id the agent has not loaded.
  loadHelperKey(): Promise<KeyObject>;
  bootId: string;
  agentVersion: string;
  // The interval until the first answer says otherwise (enrollment's heartbeatSeconds).
  heartbeatSeconds: number;
  // Wake-ups (docs/design.md §18): the heartbeat held by the control plane as the node's long poll
  // (HOLD_HEADER), and, with a control plane that holds none, the sleep after an answered heartbeat
  // ended early by a GET /v1/wait (wake-wait.ts). None: plain heartbeats and sleeps.
  wake?: WakeSleep;
  log: Logf;
  // The scrapes of the apps' own metrics (docs/design.md §19), made only while the control plane
  // takes heartbeats v7; none: no scrapes.
  metrics?: Pick<AppScrapes, 'collect'>;
  // Where the fleet's TUF metadata comes from (docs/design.md §21.2, trust-bundle.ts); none: the
  // helper's trust is reported but never refreshed.
  trust?: { fetchBundle(root: number, signal?: AbortSignal): Promise<TrustBundle> };
}

// A refresh that failed is not tried again for the same versions before this long.
const TRUST_RETRY_MS = 5 * 60_000;
// After BUSY (the helper verifying another bundle, or past its bound on trust-refresh: docs/design.md
// §21.3): tried again at the first heartbeat this long after, not five minutes later.
const TRUST_BUSY_RETRY_MS = 15_000;
// The helper verified nothing: none answered (a self-update's handover restarts it), it is still
// recovering after its start (a steward trial stays so until it commits, up to agentTimeoutMs),
// or it is handing over. The bundle already fetched is handed over again at the next heartbeat,
// before the desired entries are acted on: held back five minutes, updates needing it would be
// refused TRUST_UNSIGNED by the helper that is back meanwhile (docs/self-update.md, "Under TUF").
const TRUST_NOT_VERIFIED = new Set(['HELPER_UNREACHABLE', 'RECOVERING', 'HANDOVER']);

export interface TickResult {
  // 'preempted': a held heartbeat given up by the agent (an update ended: its receipt goes now).
  outcome: HeartbeatOutcome | { kind: 'error'; message: string } | { kind: 'preempted' };
  // The wait before the next tick.
  delayMs: number;
  // How many receipts the last heartbeat sent in this tick carried.
  sentReceipts: number;
  // How the wait goes: 'wake' through the wake-up waits (a control plane that holds no heartbeat),
  // 'plain' a plain sleep (after a held heartbeat, or a failure).
  sleep: 'wake' | 'plain';
}

export class HeartbeatLoop {
  private failures = 0;
  private receiptFailures = 0;
  // Monotonic ms before which heartbeats go without receipts (after RECEIPT_REJECTED).
  private receiptRetryAt: number | null = null;
  private heartbeatSeconds: number;
  // The payload version the last answer said the control plane accepts (docs/design.md §16): the highest
  // it listed, 1 before any answer and after one that listed none.
  private heartbeatV: HeartbeatVersion = 1;
  private apps: HeartbeatApp[] = [];
  private helperKey: KeyObject | null = null;
  private converging: Promise<void> | null = null;
  // The confirm to the helper of this process's first answered heartbeat (docs/design.md §14), and of
  // the first one after each new helper (a self-update's candidate waits for it): the helper
  // the last confirm was answered by (pid:startedAt of its status; '' before any status), or
  // null before any answer; tried again after the next 2xx while the helper is unreachable.
  private confirmedTo: string | null = null;
  private confirm: Promise<void> | null = null;
  // The helper of the last status answer, as confirmedTo names it.
  private helperSeen = '';
  // Aborts a heartbeat in flight when the agent stops.
  private signal: AbortSignal | undefined;
  // Held heartbeats: the digest of the desired set last answered (the next hold's `seen`), null
  // before the first answer that gave one; the monotonic ms before which none is asked (after a
  // control plane that holds none answered); answers in a row that ended a hold early.
  private holdSeen: string | null = null;
  private holdOffUntil = -Infinity;
  private holdWakes = 0;
  // Gives up the held heartbeat in flight, if any (preemptHold).
  private holdInFlight: AbortController | null = null;
  // Attempts handed to the helper whose receipts are looked for, and the look running (watchReceipts).
  private readonly awaited = new Set<string>();
  // The helper's trust as its last status said (docs/design.md §21); undefined from a helper before it.
  private helperTrust: TrustStatus | undefined;
  // The versions of the last refresh that failed, and the monotonic ms until which they are not tried again.
  private trustFailed: { key: string; until: number } | null = null;
  // The refresh in flight (it never holds up a heartbeat; a convergence pass waits for it).
  private refreshing: Promise<void> | null = null;
  // The versions the control plane offered whose bundle could not be fetched, and why (cleared
  // by a refresh that got one): handed on with updates while the helper trusts older ones.
  private trustFetchError: { offered: { rootVersion: number; timestampVersion: number }; message: string } | null = null;
  // A bundle fetched that the helper has not verified yet (TRUST_NOT_VERIFIED), for the helper's
  // root and the versions offered: handed over again without fetching it again.
  private trustKept: { key: string; bundle: TrustBundle } | null = null;
  private watching: Promise<void> | null = null;

  constructor(private readonly d: HeartbeatDeps) {
    this.heartbeatSeconds = d.heartbeatSeconds;
  }

  // Runs ticks until `signal` aborts; then waits for a convergence pass in flight and returns.
  async run(signal: AbortSignal): Promise<void> {
    this.signal = signal;
    while (!signal.aborted) {
      const r = await this.tick();
      if (signal.aborted) break;
      try {
        // Wake-ups only after an answered heartbeat: a failing control plane gets its backoff.
        if (this.d.wake && r.outcome.kind === 'ok' && r.sleep === 'wake') await this.d.wake.sleep(r.delayMs, signal);
        else await this.d.clock.sleep(r.delayMs, signal);
      } catch {
        break;
      }
    }
    await this.idle();
  }

  // Resolves when no convergence pass is running.
  async idle(): Promise<void> {
    while (this.converging || this.refreshing) await (this.converging ?? this.refreshing);
    if (this.confirm) await this.confirm;
  }

  // One heartbeat, with its retries at once (a 409, or a receipt rejection), and its wait.
  async tick(): Promise<TickResult> {
    try {
      await this.collect();
      const withReceipts = this.receiptRetryAt === null || this.d.clock.monotonic() >= this.receiptRetryAt;
      let sent = await this.send(withReceipts);
      if (sent.preempted) return { outcome: { kind: 'preempted' }, delayMs: 0, sentReceipts: sent.receipts, sleep: 'plain' };
      if (sent.outcome.kind === 'replayed') {
        // The control plane has seen a higher seq (a lost seq.json, a restored backup): jump past it once.
        this.d.log('heartbeat seq replayed seq=%d lastSeq=%d: sending again with seq=%d', sent.seq, sent.outcome.lastSeq, Math.max(this.d.seq.lastSeq, sent.outcome.lastSeq) + 1);
        await this.d.seq.raise(sent.outcome.lastSeq);
        sent = await this.send(withReceipts);
      }
      if (sent.outcome.kind === 'receipt-rejected' && sent.receipts > 0) {
        this.receiptFailures++;
        const wait = backoffDelayMs(this.receiptFailures, this.d.random, RECEIPT_RETRY_BACKOFF);
        this.receiptRetryAt = this.d.clock.monotonic() + wait;
        this.d.log(
          'WARNING: the control plane REJECTED the relayed receipts (%s); pending=%d seqs=%s kept; heartbeats go without receipts, receipts retried in %d ms',
          sent.outcome.message,
          this.d.outbox.pendingSeqs.length,
          this.d.outbox.pendingSeqs.slice(0, 8).join(',') || 'none',
          wait,
        );
        sent = await this.send(false);
      }
      if (sent.outcome.kind === 'ok') this.startConfirm(sent.seq, sent.sentAt);
      return { ...(await this.settle(sent.outcome, sent.receipts, sent.held)), sentReceipts: sent.receipts };
    } catch (err) {
      // A local failure (seq.json or the outbox cannot be written): back off like a network failure.
      const message = (err as Error).message;
      this.failures++;
      const delayMs = backoffDelayMs(this.failures, this.d.random);
      this.d.log('WARNING: heartbeat tick failed: %s; next try in %d ms', message, delayMs);
      return { outcome: { kind: 'error', message }, delayMs, sentReceipts: 0, sleep: 'plain' };
    }
  }

  // Copies the helper's new receipts into the outbox and refreshes the apps. A helper that does
  // not answer leaves both as they were: the heartbeat still goes, with the last apps seen.
  private async collect(): Promise<void> {
    try {
      const r = await this.d.helper.receipts();
      const key = await this.helperKeyFor(r.helperKeyId);
      if (key) await this.d.outbox.take(key, r.receipts);
    } catch (err) {
      this.d.log('helper receipts unavailable: %s; relaying what the outbox holds', (err as Error).message);
    }
    try {
      const st = await this.d.helper.status();
      this.helperSeen = `${st.pid}:${st.startedAt}`;
      this.helperTrust = st.trust;
      // Bounded (2 s, all apps at once): scrape-metrics.ts. Never a throw, so the status stays.
      const scraped = this.d.metrics && this.heartbeatV >= 7 ? await this.d.metrics.collect(st.apps, this.heartbeatSeconds * 1000) : undefined;
      const { apps, skipped } = heartbeatApps(st.apps, scraped);
      if (skipped.length) this.d.log('apps left out of the heartbeat (not reportable): %s', skipped.join(','));
      this.apps = apps;
    } catch (err) {
      this.d.log('helper status unavailable: %s; reporting the last apps seen count=%d', (err as Error).message, this.apps.length);
    }
  }

  private async helperKeyFor(keyId: string): Promise<KeyObject | null> {
    if (this.helperKey && keyIdOf(this.helperKey) === keyId) return this.helperKey;
    const key = await this.d.loadHelperKey();
    this.helperKey = key;
    if (keyIdOf(key) === keyId) return key;
    this.d.log('WARNING: helper.pub has keyId=%s but the helper signs with keyId=%s; receipts not taken', keyIdOf(key), keyId);
    return null;
  }

  // The hold this heartbeat asks for: as long as the interval (at most 60 s), or none (no
  // wake-ups, a control plane that holds none, an interval under 2 s).
  private holdAsk(): HoldAsk | null {
    if (!this.d.wake || this.d.clock.monotonic() < this.holdOffUntil) return null;
    const ms = heartbeatIntervalMs(this.heartbeatSeconds, this.d.random);
    if (ms < MIN_WAIT_MS) return null;
    return { seconds: Math.min(MAX_HOLD_SECONDS, Math.round(ms / 1000)), seen: this.holdSeen };
  }

  // The agent has something to say now (an update it handed to the helper ended, and its receipt
  // waits in the helper): the held heartbeat in flight is given up, and the next one goes at once.
  // The control plane committed the held one already; its acks come again with the next answer.
  private preemptHold(why: string): void {
    if (!this.holdInFlight || this.holdInFlight.signal.aborted) return;
    this.d.log('held heartbeat given up: %s; the next goes now', why);
    this.holdInFlight.abort();
  }

  private async send(withReceipts: boolean): Promise<{ seq: number; sentAt: number; receipts: number; outcome: HeartbeatOutcome; held: boolean; preempted: boolean }> {
    const receipts = withReceipts ? this.d.outbox.batch(MAX_HEARTBEAT_RECEIPTS, MAX_HEARTBEAT_RECEIPT_BYTES) : [];
    // docs/design.md §6: the seq is durable before the heartbeat leaves, so no restart reuses it.
    const seq = await this.d.seq.next();
    const sentAt = this.d.clock.now();
    const payload: HeartbeatPayload = {
      v: this.heartbeatV,
      nodeId: this.d.nodeId,
      seq,
      sentAt,
      bootId: this.d.bootId,
      agentVersion: this.d.agentVersion,
      apps: appsForVersion(this.apps, this.heartbeatV),
      receipts,
      // v8: how the host trusts releases, when the helper says (docs/design.md §21.2).
      ...(this.heartbeatV >= 8 && this.helperTrust ? { trust: trustReportOf(this.helperTrust, sentAt) } : {}),
    };
    const envelope = signEnvelope(DOMAINS.heartbeat, payload, this.d.nodeKey);
    const ask = this.holdAsk();
    const extra = ask ? { headers: { [HOLD_HEADER]: formatHoldHeader(ask) }, timeoutMs: ask.seconds * 1000 + WAIT_SLACK_MS } : undefined;
    const preempt = ask ? new AbortController() : null;
    const signal = preempt ? (this.signal ? AbortSignal.any([this.signal, preempt.signal]) : preempt.signal) : this.signal;
    this.holdInFlight = preempt;
    let outcome: HeartbeatOutcome;
    try {
      const answer = await this.d.controlPlane.post(HEARTBEAT_PATH, envelope, signal, extra);
      outcome = classifyHeartbeatAnswer(answer.status, answer.json);
    } catch (err) {
      outcome = { kind: 'unavailable', message: (err as Error).message };
    } finally {
      this.holdInFlight = null;
    }
    const preempted = preempt !== null && preempt.signal.aborted && !this.signal?.aborted && outcome.kind === 'unavailable';
    const held = outcome.kind === 'ok' && outcome.answer.held !== undefined ? ` held=${outcome.answer.held}` : '';
    this.d.log('heartbeat sent seq=%d apps=%d receipts=%d result=%s%s', seq, this.apps.length, receipts.length, preempted ? 'given up' : outcome.kind, held);
    return { seq, sentAt, receipts: receipts.length, outcome, held: ask !== null, preempted };
  }

  // Starts a refresh of the helper's trust (refreshTrust) unless one is running. In the
  // background: a control plane that dribbles the bundle (or never ends it) holds up no heartbeat;
  // the convergence pass of this answer waits for it (startConvergence).
  private startRefresh(offered: HeartbeatAnswer['trust']): void {
    if (this.refreshing) return;
    this.refreshing = this.refreshTrust(offered).finally(() => {
      this.refreshing = null;
    });
  }

  // Why the helper's metadata is behind what the control plane offered: the fetch of the bundle
  // that failed, while the helper still trusts older versions than those; else undefined.
  private trustFetchFailed(): string | undefined {
    const f = this.trustFetchError;
    return f && needsRefresh(this.helperTrust, f.offered) ? f.message : undefined;
  }

  // Fetches the trust bundle and hands it to the helper when the answer names versions newer than
  // the helper trusts (docs/design.md §21.2). Bounded by the client's deadline
  // (controlPlane.trustBundleTimeoutMs) and byte cap, and the helper's; a failure is logged and
  // not tried again for the same versions for TRUST_RETRY_MS (BUSY: TRUST_BUSY_RETRY_MS). A fetch
  // that failed is remembered (trustFetchError): the updates handed on meanwhile say so, and the
  // helper then refuses what the newer metadata might have allowed FETCH_FAILED, not as a release
  // no delegation signed.
  private async refreshTrust(offered: HeartbeatAnswer['trust']): Promise<void> {
    const helper = this.d.helper;
    if (!this.d.trust || !helper.trustRefresh || !offered || !needsRefresh(this.helperTrust, offered)) return;
    const key = `${offered.rootVersion}/${offered.timestampVersion}`;
    if (this.trustFailed && this.trustFailed.key === key && this.d.clock.monotonic() < this.trustFailed.until) return;
    const root = this.helperTrust?.rootVersion as number;
    const keptKey = `${root}>${key}`;
    const kept = this.trustKept?.key === keptKey ? this.trustKept.bundle : null;
    this.trustKept = null;
    // The bundle fetched (or kept), to keep again when the helper could not verify it.
    let fetched: TrustBundle | null = null;
    try {
      let bundle: TrustBundle;
      try {
        bundle = kept ?? (await this.d.trust.fetchBundle(root, this.signal));
      } catch (err) {
        const e = err as Error & { code?: string };
        // Plain text, bounded: it goes to the helper, and into a receipt.
        const why = escapeControlChars(`${e.code ?? 'ERROR'}: ${e.message}`).slice(0, 1000);
        this.trustFetchError = { offered: { rootVersion: offered.rootVersion, timestampVersion: offered.timestampVersion }, message: why };
        throw err;
      }
      fetched = bundle;
      const a = await helper.trustRefresh(bundle);
      this.helperTrust = { ...this.helperTrust, ...a, timestampExpired: false };
      this.trustFailed = null;
      this.trustFetchError = null;
      this.d.log('trust refreshed: root %s timestamp %s (the control plane offered root %d timestamp %d)', a.rootVersion ?? '-', a.timestampVersion ?? '-', offered.rootVersion, offered.timestampVersion);
    } catch (err) {
      const e = err as Error & { code?: string };
      if (fetched && e.code !== undefined && TRUST_NOT_VERIFIED.has(e.code)) {
        this.trustKept = { key: keptKey, bundle: fetched };
        this.d.log('trust refresh to root %d timestamp %d not verified by the helper, code=%s: %s; handed over again at the next heartbeat', offered.rootVersion, offered.timestampVersion, e.code, e.message);
        return;
      }
      const wait = e.code === 'BUSY' ? TRUST_BUSY_RETRY_MS : TRUST_RETRY_MS;
      this.trustFailed = { key, until: this.d.clock.monotonic() + wait };
      this.d.log('WARNING: trust refresh to root %d timestamp %d failed code=%s: %s; tried again in %d s', offered.rootVersion, offered.timestampVersion, e.code ?? '-', e.message, wait / 1000);
    }
  }

  // After this process's first 2xx, and the first after a new helper answered its status: tells
  // the helper, which, when it is probing this process as a new agent release, makes it active
  // on it, and when it is a steward version on trial, takes it as the round trip with the agent
  // (docs/design.md §14). Never holds up the heartbeats. A refusal is the usual answer when neither
  // waits (FORBIDDEN), or from a helper older than the op (BAD_REQUEST): either way that helper
  // is not asked again.
  private startConfirm(seq: number, sentAt: number): void {
    const helper = this.helperSeen;
    if (this.confirm || this.confirmedTo === helper) return;
    this.confirm = this.d.helper.confirm({ seq, sentAt }).then(
      (a) => {
        this.d.log('heartbeat seq=%d confirmed to the helper: %s %s took it from pid %d (attempt %s)', seq, a.app, a.version, a.pid, a.attemptId);
        this.confirmedTo = helper;
      },
      (err: Error & { code?: string }) => {
        const again = err.code === 'HELPER_UNREACHABLE';
        this.d.log('heartbeat seq=%d not confirmed to the helper: %s%s', seq, err.message, again ? '; tried again after the next answered heartbeat' : '');
        if (!again) this.confirmedTo = helper;
      },
    ).finally(() => {
      this.confirm = null;
    });
  }

  private async settle(outcome: HeartbeatOutcome, sentReceipts: number, askedHold: boolean): Promise<Omit<TickResult, 'sentReceipts'>> {
    if (outcome.kind === 'ok') {
      this.failures = 0;
      if (sentReceipts > 0) {
        this.receiptFailures = 0;
        this.receiptRetryAt = null;
      }
      this.heartbeatSeconds = outcome.answer.heartbeatSeconds;
      this.heartbeatV = highestVersion(outcome.answer.heartbeatVersions);
      await this.d.outbox.ack(outcome.answer.ackedSeqs);
      await this.d.accepts?.record(outcome.answer.receiptVersions);
      // Newer metadata first: the desired entries may name releases only it signs (the pass waits for it).
      this.startRefresh(outcome.answer.trust);
      this.startConvergence(outcome.answer.desired);
      if (askedHold) return { outcome, ...this.afterHold(outcome.answer) };
      return { outcome, delayMs: heartbeatIntervalMs(this.heartbeatSeconds, this.d.random), sleep: 'wake' };
    }
    this.failures++;
    const delayMs = backoffDelayMs(this.failures, this.d.random);
    switch (outcome.kind) {
      case 'clock-skew': {
        const ours = this.d.clock.now();
        const off = outcome.serverTime === null ? 'unknown' : String(ours - outcome.serverTime);
        this.d.log(
          'WARNING: CLOCK SKEW: the control plane refused our time; serverTime=%s ourTime=%d offsetMs=%s; fix this host clock (NTP); next try in %d ms (message=%j)',
          outcome.serverTime === null ? 'unknown' : new Date(outcome.serverTime).toISOString(),
          ours,
          off,
          delayMs,
          outcome.message,
        );
        break;
      }
      case 'unauthorized':
        this.d.log('WARNING: the control plane does not accept this node code=%s message=%j (not enrolled there, or the node key does not match); next try in %d ms', outcome.code, outcome.message, delayMs);
        break;
      case 'replayed':
        this.d.log('WARNING: heartbeat seq replayed twice lastSeq=%d; next try in %d ms', outcome.lastSeq, delayMs);
        break;
      case 'receipt-rejected':
      case 'refused':
        // A control plane rolled back to one that knows v1 only refuses v2: back to v1 until an
        // answer lists 2 again.
        if (outcome.kind === 'refused') this.heartbeatV = 1;
        this.d.log('WARNING: the control plane refused the heartbeat kind=%s message=%j; next try in %d ms', outcome.kind, outcome.message, delayMs);
        break;
      case 'unavailable':
        this.d.log('control plane unavailable: %s; failures=%d next try in %d ms', outcome.message, this.failures, delayMs);
        break;
    }
    return { outcome, delayMs, sleep: 'plain' };
  }

  // The wait after an answer to a heartbeat that asked to be held. Its hold took the interval
  // (timeout): the next goes now. It ended early (woken, or the set had changed): the next goes
  // now, to be held again, a little later each time in a row (WAKE_BACKOFF). The instance could not
  // hold it (busy): the interval is slept. The instance is closing: the next goes in a second, to
  // another instance. No `held` in the answer: a control plane that holds no heartbeat; the agent
  // keeps its waits (GET /v1/wait) and asks again in an hour (an upgraded control plane).
  private afterHold(answer: HeartbeatAnswer): { delayMs: number; sleep: 'wake' | 'plain' } {
    const interval = heartbeatIntervalMs(this.heartbeatSeconds, this.d.random);
    if (answer.held === undefined || answer.desiredDigest === undefined) {
      this.holdSeen = null;
      this.holdOffUntil = this.d.clock.monotonic() + NO_ROUTE_RETRY_MS;
      this.d.log('the control plane holds no heartbeat (an older release): heartbeats and wake-up waits, asked again in %d min', NO_ROUTE_RETRY_MS / 60_000);
      return { delayMs: interval, sleep: 'wake' };
    }
    this.holdSeen = answer.desiredDigest;
    switch (answer.held) {
      case 'timeout':
        this.holdWakes = 0;
        return { delayMs: 0, sleep: 'plain' };
      case 'woken':
      case 'changed': {
        if (answer.held === 'woken') this.d.log('woken by the control plane: this node\'s desired set changed while its heartbeat was held');
        this.holdWakes++;
        const delayMs = this.holdWakes > 1 ? Math.min(interval, backoffDelayMs(this.holdWakes - 1, this.d.random, WAKE_BACKOFF)) : 0;
        return { delayMs, sleep: 'plain' };
      }
      case 'busy':
        return { delayMs: interval, sleep: 'plain' };
      case 'closing':
        return { delayMs: 1000 + Math.floor(this.d.random() * 1000), sleep: 'plain' };
    }
  }

  // Convergence after a 200. The helper's answers never hold up the next heartbeat: one pass
  // runs at a time, and a pass still running when the next answer arrives makes that answer's
  // desired list wait for the one after (the control plane repeats it until a receipt decides).
  private startConvergence(desired: Parameters<typeof convergeDesired>[0]): void {
    const pending = desired.filter((e) => !this.d.acted.has(e.attemptId));
    if (pending.length === 0) return;
    if (this.converging) {
      this.d.log('convergence pass still running; desired=%d waits for the next answer', pending.length);
      return;
    }
    const jitterMs = fetchJitterMs(this.heartbeatSeconds, this.d.random);
    this.d.log('desired=%d new: handed to the helper in %d ms (fetch jitter)', pending.length, jitterMs);
    const pass = (async () => {
      // The refresh this answer started (or one still running): the entries may need its metadata.
      while (this.refreshing) await this.refreshing;
      if (jitterMs > 0) {
        try {
          await this.d.clock.sleep(jitterMs, this.signal);
        } catch {
          return []; // the agent is stopping: the entries are handed on at its next start
        }
      }
      const origin = this.d.downloadOrigin;
      const fetchAuth = origin && (() => ({ origin: origin(), authorization: downloadAuthorization(this.d.nodeId, this.d.clock.now() + DOWNLOAD_AUTH_TTL_MS, this.d.nodeKey) }));
      const mirrors = this.d.downloadMirrors;
      return convergeDesired(pending, { helper: this.d.helper, acted: this.d.acted, clock: this.d.clock, log: this.d.log, trustFetchFailed: () => this.trustFetchFailed(), ...(fetchAuth ? { fetchAuth } : {}), ...(mirrors ? { mirrors } : {}) });
    })().then(
      (results) => this.afterPass(results),
      (err: Error) => this.d.log('WARNING: convergence pass failed: %s', err.message),
    );
    this.converging = pass.finally(() => {
      this.converging = null;
    });
  }

  // After a convergence pass, the receipts it made go at once rather than at the end of the held
  // heartbeat: a refusal's receipt exists already (the held heartbeat is given up now); an
  // accepted update's comes when the helper ends it, which the agent looks for every
  // RECEIPT_LOOK_MS while the hold lasts (watchReceipts). Without a held heartbeat they go with
  // the next one, as before.
  private afterPass(results: readonly ConvergeResult[]): void {
    if (results.some((r) => r.result === 'refused' || r.result === 'settled')) this.preemptHold('the helper refused or settled an entry: its receipt goes now');
    const accepted = results.filter((r) => r.result === 'accepted').map((r) => r.attemptId);
    // Only with held heartbeats: a plain one goes at its interval anyway.
    if (accepted.length > 0 && this.d.wake && this.d.clock.monotonic() >= this.holdOffUntil) this.watchReceipts(accepted);
  }

  // Looks at the helper's receipts until each of `attemptIds` has one (or RECEIPT_LOOK_FOR_MS
  // passed, or the agent stops), and gives up the held heartbeat when one comes. One watch at a
  // time; a later pass's ids join it.
  private watchReceipts(attemptIds: readonly string[]): void {
    for (const id of attemptIds) this.awaited.add(id);
    if (this.watching) return;
    const until = this.d.clock.monotonic() + RECEIPT_LOOK_FOR_MS;
    this.watching = (async () => {
      // Bounded by count as well as by time: a clock that does not move ends it too.
      for (let look = 0; look < RECEIPT_LOOK_FOR_MS / RECEIPT_LOOK_MS && this.awaited.size > 0 && !this.signal?.aborted && this.d.clock.monotonic() < until; look++) {
        try {
          await this.d.clock.sleep(RECEIPT_LOOK_MS, this.signal);
        } catch {
          return;
        }
        // Nothing held: the next heartbeat goes at its time and carries what came.
        if (!this.holdInFlight) continue;
        let ids: string[];
        try {
          ids = (await this.d.helper.receipts()).receipts.map(receiptAttemptId);
        } catch {
          continue; // the helper did not answer: the next look, or the next heartbeat
        }
        const done = ids.filter((id) => this.awaited.delete(id));
        if (done.length > 0) this.preemptHold(`the helper ended attempt ${done.join(', ')}: its receipt goes now`);
      }
      this.awaited.clear();
    })().finally(() => {
      this.watching = null;
    });
  }
}

// How often, and how long at most, the agent looks at the helper's receipts for an update it
// handed on (watchReceipts): a local call on helper.sock, only while such an update runs.
export const RECEIPT_LOOK_MS = 1_000;
export const RECEIPT_LOOK_FOR_MS = 30 * 60_000;

// A receipt envelope's attemptId, read without checking its signature (only to know that it
// came; the outbox checks it before it goes anywhere); '' when it does not decode.
function receiptAttemptId(e: { payload: string }): string {
  try {
    const p = JSON.parse(Buffer.from(e.payload, 'base64').toString('utf8')) as { attemptId?: unknown };
    return typeof p.attemptId === 'string' ? p.attemptId : '';
  } catch {
    return '';
  }
}

// The highest payload version both sides know, of those a control plane's answer listed; 1 when
// it listed none (docs/design.md §16).
function highestVersion(listed: readonly number[] | undefined): HeartbeatVersion {
  let v: HeartbeatVersion = 1;
  for (const x of HEARTBEAT_VERSIONS) if (x > v && listed?.includes(x)) v = x;
  return v;
}
