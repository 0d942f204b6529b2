// SPDX-License-Identifier: Apache-2.0
// MoltClient: one connection to a Molt server over WebSocket (docs/client-ts.md), with
// libmolt_client's promises (docs/client.md) in the platform's idioms: promises settled exactly
// once, handlers that return their own unsubscribe, AbortSignals where a call can be cancelled.
//
//   const client = new MoltClient();
//   client.on('counter.Echoed', (payload) => ...);
//   const welcome = await client.connect('ws://127.0.0.1:7780/', 'ada', { credentials: token });
//   client.intent('counter.Add', payload);                 // checked, queued, paced
//   const answer = await client.request('counter.Get', payload, { timeoutMs: 2000 });
//   client.onResolved((channel, seq, accepted) => accepted || rollBack(seq));
//   const seq = client.predict('walk.Move', step);          // apply it now; undo if not accepted
//   await client.disconnect();
//
// Everything runs on the event loop that calls it; nothing is shared between clients.
import { MoltError, Status } from './errors.js';
import {
  byeFrame,
  decodeFrame,
  deviceFrame,
  FRAME_OVERHEAD,
  helloFrame,
  intentFrame,
  pingFrame,
  pongFrame,
  requestFrame,
  type ChannelInfo,
  type ServerMessage,
  type Welcome,
} from './frames.js';
import { SendQueue, TokenBucket, type ServerLimits } from './pacing.js';
import { Predictions, type PendingPrediction, type Resolution } from './predictions.js';
import { ReplicaStore, type Replica, type ReplicaHandler, type ReplicaUpdate } from './replicas.js';

export type ClientState = 'idle' | 'connecting' | 'connected' | 'reconnecting' | 'closed';

/** The part of the WebSocket interface the client uses: the browser's, or the `ws` package's. */
export interface WebSocketLike {
  binaryType: string;
  readonly readyState: number;
  send(data: Uint8Array): void;
  close(code?: number, reason?: string): void;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
}
export type WebSocketConstructor = new (url: string) => WebSocketLike;

export interface ClientOptions {
  /** The WebSocket implementation (default: the global one; in Node < 22, pass the `ws` package's). */
  WebSocket?: WebSocketConstructor;
  /** Sent in the Hello for the server's Auth.Hello chain. */
  credentials?: Uint8Array | string;
  joinData?: Uint8Array;
  /** Cancels a connect that has not been welcomed yet. */
  signal?: AbortSignal;
  /** How long to wait for the Welcome (default 10 s). */
  connectTimeoutMs?: number;
  /** Reconnect and resume after a lost link (default true); false: close instead. */
  reconnect?: boolean;
  /** The longest wait between reconnect attempts (default 8 s; they start at 0.1 s and double). */
  reconnectMaxMs?: number;
  /** What may wait in the send queue (default 1 MiB); beyond it a send fails with `state`. */
  maxSendQueueBytes?: number;
  /** A predicted intent with no answer by then is resolved as `timeout` (default 2 s). */
  predictTimeoutMs?: number;
}

export interface RequestOptions {
  /** The client's own deadline (default: the channel's timeout plus a second). */
  timeoutMs?: number;
  /** Cancels the request: it is taken back if it has not left, and its answer ignored. */
  signal?: AbortSignal;
}

export type EventHandler = (payload: Uint8Array, channel: string) => void;
export type StateHandler = (state: ClientState, reason: string) => void;
/** An Error frame: the server dropped something this client sent, and says why. */
export interface ServerError {
  reason: string; // a RejectReason name: RateLimited, RuleViolated, HookRejected, ...
  channel: string | undefined;
  text: string;
  retryAfterMs: number;
}
export type ServerErrorHandler = (error: ServerError) => void;
/**
 * A predicted intent was decided, once: `accepted` (reason `accepted`), or not: `rejected` (a rule,
 * a validator or the handler refused it) or `timeout` (no answer within `predictTimeoutMs`, or the
 * session ended). On either of those the app rolls its prediction back.
 */
export type ResolvedHandler = (channel: string, seq: number, accepted: boolean, reason: Resolution) => void;

/** Every channel, for `on` and `onReplica`. */
export const ALL = '*';

/** A channel as the calls take it: its name, its id, or what `channel(name)` returned. */
export type ChannelRef = string | number | ChannelInfo;

const FIRST_RECONNECT_MS = 100;
const DEFAULT_PREDICT_TIMEOUT_MS = 2000;
const MAX_INBOUND_FRAME = 16 * 1024 * 1024;
// Refusals that pass with time: a reconnect tries again after the retry-after.
const PASSING_REFUSALS = new Set([
  'RateLimited',
  'ServerFull',
  'ShuttingDown',
  'Starting',
  'Overloaded', // wire 2.7
]);

interface Channel extends ChannelInfo {
  bucket: TokenBucket;
  // Unreliable channels: the seq of the last message sent and of the newest one taken (kept
  // across a table within one session, as the server keeps its own).
  sentSeq: number;
  newestSeq: number;
}

interface Pending {
  channel: string;
  settle: (error: MoltError | undefined, payload?: Uint8Array) => void;
}

const now = (): number => performance.now() / 1000;

// A handler's exception is the app's: reported as the platform reports one, never thrown into the
// client's own bookkeeping.
function guarded<A extends unknown[]>(fn: (...args: A) => void, ...args: A): void {
  try {
    fn(...args);
  } catch (e) {
    queueMicrotask(() => {
      throw e;
    });
  }
}

function listen<K, H>(map: Map<K, Set<H>>, key: K, handler: H): () => void {
  let set = map.get(key);
  if (set === undefined) map.set(key, (set = new Set()));
  set.add(handler);
  return () => {
    set!.delete(handler);
  };
}

export class MoltClient {
  private readonly defaults: ClientOptions;
  private options: ClientOptions = {};
  private currentState: ClientState = 'idle';
  private ws: WebSocketLike | undefined;
  private link = 0; // one per socket: a handler of an older socket does nothing
  private url = '';
  private user = '';
  private linked = false; // welcomed on the current socket
  private attempting = false; // a Hello was sent on it, no Welcome yet
  private lastWelcome: Welcome | undefined;
  private deviceQuality = 0; // said in every Hello, and in Device frames (wire 2.7)
  private sessionId: bigint | undefined;
  private resumeToken: Uint8Array | undefined;
  // Where a draining server said this session goes next: followed when the link ends.
  private redirect: { url: string; where: string } | undefined;
  private limits: ServerLimits = {
    tickRate: 60,
    bytesPerTick: 8192,
    messagesPerTick: 64,
    burstTicks: 1,
    maxFrameBytes: 8192,
  };
  private byId = new Map<number, Channel>();
  private byName = new Map<string, Channel>();
  private readonly queue = new SendQueue();
  private readonly requests = new Map<number, Pending>(); // by request id
  private nextRequest = 1;
  private readonly events = new Map<string, Set<EventHandler>>();
  private readonly states = new Set<StateHandler>();
  private readonly errors = new Set<ServerErrorHandler>();
  private readonly replicaHandlers = new Map<string, Set<ReplicaHandler>>();
  private readonly resolvedHandlers = new Set<ResolvedHandler>();
  private readonly predictions = new Predictions((channel, seq, how) => {
    for (const h of [...this.resolvedHandlers]) guarded(h, channel, seq, how === 'accepted', how);
  });
  private stale = 0;
  private readonly store = new ReplicaStore();
  private waiter: { resolve: (w: Welcome) => void; reject: (e: MoltError) => void } | undefined;
  private abortConnect: (() => void) | undefined;
  private backoffMs = FIRST_RECONNECT_MS;
  private attemptTimer: ReturnType<typeof setTimeout> | undefined;
  private reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  private pumpTimer: ReturnType<typeof setTimeout> | undefined;
  private pingTimer: ReturnType<typeof setInterval> | undefined;
  private pingPeriodMs = 1000;
  private lastReceive = 0;
  private pingSeq = 0;
  private rtt = 0;

  constructor(defaults: ClientOptions = {}) {
    this.defaults = defaults;
  }

  // --- State ------------------------------------------------------------------------------------

  get state(): ClientState {
    return this.currentState;
  }
  /** The last Welcome (of this session, or of the last one). */
  get welcome(): Welcome | undefined {
    return this.lastWelcome;
  }
  /** The smoothed round trip of the client's own pings, in milliseconds (0 before the first). */
  get rttMs(): number {
    return this.rtt * 1000;
  }
  /** Bytes waiting in the send queue for the server's pace. */
  get sendQueueBytes(): number {
    return this.queue.bytes;
  }
  /** Events of latest-wins channels dropped because a newer one was delivered first. */
  get staleEvents(): number {
    return this.stale;
  }

  /** The channel named `name` in the server's table (undefined: the server has none). */
  channel(name: string): ChannelInfo | undefined {
    const c = this.byName.get(name);
    return c === undefined ? undefined : strip(c);
  }
  channels(): ChannelInfo[] {
    return [...this.byId.values()].map(strip);
  }

  /** Listens to state changes with the reason (the server's words when it refused or ended). */
  onState(handler: StateHandler): () => void {
    this.states.add(handler);
    return () => {
      this.states.delete(handler);
    };
  }

  /**
   * Listens to the events of `channel` (a name, what `channel(name)` returned, or ALL). Returns the
   * unsubscribe.
   */
  on(channel: string | ChannelInfo, handler: EventHandler): () => void {
    return listen(this.events, typeof channel === 'string' ? channel : channel.name, handler);
  }

  /** Listens to the server's Error frames: what it dropped of what this client sent, and why. */
  onError(handler: ServerErrorHandler): () => void {
    this.errors.add(handler);
    return () => {
      this.errors.delete(handler);
    };
  }

  /**
   * Listens to the replicas named `name` (or ALL). The ones already held are announced at once as
   * `snapshot`; then `snapshot` when one arrives (again after a resume), `changed` once per field
   * of a delta, `removed` before it is forgotten.
   */
  onReplica(name: string, handler: ReplicaHandler): () => void {
    const off = listen(this.replicaHandlers, name, handler);
    for (const r of this.store.all()) {
      if (name === ALL || r.name === name) guarded(handler, r, 'snapshot', undefined);
    }
    return off;
  }

  /** The replica named `name` as last heard (they stay readable after a disconnect). */
  replica(name: string): Replica | undefined {
    return this.store.find(name);
  }
  replicas(): Replica[] {
    return this.store.all();
  }

  // --- Connecting -------------------------------------------------------------------------------

  /**
   * Connects to `url` (ws:// or wss://) as `user`. Settles once: the Welcome, or a MoltError
   * (`refused` with the server's reason, `timeout`, `disconnected`, `aborted`, `state`).
   */
  connect(url: string, user: string, options: ClientOptions = {}): Promise<Welcome> {
    if (this.currentState === 'connecting' || this.currentState === 'connected' || this.currentState === 'reconnecting') {
      return Promise.reject(new MoltError('state', `already ${this.currentState}: disconnect() first`));
    }
    const opts = { ...this.defaults, ...options };
    const WS = opts.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
    if (WS === undefined) {
      return Promise.reject(
        new MoltError('state', "no WebSocket here: pass one, e.g. connect(url, user, { WebSocket }) with Node's ws package"),
      );
    }
    if (opts.signal?.aborted) {
      return Promise.reject(new MoltError('aborted', 'the connect was aborted before it started'));
    }
    this.options = { ...opts, WebSocket: WS };
    this.url = url;
    this.user = user;
    this.sessionId = undefined;
    this.resumeToken = undefined;
    this.redirect = undefined;
    this.backoffMs = FIRST_RECONNECT_MS;
    this.queue.clear();
    return new Promise<Welcome>((resolve, reject) => {
      this.waiter = { resolve, reject };
      const signal = opts.signal;
      if (signal !== undefined) {
        const onAbort = (): void => this.end('idle', 'the connect was aborted', new MoltError('aborted', 'the connect was aborted'));
        signal.addEventListener('abort', onAbort, { once: true });
        this.abortConnect = () => signal.removeEventListener('abort', onAbort);
      }
      this.setState('connecting', '');
      this.open();
    });
  }

  /**
   * Ends the session: what waits in the send queue goes first, then a Bye; the server ends the
   * session at once (no resume window). Requests still waiting fail with `disconnected`.
   */
  disconnect(): Promise<void> {
    const ws = this.ws;
    if (ws !== undefined && this.linked) {
      this.queue.drain((b) => ws.send(b));
      ws.send(byeFrame('ClientClosed'));
    }
    const closed = new Promise<void>((resolve) => {
      if (ws === undefined || ws.readyState >= 2) return resolve();
      const timer = setTimeout(resolve, 2000);
      ws.onclose = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    if (this.currentState !== 'idle' && this.currentState !== 'closed') {
      this.end('idle', 'disconnected by the app', new MoltError('disconnected', 'disconnected by the app'), 1000);
    }
    return closed;
  }

  // --- Sending ----------------------------------------------------------------------------------

  /**
   * Sends an intent, or a message on an unreliable channel (with the channel's next seq; its payload
   * must fit the channel's cap). Checked first, so a well-behaved client is never refused: throws a
   * MoltError (`state`, `not_found`, `invalid_argument`, `rate_limited`) instead of sending what the
   * server would refuse. Then queued and paced: call as fast as you like.
   */
  intent(channel: ChannelRef, payload: Uint8Array = new Uint8Array(0)): void {
    const c = this.checkSend(channel, 'intent', payload.length);
    let seq = 0;
    if (c.kind === 'unreliable') {
      c.sentSeq = (c.sentSeq + 1) >>> 0 || 1; // from 1; 0 is skipped when it wraps
      seq = c.sentSeq;
    }
    this.queue.push(intentFrame(c.id, payload, seq), c.id);
    this.pump();
  }

  /**
   * Sends a predicted intent (a `predicted_intent` channel), checked as `intent` is, and returns its
   * seq. The app applies it at once; `onResolved` then hears it decided exactly once: accepted,
   * rejected, or timed out (no answer within `predictTimeoutMs`, or the session ended). Until then
   * `pending()` lists it. Nothing is sent, and nothing resolves, when this throws.
   */
  predict(channel: ChannelRef, payload: Uint8Array = new Uint8Array(0)): number {
    const c = this.checkSend(channel, 'predicted_intent', payload.length);
    const seq = this.predictions.add(c.name, payload, this.options.predictTimeoutMs ?? DEFAULT_PREDICT_TIMEOUT_MS);
    this.queue.push(intentFrame(c.id, payload, seq), c.id);
    this.pump();
    return seq;
  }

  /**
   * Says how well the device keeps up (1: it keeps its frame budget; the spec's DeviceBench ranges
   * 0.25 .. 4; 0 withdraws the hint). Below the server's `net.governor_device_strained` (0.5) the
   * session is graded Strained at best: fewer replica updates, no Low unreliable events. Goes in
   * every Hello from now on, and at once to a connected server that takes it (wire 2.7). Throws
   * MoltError `invalid_argument` unless a finite number in [0, 16]. As the C client's
   * molt_client_set_device_quality (client API 9).
   */
  setDeviceQuality(quality: number): void {
    if (!Number.isFinite(quality) || quality < 0 || quality > 16) {
      throw new MoltError(
        'invalid_argument',
        `the device quality must be a finite number in [0, 16] (1: the device keeps its frame budget; 0 withdraws the hint), not ${quality}`,
      );
    }
    this.deviceQuality = quality;
    if (this.currentState === 'connected' && this.lastWelcome?.deviceHints) {
      this.queue.push(deviceFrame(quality));
      this.pump();
    }
  }

  /** Listens to the decisions on predicted intents. Returns the unsubscribe. */
  onResolved(handler: ResolvedHandler): () => void {
    this.resolvedHandlers.add(handler);
    return () => {
      this.resolvedHandlers.delete(handler);
    };
  }

  /**
   * The predicted intents not decided yet (on `channel`, by name or as `channel(name)` returned it,
   * when given), oldest first: what to replay over the authoritative state the server sends.
   */
  pending(channel?: string | ChannelInfo): PendingPrediction[] {
    return this.predictions.list(typeof channel === 'object' && channel !== null ? channel.name : channel);
  }

  /**
   * Sends a request. Settles exactly once: the answer's payload, or a MoltError: `rejected` (with
   * the channel's reject payload), `rate_limited`, `timeout` (the server's, the client's own
   * deadline, a new session after a lost link), `disconnected`, `aborted`, `failed` (another
   * status of the handler), or a local refusal as for `intent`.
   */
  request(channel: ChannelRef, payload: Uint8Array = new Uint8Array(0), options: RequestOptions = {}): Promise<Uint8Array> {
    return new Promise<Uint8Array>((resolve, reject) => {
      let c: Channel;
      try {
        c = this.checkSend(channel, 'request', payload.length);
      } catch (e) {
        return reject(e);
      }
      const signal = options.signal;
      if (signal?.aborted) return reject(new MoltError('aborted', `the request on "${c.name}" was aborted`));
      const id = this.nextRequest;
      this.nextRequest = this.nextRequest >= 0xffffffff ? 1 : this.nextRequest + 1;
      const timeoutMs = options.timeoutMs ?? c.timeoutMs + 1000;
      const onAbort = (): void => {
        this.queue.withdraw(id);
        settle(new MoltError('aborted', `the request on "${c.name}" was aborted`));
      };
      const timer = setTimeout(
        () => settle(new MoltError('timeout', `no answer on "${c.name}" within ${timeoutMs} ms`, { status: Status.TIMEOUT })),
        timeoutMs,
      );
      const settle = (error: MoltError | undefined, answer?: Uint8Array): void => {
        if (!this.requests.delete(id)) return; // settled already
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        if (error === undefined) resolve(answer!);
        else reject(error);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.requests.set(id, { channel: c.name, settle });
      this.queue.push(requestFrame(c.id, id, payload), c.id, id);
      this.pump();
    });
  }

  private checkSend(channel: ChannelRef, kind: 'intent' | 'request' | 'predicted_intent', size: number): Channel {
    if (this.currentState !== 'connected' && this.currentState !== 'reconnecting') {
      throw new MoltError('state', `not connected (${this.currentState})`);
    }
    // A channel object is found by its name: after a reconnect the table may be another's.
    const name = typeof channel === 'object' && channel !== null ? channel.name : channel;
    const c = typeof name === 'number' ? this.byId.get(name) : this.byName.get(name);
    if (c === undefined || (c.kind !== kind && !(kind === 'intent' && c.kind === 'unreliable'))) {
      throw new MoltError(
        'not_found',
        typeof name === 'number'
          ? `the server has no ${kindName(kind)} channel with id ${name}`
          : c === undefined
            ? `the server has no channel "${name}"`
            : `"${name}" is ${aKind(c.kind)} channel, not ${aKind(kind)} channel`,
      );
    }
    if (c.maxPayloadBytes > 0 && size > c.maxPayloadBytes) {
      throw new MoltError(
        'invalid_argument',
        `a payload of ${size} bytes exceeds the ${c.maxPayloadBytes}-byte cap of channel "${c.name}" ` +
          '(unreliable payloads fit one datagram)',
      );
    }
    if (size + FRAME_OVERHEAD > this.limits.maxFrameBytes) {
      throw new MoltError(
        'invalid_argument',
        `a payload of ${size} bytes does not fit the server's ${this.limits.maxFrameBytes}-byte frames`,
      );
    }
    const max = this.options.maxSendQueueBytes ?? 1 << 20;
    if (this.queue.bytes + size + FRAME_OVERHEAD > max) {
      throw new MoltError(
        'state',
        `the send queue is full (${this.queue.bytes} bytes wait; maxSendQueueBytes is ${max}): ` +
          "wait to let it drain at the server's pace",
      );
    }
    if (!c.bucket.take(now())) {
      throw new MoltError('rate_limited', `channel "${c.name}" allows ${c.rate} per second: the server would refuse this one`);
    }
    return c;
  }

  private pump(): void {
    if (!this.linked || this.ws === undefined) return;
    const ws = this.ws;
    const t = now();
    this.queue.release(t, (b) => ws.send(b));
    const wait = this.queue.nextRelease(t);
    if (wait !== undefined && this.pumpTimer === undefined) {
      this.pumpTimer = setTimeout(
        () => {
          this.pumpTimer = undefined;
          this.pump();
        },
        Math.max(1, Math.ceil(Math.min(wait, 3600) * 1000)),
      );
    }
  }

  // --- The link ---------------------------------------------------------------------------------

  private open(): void {
    const link = ++this.link;
    this.linked = false;
    this.attempting = true;
    let ws: WebSocketLike;
    try {
      ws = new this.options.WebSocket!(this.url);
    } catch (e) {
      return this.end('closed', `cannot connect to ${this.url}: ${(e as Error).message}`);
    }
    this.ws = ws;
    ws.binaryType = 'arraybuffer';
    ws.onopen = () => {
      if (link !== this.link) return;
      this.lastReceive = now();
      ws.send(
        helloFrame(this.user, this.options.credentials, this.options.joinData, this.resumeToken, this.deviceQuality),
      );
    };
    ws.onmessage = (ev) => {
      if (link === this.link) this.onMessage(ev.data);
    };
    ws.onclose = (ev) => {
      if (link !== this.link) return;
      const why = `the link closed (code ${ev.code}${ev.reason ? `: ${ev.reason}` : ''})`;
      if (this.currentState === 'connecting') this.end('closed', `cannot connect to ${this.url}: ${why}`);
      else this.lost(why);
    };
    ws.onerror = () => {}; // a close follows, with its code
    const ms = this.options.connectTimeoutMs ?? 10_000;
    clearTimeout(this.attemptTimer);
    this.attemptTimer = setTimeout(() => {
      if (link !== this.link || !this.attempting) return;
      const why = `no welcome from ${this.url} within ${ms} ms`;
      if (this.currentState === 'connecting') this.end('closed', why, new MoltError('timeout', why));
      else this.lost(why);
    }, ms);
  }

  private onMessage(data: unknown): void {
    if (typeof data === 'string') return this.end('closed', 'the server sent a text message');
    const frame =
      data instanceof ArrayBuffer
        ? new Uint8Array(data)
        : ArrayBuffer.isView(data)
          ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
          : undefined;
    if (frame === undefined) return this.end('closed', 'the server sent a message that is not binary');
    if (frame.length > MAX_INBOUND_FRAME) return this.end('closed', `the server sent a frame of ${frame.length} bytes`);
    this.lastReceive = now();
    const m = decodeFrame(frame);
    if (typeof m === 'string') return this.end('closed', m.startsWith('the server') ? m : `the server sent ${m}`);
    this.handle(m);
  }

  private handle(m: ServerMessage): void {
    switch (m.type) {
      case 'welcome':
        return this.onWelcome(m.welcome);
      case 'refuse': {
        const why = `${m.reason}: ${m.text}`;
        if (this.currentState === 'reconnecting' && PASSING_REFUSALS.has(m.reason)) {
          this.backoffMs = Math.max(this.backoffMs, m.retryAfterMs); // a busy server: try again later
          return this.lost(why);
        }
        return this.end('closed', why, new MoltError('refused', why, { reason: m.reason, retryAfterMs: m.retryAfterMs }));
      }
      case 'bye':
        if (this.redirect !== undefined) return this.follow();
        return this.end('closed', `${m.reason}: ${m.text}`);
      case 'redirect': {
        // host:port, or [v6]:port; one that cannot be read is ignored (the Bye then closes).
        if (this.currentState !== 'connected' || !/^(\[[0-9A-Fa-f:.]+\]|[^:\s/]+):\d{1,5}$/.test(m.address)) return;
        const scheme = this.url.startsWith('wss:') ? 'wss' : 'ws';
        this.redirect = {
          url: `${scheme}://${m.address}/`,
          where: `redirected to server ${m.server} at ${m.address} (${m.reason})`,
        };
        return;
      }
      case 'event': {
        const c = this.byId.get(m.channel);
        if (c === undefined) return; // a channel retired meanwhile
        if (m.seq !== 0 && c.latestWins) {
          // Latest-wins: one not newer than the newest delivered (serial-number order) is dropped.
          if (c.newestSeq !== 0 && ((m.seq - c.newestSeq) | 0) <= 0) {
            ++this.stale;
            return;
          }
          c.newestSeq = m.seq;
        }
        const name = c.name;
        for (const key of [name, ALL]) {
          for (const h of this.events.get(key) ?? []) guarded(h, m.payload, name);
        }
        return;
      }
      case 'response':
        return this.onResponse(m);
      case 'acks':
        return this.predictions.ack(m.accepted, m.rejected);
      case 'ping':
        if (this.queue.bytes > (this.options.maxSendQueueBytes ?? 1 << 20)) return; // never read: not our queue
        this.queue.push(pongFrame(m.seq, m.timeNs));
        return this.pump();
      case 'pong': {
        const sent = Number(m.timeNs) / 1e9;
        const t = now();
        if (m.seq === this.pingSeq && sent > 0 && sent <= t) {
          this.rtt = this.rtt === 0 ? t - sent : (this.rtt * 7 + (t - sent)) / 8;
        }
        return;
      }
      case 'error': {
        const error = { reason: m.reason, channel: this.byId.get(m.channel)?.name, text: m.text, retryAfterMs: m.retryAfterMs };
        for (const h of this.errors) guarded(h, error);
        return;
      }
      case 'replica': {
        const updates = this.store.apply(m);
        if (typeof updates === 'string') return this.end('closed', updates);
        return this.deliver(updates);
      }
      case 'channels':
        if (this.currentState === 'connected') this.setChannels(m.channels, true);
        return;
      case 'client-to-server':
        return this.end('closed', 'the server sent a client-to-server message');
      case 'unknown':
        return; // a body from a newer server: ignored, so appending one never breaks clients
    }
  }

  private onWelcome(welcome: Welcome): void {
    if (!this.attempting) return this.end('closed', 'the server sent a second welcome');
    this.attempting = false;
    clearTimeout(this.attemptTimer);
    const wasReconnecting = this.currentState === 'reconnecting';
    const resumed = wasReconnecting && welcome.resumed && welcome.sessionId === this.sessionId;
    const link = this.link;
    if (wasReconnecting && !resumed) {
      // The old session is gone: nobody answers its requests, and what was queued for it (with
      // its channel ids) is not sent to the new one.
      this.queue.dropApp();
      this.failPending('timeout', 'a new session: the server did not resume the old one', Status.TIMEOUT);
      if (link !== this.link) return; // a handler disconnected
      this.predictions.failAll(); // their frames were dropped with the queue: nobody answers them
      if (link !== this.link) return;
    }
    if (!resumed && this.store.size > 0) {
      this.dropReplicas();
      if (link !== this.link) return;
    }
    this.lastWelcome = welcome;
    this.sessionId = welcome.sessionId;
    this.resumeToken = welcome.resumeToken.length > 0 ? welcome.resumeToken : undefined;
    this.backoffMs = FIRST_RECONNECT_MS;
    this.limits = {
      tickRate: welcome.tickRate,
      bytesPerTick: welcome.bytesPerTick,
      messagesPerTick: welcome.messagesPerTick,
      burstTicks: welcome.budgetBurstTicks > 0 ? welcome.budgetBurstTicks : 1,
      maxFrameBytes: welcome.maxFrameBytes,
    };
    const t = now();
    this.queue.setBudget(this.limits, t);
    this.setChannels(welcome.channels, resumed); // a resumed session keeps its rate state
    this.linked = true;
    this.startPings(welcome.pingIntervalMs > 0 ? welcome.pingIntervalMs : 1000);
    const waiter = this.waiter;
    this.waiter = undefined;
    this.abortConnect?.();
    this.abortConnect = undefined;
    this.setState(
      'connected',
      !wasReconnecting ? '' : resumed ? 'resumed' : 'a new session: the server did not resume the old one',
    );
    waiter?.resolve(welcome);
    if (link === this.link) this.pump(); // what the app sent while the link was down goes now
  }

  private onResponse(m: Extract<ServerMessage, { type: 'response' }>): void {
    const p = this.requests.get(m.id);
    if (p === undefined) return; // answered late, after our own timeout (or never asked)
    const extra = { status: m.status, payload: m.payload, retryAfterMs: m.retryAfterMs };
    switch (m.status) {
      case Status.OK:
        return p.settle(undefined, m.payload);
      case Status.REJECTED:
        return p.settle(new MoltError('rejected', `the server rejected the request on "${p.channel}"`, extra));
      case Status.RATE_LIMITED:
        return p.settle(
          new MoltError('rate_limited', `"${p.channel}" is rate limited: retry after ${m.retryAfterMs} ms`, extra),
        );
      case Status.TIMEOUT:
        return p.settle(new MoltError('timeout', `the server's handler of "${p.channel}" did not answer in time`, extra));
      default:
        // Statuses are 0 or negative: a positive one is a lying server's, not a success.
        return p.settle(
          new MoltError('failed', `the server's handler of "${p.channel}" failed with status ${m.status}`, {
            ...extra,
            status: m.status > 0 ? Status.INTERNAL : m.status,
          }),
        );
    }
  }

  private setChannels(infos: ChannelInfo[], sameSession: boolean): void {
    const old = this.byId;
    const t = now();
    this.byId = new Map();
    this.byName = new Map();
    if (!sameSession) this.queue.clearChannelRates();
    for (const info of infos) {
      const kept = old.get(info.id);
      const same =
        sameSession && kept !== undefined && kept.name === info.name && kept.rate === info.rate && kept.burst === info.burst;
      const seqs = sameSession && kept !== undefined && kept.name === info.name;
      const c: Channel = {
        ...info,
        bucket: same ? kept.bucket : new TokenBucket(info.rate, info.burst, t),
        sentSeq: seqs ? kept.sentSeq : 0,
        newestSeq: seqs ? kept.newestSeq : 0,
      };
      if (!same) this.queue.setChannelRate(info.id, info.rate, info.burst, t);
      this.byId.set(info.id, c);
      this.byName.set(info.name, c);
    }
  }

  private deliver(updates: ReplicaUpdate[]): void {
    const link = this.link;
    for (const u of updates) {
      for (const key of [u.replica.name, ALL]) {
        for (const h of this.replicaHandlers.get(key) ?? []) {
          if (link !== this.link) return; // a handler disconnected
          guarded(h, u.replica, u.change, u.field);
        }
      }
      if (u.change === 'removed') this.store.forget(u.replica.id);
    }
  }

  private dropReplicas(): void {
    const updates: ReplicaUpdate[] = this.store.all().map((replica) => ({ replica, change: 'removed' }));
    this.store.clear();
    this.deliver(updates);
  }

  private startPings(periodMs: number): void {
    clearInterval(this.pingTimer);
    this.pingPeriodMs = periodMs;
    this.pingTimer = setInterval(() => {
      if (!this.linked) return;
      const silenceMs = 3 * this.pingPeriodMs + 2000;
      if ((now() - this.lastReceive) * 1000 > silenceMs) {
        return this.lost(`the server was silent for ${Math.round(silenceMs / 1000)} s`);
      }
      this.queue.push(pingFrame(++this.pingSeq >>> 0, BigInt(Math.round(now() * 1e9))));
      this.pump();
    }, periodMs);
  }

  // A link failed under a session: reconnect and resume, unless told not to.
  private lost(why: string): void {
    if (this.redirect !== undefined) return this.follow();
    if (this.options.reconnect === false || this.sessionId === undefined) return this.end('closed', why);
    this.dropLink();
    this.setState('reconnecting', why);
    const jitter = 0.75 + Math.random() * 0.5;
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = setTimeout(() => {
      if (this.currentState === 'reconnecting') this.open();
    }, this.backoffMs * jitter);
    this.backoffMs = Math.min(this.backoffMs * 2, this.options.reconnectMaxMs ?? 8000);
  }

  // The link ended after a Redirect (a draining server): a new session on the server it named, as
  // the same user with the same credentials, within FIRST_RECONNECT_MS (spread: not every client
  // of the drained server at once), whether or not reconnecting is on.
  private follow(): void {
    const to = this.redirect!;
    this.redirect = undefined;
    this.dropLink();
    this.url = to.url;
    this.resumeToken = undefined; // sessions do not move between servers
    this.backoffMs = FIRST_RECONNECT_MS;
    if (this.currentState !== 'reconnecting') this.setState('reconnecting', to.where);
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = setTimeout(() => {
      if (this.currentState === 'reconnecting') this.open();
    }, Math.random() * FIRST_RECONNECT_MS);
  }

  // The end of the client's connection: `idle` (the app's doing) or `closed` (refused, ended by the
  // server, or broken). `error` rejects a connect still waiting (default: `disconnected`, why).
  private end(state: 'idle' | 'closed', why: string, error?: MoltError, code = 1000): void {
    this.redirect = undefined;
    this.dropLink(code);
    clearTimeout(this.reconnectTimer);
    this.queue.clear();
    const waiter = this.waiter;
    this.waiter = undefined;
    this.abortConnect?.();
    this.abortConnect = undefined;
    this.setState(state, why);
    waiter?.reject(error ?? new MoltError('disconnected', why));
    this.failPending('disconnected', why);
    this.predictions.failAll();
  }

  private dropLink(code = 1000): void {
    ++this.link;
    this.linked = false;
    this.attempting = false;
    clearTimeout(this.attemptTimer);
    clearTimeout(this.pumpTimer);
    this.pumpTimer = undefined;
    clearInterval(this.pingTimer);
    this.pingTimer = undefined;
    const ws = this.ws;
    this.ws = undefined;
    if (ws !== undefined && ws.readyState < 2) {
      try {
        ws.close(code);
      } catch {
        // already closing
      }
    }
  }

  private failPending(code: 'timeout' | 'disconnected', why: string, status?: number): void {
    for (const p of [...this.requests.values()]) {
      p.settle(new MoltError(code, `no answer on "${p.channel}": ${why}`, { status }));
    }
  }

  private setState(state: ClientState, reason: string): void {
    if (state === this.currentState && state !== 'connected') return;
    this.currentState = state;
    for (const h of [...this.states]) guarded(h, state, reason);
  }
}

function strip(c: Channel): ChannelInfo {
  const { bucket: _bucket, sentSeq: _sent, newestSeq: _newest, ...info } = c;
  return info;
}

function kindName(kind: ChannelInfo['kind']): string {
  return kind === 'predicted_intent' ? 'predicted intent' : kind;
}

// "an intent", "a request", "a predicted intent", ...
function aKind(kind: ChannelInfo['kind']): string {
  const name = kindName(kind);
  return `${/^[aeiou]/.test(name) ? 'an' : 'a'} ${name}`;
}
