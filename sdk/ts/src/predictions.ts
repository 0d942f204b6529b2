// SPDX-License-Identifier: Apache-2.0
// Predictions: the predicted intents this client sent and the server has not decided yet
// (libmolt_client's kernel/src/client/predictions.h, the same rules). Each gets the client's next
// sequence number (1, 2, ...; 0 is never used), which its Intent frame carries; the server's Acks
// name it accepted or rejected, and one with no answer within the timeout (or whose session
// ended) is timed out. Each is resolved exactly once: an answer after that finds nothing.

/** How a predicted intent was decided: `rejected` and `timeout` mean "roll it back". */
export type Resolution = 'accepted' | 'rejected' | 'timeout';

/** A predicted intent not decided yet, as `MoltClient.pending()` lists it. */
export interface PendingPrediction {
  channel: string;
  seq: number;
  /** A copy of what was sent: replay it over the server's authoritative state. */
  payload: Uint8Array;
}

interface Entry {
  channel: string;
  payload: Uint8Array;
  timer: ReturnType<typeof setTimeout>;
}

export class Predictions {
  private nextSeq = 1;
  // By seq, in the order they were sent (a Map keeps insertion order, also across a wrap).
  private readonly entries = new Map<number, Entry>();

  /** `resolved` hears each decision once. */
  constructor(private readonly resolved: (channel: string, seq: number, how: Resolution) => void) {}

  get size(): number {
    return this.entries.size;
  }

  /** A new pending intent on `channel`, timed out after `timeoutMs` unless answered first; its seq. */
  add(channel: string, payload: Uint8Array, timeoutMs: number): number {
    const seq = this.nextSeq;
    this.nextSeq = seq >= 0xffffffff ? 1 : seq + 1;
    const timer = setTimeout(() => this.resolve(seq, 'timeout'), timeoutMs);
    this.entries.set(seq, { channel, payload: payload.slice(), timer });
    return seq;
  }

  /**
   * The server's answers: each pending seq named is resolved, the accepted ones first; seqs not
   * pending (decided already, or never sent) are ignored.
   */
  ack(accepted: readonly number[], rejected: readonly number[]): void {
    for (const seq of accepted) this.resolve(seq, 'accepted');
    for (const seq of rejected) this.resolve(seq, 'rejected');
  }

  /** Resolves every pending intent as timed out (the session ended), oldest first. */
  failAll(): void {
    for (const seq of [...this.entries.keys()]) this.resolve(seq, 'timeout');
  }

  /** The pending intents (on `channel` when given), oldest first; copies. */
  list(channel?: string): PendingPrediction[] {
    const out: PendingPrediction[] = [];
    for (const [seq, e] of this.entries) {
      if (channel === undefined || e.channel === channel) out.push({ channel: e.channel, seq, payload: e.payload.slice() });
    }
    return out;
  }

  private resolve(seq: number, how: Resolution): void {
    const e = this.entries.get(seq);
    if (e === undefined) return; // decided already, or never ours
    this.entries.delete(seq);
    clearTimeout(e.timer);
    this.resolved(e.channel, seq, how);
  }
}
