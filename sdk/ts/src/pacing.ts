// SPDX-License-Identifier: Apache-2.0
// TokenBucket and SendQueue: what the client has to send, released no faster than the server
// accepts it, so a well-behaved client is never ended as Flood nor refused as RateLimited however
// fast the app calls. The same rules as libmolt_client's (kernel/src/client/send_queue.h):
//   - the transport budget at 95% of the server's rates, with a quarter of its burst (at least one
//     maximal frame), so what network jitter clumps together still fits the server's burst;
//   - each rate-limited channel's rate and burst with the same shares, so frames that waited
//     (behind the transport budget, or a lost link) do not arrive closer together than the
//     server's bucket for the channel allows, jitter included.
// Control frames (ping, pong) go ahead of the app's; the app's keep their order. Time is passed
// in (seconds), so tests drive it by hand.

/** `rate` tokens per second with room for `burst`; starts full. An infinite rate never limits. */
export class TokenBucket {
  private tokens: number;
  readonly burst: number;

  constructor(
    readonly rate: number,
    burst: number,
    private last: number,
  ) {
    this.burst = Math.max(burst, 1);
    this.tokens = this.burst;
  }

  get unlimited(): boolean {
    return this.rate === Infinity;
  }

  /** Refills for the time since the last call, then takes `n` tokens if it has them. */
  take(now: number, n = 1): boolean {
    if (this.unlimited) return true;
    this.refill(now);
    if (this.tokens >= n) {
      this.tokens -= n;
      return true;
    }
    return false;
  }

  /** Seconds until `n` tokens are there (0 when they are; Infinity for a rate of 0). */
  secondsUntil(now: number, n = 1): number {
    if (this.unlimited) return 0;
    this.refill(now);
    return this.tokens >= n ? 0 : (n - this.tokens) / this.rate;
  }

  private refill(now: number): void {
    if (now > this.last) {
      this.tokens = Math.min(this.burst, this.tokens + (now - this.last) * this.rate);
      this.last = now;
    }
  }
}

/** The server's limits as its Welcome announced them. */
export interface ServerLimits {
  tickRate: number;
  bytesPerTick: number;
  messagesPerTick: number;
  burstTicks: number; // 0 from a server that does not announce it: take 1
  maxFrameBytes: number;
}

interface Frame {
  bytes: Uint8Array;
  channel: number; // -1: a control frame
  request?: number; // a request's id, so an aborted request that has not left can be taken back
}

export class SendQueue {
  static readonly RATE_SHARE = 0.95;
  static readonly BURST_SHARE = 0.25;

  private control: Frame[] = [];
  private app: Frame[] = [];
  private appHead = 0; // app[appHead] is the first waiting frame (a ring without the copying)
  private size = 0;
  private transportBytes = new TokenBucket(Infinity, 1, 0);
  private transportMessages = new TokenBucket(Infinity, 1, 0);
  private channels = new Map<number, TokenBucket>();

  /** Sets the transport budget for a server with `limits`; its buckets start full. */
  setBudget(limits: ServerLimits, now: number): void {
    const ticks = Math.max(limits.tickRate, 1); // the server refills per tick at max(tick_rate, 1)
    const burstTicks = Math.max(limits.burstTicks, 1);
    this.transportBytes = new TokenBucket(
      SendQueue.RATE_SHARE * limits.bytesPerTick * ticks,
      Math.max(SendQueue.BURST_SHARE * limits.bytesPerTick * burstTicks, limits.maxFrameBytes),
      now,
    );
    this.transportMessages = new TokenBucket(
      SendQueue.RATE_SHARE * limits.messagesPerTick * ticks,
      Math.max(SendQueue.BURST_SHARE * limits.messagesPerTick * burstTicks, 1),
      now,
    );
  }

  /**
   * Paces `channel`'s frames for a server bucket of `rate` per second and `burst` (Infinity: not
   * paced): at 95% of the rate with a quarter of the burst (at least 1), the transport budget's
   * shares. Frames that leave exactly 1/rate apart can arrive closer (the server reads its clock
   * once per batch of frames), and a bucket drained to its last token refuses them; the margin is
   * what jitter takes.
   */
  setChannelRate(channel: number, rate: number, burst: number, now: number): void {
    if (rate === Infinity) this.channels.delete(channel);
    else this.channels.set(channel, new TokenBucket(SendQueue.RATE_SHARE * rate, Math.max(SendQueue.BURST_SHARE * burst, 1), now));
  }

  clearChannelRates(): void {
    this.channels.clear();
  }

  /** Appends a frame (its size prefix included); `channel` undefined: a control frame. */
  push(bytes: Uint8Array, channel?: number, request?: number): void {
    this.size += bytes.length;
    if (channel === undefined) this.control.push({ bytes, channel: -1 });
    else this.app.push({ bytes, channel, request });
  }

  /** Hands `send` every frame the budgets allow at `now`, in order; returns how many. */
  release(now: number, send: (bytes: Uint8Array) => void): number {
    let released = 0;
    while (this.control.length > 0) {
      const f = this.control[0]!;
      if (this.wait(f, now) > 0) return released;
      this.take(f, now);
      this.control.shift();
      send(f.bytes);
      ++released;
    }
    while (this.appHead < this.app.length) {
      const f = this.app[this.appHead]!;
      if (this.wait(f, now) > 0) break;
      this.take(f, now);
      this.app[this.appHead++] = undefined as unknown as Frame;
      send(f.bytes);
      ++released;
    }
    this.compact();
    return released;
  }

  /** Seconds until the first waiting frame may go (0: now); undefined when nothing waits. */
  nextRelease(now: number): number | undefined {
    const first = this.control[0] ?? this.app[this.appHead];
    return first === undefined ? undefined : this.wait(first, now);
  }

  /** Every waiting frame, in order, budgets ignored (the last words before a Bye). */
  drain(send: (bytes: Uint8Array) => void): void {
    for (const f of this.control) send(f.bytes);
    for (let i = this.appHead; i < this.app.length; ++i) send(this.app[i]!.bytes);
    this.clear();
  }

  /** Takes back request `id`'s frame if it has not left; returns whether it had not. */
  withdraw(id: number): boolean {
    for (let i = this.appHead; i < this.app.length; ++i) {
      const f = this.app[i]!;
      if (f.request === id) {
        this.size -= f.bytes.length;
        this.app.splice(i, 1);
        return true;
      }
    }
    return false;
  }

  get bytes(): number {
    return this.size;
  }
  get frames(): number {
    return this.control.length + this.app.length - this.appHead;
  }

  /** Drops the app's frames (a new session: their channel ids were the old session's). */
  dropApp(): void {
    for (let i = this.appHead; i < this.app.length; ++i) this.size -= this.app[i]!.bytes.length;
    this.app = [];
    this.appHead = 0;
  }

  clear(): void {
    this.control = [];
    this.app = [];
    this.appHead = 0;
    this.size = 0;
  }

  private wait(f: Frame, now: number): number {
    let wait = Math.max(
      this.transportBytes.secondsUntil(now, f.bytes.length),
      this.transportMessages.secondsUntil(now),
    );
    if (f.channel >= 0) {
      const c = this.channels.get(f.channel);
      if (c !== undefined) wait = Math.max(wait, c.secondsUntil(now));
    }
    return wait;
  }

  private take(f: Frame, now: number): void {
    this.transportBytes.take(now, f.bytes.length);
    this.transportMessages.take(now);
    if (f.channel >= 0) this.channels.get(f.channel)?.take(now);
    this.size -= f.bytes.length;
  }

  private compact(): void {
    if (this.appHead === this.app.length) {
      this.app = [];
      this.appHead = 0;
    } else if (this.appHead > 1024 && this.appHead * 2 > this.app.length) {
      this.app = this.app.slice(this.appHead);
      this.appHead = 0;
    }
  }
}
