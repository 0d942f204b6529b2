// SPDX-License-Identifier: Apache-2.0
// The wire (schemas/molt_wire.fbs, docs/network.md) in and out: the frames this client sends, built
// with flatc's generated code, and what the server sends, decoded at once into plain objects so
// that nothing later reads a frame the server may have forged. FlatBuffers' TypeScript runtime
// has no verifier, so decoding is defensive instead: the size prefix must match the message, every
// vector must fit the frame, and a read the runtime refuses (a view past the end) is a malformed
// frame, never an exception in the app.
import * as flatbuffers from 'flatbuffers';

import * as w from './wire/molt_wire_generated.js';

/** The wire version this client speaks (kernel/src/wire/wire.h, kProtocolVersion). */
export const PROTOCOL_VERSION = 2;
/** A frame's envelope and size prefix take at most this many bytes beyond the payload. */
export const FRAME_OVERHEAD = 64;

/**
 * `unreliable` (wire 2.5): both ways, payloads of at most `maxPayloadBytes`, "lost > late";
 * `predicted_intent` (wire 2.5): an intent the server acknowledges, accepted or rejected.
 */
export type ChannelKind = 'intent' | 'request' | 'event' | 'unreliable' | 'predicted_intent';
/** How an unreliable channel fares on a strained link: `low` is shed first, `high` always flows. */
export type ChannelPriority = 'low' | 'high';

/** One channel of the server's table, as its Welcome (or a later Channels frame) lists it. */
export interface ChannelInfo {
  id: number;
  name: string;
  kind: ChannelKind;
  /** The payload's root type, e.g. `counter.Add`. */
  schema: string;
  /** Tokens per second for this session (Infinity: unlimited) and the bucket's size. */
  rate: number;
  burst: number;
  /** Requests: the server answers a timeout after this long. */
  timeoutMs: number;
  /** Unreliable channels: shed first (`low`) or always flowing (`high`); `low` for the others. */
  priority: ChannelPriority;
  /** Unreliable channels: a message older (by its seq) than the newest one taken is dropped. */
  latestWins: boolean;
  /** Unreliable channels: the payload cap (900 bytes); 0: the frame cap alone. */
  maxPayloadBytes: number;
}

/** The server's Welcome: the session and the limits it measures this client against. */
export interface Welcome {
  sessionId: bigint;
  resumed: boolean;
  protocolHash: bigint;
  tickRate: number;
  channels: ChannelInfo[];
  maxFrameBytes: number;
  bytesPerTick: number;
  messagesPerTick: number;
  budgetBurstTicks: number;
  pingIntervalMs: number;
  resumeWindowMs: number;
  resumeToken: Uint8Array;
  /** The server takes the device's quality while connected (wire 2.7). */
  deviceHints: boolean;
}

export type ReplicaFieldType = 'int' | 'float' | 'bytes';
export type ReplicaValue = bigint | number | Uint8Array;
/** One value of a replica message: every reading, since a delta does not say the field's type. */
export interface ReplicaReading {
  field: number;
  int: bigint;
  float: number;
  bytes: Uint8Array;
}

export type ServerMessage =
  | { type: 'welcome'; welcome: Welcome }
  | { type: 'refuse'; reason: string; text: string; retryAfterMs: number }
  | { type: 'response'; id: number; status: number; payload: Uint8Array; retryAfterMs: number }
  | { type: 'event'; channel: number; payload: Uint8Array; seq: number }
  | { type: 'acks'; accepted: number[]; rejected: number[] }
  | { type: 'ping'; seq: number; timeNs: bigint }
  | { type: 'pong'; seq: number; timeNs: bigint }
  | { type: 'error'; reason: string; channel: number; retryAfterMs: number; text: string }
  | { type: 'bye'; reason: string; text: string }
  | {
      type: 'replica';
      id: number;
      kind: 'snapshot' | 'delta' | 'remove' | 'unknown';
      name: string;
      fields: { name: string; type: ReplicaFieldType | 'unknown' }[];
      values: ReplicaReading[];
    }
  | { type: 'channels'; protocolHash: bigint; channels: ChannelInfo[] }
  | { type: 'redirect'; address: string; server: string; reason: string }
  | { type: 'client-to-server' }
  | { type: 'unknown' };

const KINDS: Record<number, ChannelKind> = {
  [w.ChannelKind.Intent]: 'intent',
  [w.ChannelKind.Request]: 'request',
  [w.ChannelKind.Event]: 'event',
  [w.ChannelKind.Unreliable]: 'unreliable',
  [w.ChannelKind.PredictedIntent]: 'predicted_intent',
};
const FIELD_TYPES: Record<number, ReplicaFieldType> = {
  [w.ReplicaFieldType.Int]: 'int',
  [w.ReplicaFieldType.Float]: 'float',
  [w.ReplicaFieldType.Bytes]: 'bytes',
};
const UPDATE_KINDS: Record<number, 'snapshot' | 'delta' | 'remove'> = {
  [w.ReplicaUpdateKind.Snapshot]: 'snapshot',
  [w.ReplicaUpdateKind.Delta]: 'delta',
  [w.ReplicaUpdateKind.Remove]: 'remove',
};

// --- Out -----------------------------------------------------------------------------------------

const encoder = new TextEncoder();

function bytesOf(data: Uint8Array | string | undefined): Uint8Array {
  if (data === undefined) return new Uint8Array(0);
  return typeof data === 'string' ? encoder.encode(data) : data;
}

// A byte vector aligned to 8, as libmolt_client sends payloads: a server (or a plugin) may read
// the FlatBuffer inside in place.
function payloadVector(b: flatbuffers.Builder, data: Uint8Array): flatbuffers.Offset {
  b.startVector(1, data.length, 8);
  for (let i = data.length - 1; i >= 0; --i) b.addInt8(data[i]!);
  return b.endVector();
}

function finish(b: flatbuffers.Builder, type: w.Body, body: flatbuffers.Offset): Uint8Array {
  w.Envelope.finishSizePrefixedEnvelopeBuffer(b, w.Envelope.createEnvelope(b, type, body));
  return b.asUint8Array().slice();
}

export function helloFrame(
  user: string,
  credentials?: Uint8Array | string,
  joinData?: Uint8Array,
  resumeToken?: Uint8Array,
  deviceQuality = 0,
): Uint8Array {
  const b = new flatbuffers.Builder(128);
  const u = b.createString(user);
  const c = payloadVector(b, bytesOf(credentials));
  const j = payloadVector(b, bytesOf(joinData));
  const r = payloadVector(b, bytesOf(resumeToken));
  // protocol_hash 0: accept the server's channel table as it is.
  return finish(b, w.Body.Hello, w.Hello.createHello(b, PROTOCOL_VERSION, 0n, u, c, j, r, deviceQuality));
}

/** The device's quality changed (wire 2.7; only to a server whose Welcome said `deviceHints`). */
export function deviceFrame(quality: number): Uint8Array {
  const b = new flatbuffers.Builder(32);
  return finish(b, w.Body.Device, w.Device.createDevice(b, quality));
}

/**
 * An intent; `seq` (wire 2.5) is the channel's next sequence number on an unreliable channel, the
 * client's on a predicted intent, 0 on any other.
 */
export function intentFrame(channel: number, payload: Uint8Array, seq = 0): Uint8Array {
  const b = new flatbuffers.Builder(payload.length + FRAME_OVERHEAD);
  const p = payloadVector(b, payload);
  return finish(b, w.Body.Intent, w.Intent.createIntent(b, channel, p, seq));
}

export function requestFrame(channel: number, id: number, payload: Uint8Array): Uint8Array {
  const b = new flatbuffers.Builder(payload.length + FRAME_OVERHEAD);
  const p = payloadVector(b, payload);
  return finish(b, w.Body.Request, w.Request.createRequest(b, channel, id, p));
}

export function pingFrame(seq: number, timeNs: bigint): Uint8Array {
  const b = new flatbuffers.Builder(48);
  return finish(b, w.Body.Ping, w.Ping.createPing(b, seq, timeNs));
}

export function pongFrame(seq: number, timeNs: bigint): Uint8Array {
  const b = new flatbuffers.Builder(48);
  return finish(b, w.Body.Pong, w.Pong.createPong(b, seq, timeNs));
}

export function byeFrame(reason: string, text = ''): Uint8Array {
  const b = new flatbuffers.Builder(64);
  const r = b.createString(reason);
  const t = b.createString(text);
  return finish(b, w.Body.Bye, w.Bye.createBye(b, r, t));
}

// --- In ------------------------------------------------------------------------------------------

class Malformed extends Error {}

/**
 * Decodes one frame from the server (its size prefix included). Returns the message, or a string
 * saying why the frame is malformed.
 */
export function decodeFrame(frame: Uint8Array): ServerMessage | string {
  if (frame.length < 8) return `a frame of ${frame.length} bytes is too short`;
  const size = new DataView(frame.buffer, frame.byteOffset, 4).getUint32(0, true);
  if (size !== frame.length - 4) {
    return `a frame whose size prefix (${size}) is not its length (${frame.length - 4})`;
  }
  try {
    return decodeEnvelope(frame);
  } catch (e) {
    return `the server sent a malformed frame (${e instanceof Malformed ? e.message : 'out of bounds'})`;
  }
}

function decodeEnvelope(frame: Uint8Array): ServerMessage {
  const bb = new flatbuffers.ByteBuffer(frame);
  const limit = frame.length;
  // A vector's length must fit the frame, or a forged one would make a loop of billions.
  const len = (n: number, what: string): number => {
    if (n < 0 || n > limit) throw new Malformed(`${what}: a vector of ${n} in ${limit} bytes`);
    return n;
  };
  const bytes = (a: Uint8Array | null): Uint8Array => (a === null ? new Uint8Array(0) : a.slice());
  const str = (s: string | null): string => s ?? '';
  const env = w.Envelope.getSizePrefixedRootAsEnvelope(bb);
  const type = env.bodyType();
  switch (type) {
    case w.Body.Welcome: {
      const m: w.Welcome = env.body(new w.Welcome());
      return {
        type: 'welcome',
        welcome: {
          sessionId: m.sessionId(),
          resumed: m.resumed(),
          protocolHash: m.protocolHash(),
          tickRate: m.tickRate(),
          channels: channelsOf(len(m.channelsLength(), 'channels'), (i) => m.channels(i)),
          maxFrameBytes: m.maxFrameBytes(),
          bytesPerTick: m.bytesPerTick(),
          messagesPerTick: m.messagesPerTick(),
          budgetBurstTicks: m.budgetBurstTicks(),
          pingIntervalMs: m.pingIntervalMs(),
          resumeWindowMs: m.resumeWindowMs(),
          resumeToken: bytes(m.resumeTokenArray()),
          deviceHints: m.deviceHints(),
        },
      };
    }
    case w.Body.Refuse: {
      const m: w.Refuse = env.body(new w.Refuse());
      return {
        type: 'refuse',
        reason: w.RefuseReason[m.reason()] ?? `RefuseReason ${m.reason()}`,
        text: str(m.text()),
        retryAfterMs: m.retryAfterMs(),
      };
    }
    case w.Body.Response: {
      const m: w.Response = env.body(new w.Response());
      len(m.payloadLength(), 'payload');
      return {
        type: 'response',
        id: m.id(),
        status: m.status(),
        payload: bytes(m.payloadArray()),
        retryAfterMs: m.retryAfterMs(),
      };
    }
    case w.Body.Event: {
      const m: w.Event = env.body(new w.Event());
      len(m.payloadLength(), 'payload');
      return { type: 'event', channel: m.channel(), payload: bytes(m.payloadArray()), seq: m.seq() };
    }
    case w.Body.Acks: {
      // FlatBuffers' runtime reads past the end as zeros rather than failing, so each vector is
      // checked to lie inside the frame before it is read.
      const m: w.Acks = env.body(new w.Acks());
      const seqs = (field: number, what: string): number[] => {
        const o = bb.__offset(m.bb_pos, field);
        if (o === 0) return [];
        const start = bb.__vector(m.bb_pos + o);
        const n = bb.__vector_len(m.bb_pos + o);
        if (n < 0 || start < 0 || start + 4 * n > limit) {
          throw new Malformed(`${what}: a vector of ${n} seqs at ${start} in ${limit} bytes`);
        }
        const out: number[] = [];
        for (let i = 0; i < n; ++i) out.push(bb.readUint32(start + 4 * i));
        return out;
      };
      return { type: 'acks', accepted: seqs(4, 'accepted'), rejected: seqs(6, 'rejected') };
    }
    case w.Body.Ping: {
      const m: w.Ping = env.body(new w.Ping());
      return { type: 'ping', seq: m.seq(), timeNs: m.timeNs() };
    }
    case w.Body.Pong: {
      const m: w.Pong = env.body(new w.Pong());
      return { type: 'pong', seq: m.seq(), timeNs: m.timeNs() };
    }
    case w.Body.Error: {
      const m: w.Error = env.body(new w.Error());
      return {
        type: 'error',
        reason: w.RejectReason[m.reason()] ?? `RejectReason ${m.reason()}`,
        channel: m.channel(),
        retryAfterMs: m.retryAfterMs(),
        text: str(m.text()),
      };
    }
    case w.Body.Bye: {
      const m: w.Bye = env.body(new w.Bye());
      return { type: 'bye', reason: str(m.reason()) || 'Bye', text: str(m.text()) };
    }
    case w.Body.Replica: {
      const m: w.Replica = env.body(new w.Replica());
      const fields = [];
      for (let i = 0, n = len(m.fieldsLength(), 'fields'); i < n; ++i) {
        const f = m.fields(i);
        fields.push({ name: str(f?.name() ?? null), type: FIELD_TYPES[f?.type() ?? -1] ?? 'unknown' });
      }
      const values: ReplicaReading[] = [];
      for (let i = 0, n = len(m.valuesLength(), 'values'); i < n; ++i) {
        const v = m.values(i);
        if (v === null) continue;
        len(v.bytesLength(), 'bytes');
        values.push({ field: v.field(), int: v.intValue(), float: v.floatValue(), bytes: bytes(v.bytesArray()) });
      }
      return {
        type: 'replica',
        id: m.id(),
        kind: UPDATE_KINDS[m.kind()] ?? 'unknown',
        name: str(m.name()),
        fields,
        values,
      };
    }
    case w.Body.Channels: {
      const m: w.Channels = env.body(new w.Channels());
      return {
        type: 'channels',
        protocolHash: m.protocolHash(),
        channels: channelsOf(len(m.channelsLength(), 'channels'), (i) => m.channels(i)),
      };
    }
    case w.Body.Redirect: {
      const m: w.Redirect = env.body(new w.Redirect());
      return { type: 'redirect', address: str(m.address()), server: str(m.server()), reason: str(m.reason()) };
    }
    case w.Body.Hello:
    case w.Body.Intent:
    case w.Body.Request:
      return { type: 'client-to-server' };
    case w.Body.NONE:
      throw new Malformed('an envelope without a body');
    default:
      return { type: 'unknown' }; // a body from a newer server: ignored
  }
}

function channelsOf(n: number, at: (i: number) => w.ChannelInfo | null): ChannelInfo[] {
  const out: ChannelInfo[] = [];
  for (let i = 0; i < n; ++i) {
    const c = at(i);
    const name = c?.name();
    if (c === null || name === null || name === undefined) continue;
    out.push({
      id: c.id(),
      name,
      kind: KINDS[c.kind()] ?? 'event',
      schema: c.schema() ?? '',
      rate: c.rate(),
      burst: c.burst(),
      timeoutMs: c.timeoutMs(),
      priority: c.priority() === w.ChannelPriority.High ? 'high' : 'low',
      latestWins: c.latestWins(),
      maxPayloadBytes: c.maxPayloadBytes(),
    });
  }
  return out;
}
