// SPDX-License-Identifier: Apache-2.0
// MoltError: every failure the client reports, with a code an app can switch on and the text a
// person can read (the server's own words where the server said why).

/** What went wrong, as the C client's statuses say it (docs/client.md). */
export type MoltErrorCode =
  | 'state' //            not connected, already connecting, the send queue is full (MOLT_ERR_STATE)
  | 'not_found' //        no such channel (MOLT_ERR_NOT_FOUND)
  | 'invalid_argument' // a payload too large for the server's frames or an unreliable channel's cap (MOLT_ERR_INVALID_ARGUMENT)
  | 'rate_limited' //     the channel's rate would be exceeded, or the server said so (MOLT_ERR_RATE_LIMITED)
  | 'rejected' //         the server's validator or handler refused; `payload` is the channel's reject payload (MOLT_ERR_REJECTED)
  | 'timeout' //          no answer in time (MOLT_ERR_TIMEOUT)
  | 'disconnected' //     the connection ended before an answer, or could not be made
  | 'refused' //          the server refused the Hello; `reason` is its RefuseReason name
  | 'aborted' //          the caller's AbortSignal fired
  | 'failed'; //          the server's handler failed with another status (`status`)

export class MoltError extends Error {
  override readonly name = 'MoltError';
  /** The molt status the server answered with, for `rejected`, `rate_limited`, `timeout`, `failed`. */
  readonly status?: number;
  /** The reject payload (`rejected`) or whatever the server answered with. */
  readonly payload?: Uint8Array;
  /** When the server said when to retry (`rate_limited`, some refusals). */
  readonly retryAfterMs?: number;
  /** The server's RefuseReason name (`refused`): `AuthFailed`, `ServerFull`, ... */
  readonly reason?: string;

  constructor(
    readonly code: MoltErrorCode,
    message: string,
    extra: { status?: number; payload?: Uint8Array; retryAfterMs?: number; reason?: string } = {},
  ) {
    super(message);
    this.status = extra.status;
    this.payload = extra.payload;
    this.retryAfterMs = extra.retryAfterMs;
    this.reason = extra.reason;
  }
}

/** The molt statuses a Response carries (sdk/include/molt/molt.h). */
export const Status = {
  OK: 0,
  INVALID_ARGUMENT: -1,
  NOT_FOUND: -2,
  STATE: -4,
  INTERNAL: -5,
  UNSUPPORTED: -7,
  REJECTED: -9,
  TIMEOUT: -12,
  RATE_LIMITED: -13,
} as const;
