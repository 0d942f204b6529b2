// SPDX-License-Identifier: Apache-2.0
// A server that lies is survived: a fake server (the ws package's) sends what moltd never would,
// and the client ends with a reason instead of throwing, answering a request twice, or hanging.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as flatbuffers from 'flatbuffers';
import WebSocket, { WebSocketServer } from 'ws';

import { MoltClient } from '../dist/index.js';
import { decodeFrame } from '../dist/frames.js';
import * as w from '../dist/wire/molt_wire_generated.js';
import { until } from './support.mjs';

function frame(build) {
  const b = new flatbuffers.Builder(256);
  const [type, body] = build(b);
  w.Envelope.finishSizePrefixedEnvelopeBuffer(b, w.Envelope.createEnvelope(b, type, body));
  return b.asUint8Array().slice();
}

// The fake server's table: game.Get (a request) and, with `walking`, the channel kinds of wire
// 2.5: game.Pos (unreliable, latest wins, 900-byte cap), game.Chat (unreliable, every message
// delivered) and game.Move (a predicted intent).
function welcome({ pingIntervalMs = 1000, walking = false } = {}) {
  return frame((b) => {
    const get = w.ChannelInfo.createChannelInfo(b, 1, b.createString('game.Get'), w.ChannelKind.Request, b.createString('game.Get'), Infinity, 1, 5000);
    const more = !walking
      ? []
      : [
          [2, 'game.Pos', w.ChannelKind.Unreliable, true, 900],
          [3, 'game.Chat', w.ChannelKind.Unreliable, false, 900],
          [4, 'game.Move', w.ChannelKind.PredictedIntent, false, 0],
        ].map(([id, name, kind, latest, cap]) =>
          w.ChannelInfo.createChannelInfo(b, id, b.createString(name), kind, b.createString(name), Infinity, 1, 0, w.ChannelPriority.Low, latest, cap),
        );
    const channels = w.Welcome.createChannelsVector(b, [get, ...more]);
    const token = w.Welcome.createResumeTokenVector(b, [1, 2, 3]);
    return [w.Body.Welcome, w.Welcome.createWelcome(b, 7n, 0n, 60, channels, 8192, 8192, 64, pingIntervalMs, token, false, 30000, 4)];
  });
}

function response(id, value) {
  return frame((b) => [w.Body.Response, w.Response.createResponse(b, id, 0, w.Response.createPayloadVector(b, [value]), 0)]);
}

function event(channel, seq, value) {
  return frame((b) => [w.Body.Event, w.Event.createEvent(b, channel, w.Event.createPayloadVector(b, [value]), seq)]);
}

function acks(accepted, rejected) {
  return frame((b) => [w.Body.Acks, w.Acks.createAcks(b, w.Acks.createAcceptedVector(b, accepted), w.Acks.createRejectedVector(b, rejected))]);
}

// An Acks frame whose accepted vector claims `n` seqs: it runs past the end of the frame.
function acksPastTheEnd(n) {
  const f = acks([0x11223344], []);
  const at = f.findIndex((_, i) => f[i] === 0x44 && f[i + 1] === 0x33 && f[i + 2] === 0x22 && f[i + 3] === 0x11);
  new DataView(f.buffer, f.byteOffset).setUint32(at - 4, n, true); // the vector's length
  return f;
}

// The channel and seq of an Intent frame, or undefined.
function intentOf(bytes) {
  const env = w.Envelope.getSizePrefixedRootAsEnvelope(new flatbuffers.ByteBuffer(new Uint8Array(bytes)));
  if (env.bodyType() !== w.Body.Intent) return undefined;
  const m = env.body(new w.Intent());
  return { channel: m.channel(), seq: m.seq() };
}

function requestIdOf(bytes) {
  const env = w.Envelope.getSizePrefixedRootAsEnvelope(new flatbuffers.ByteBuffer(new Uint8Array(bytes)));
  return env.bodyType() === w.Body.Request ? env.body(new w.Request()).id() : undefined;
}

let wss;
let script; // what the fake server does with each connection: (socket, message) => void
before(async () => {
  wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise((r) => wss.on('listening', r));
  wss.on('connection', (socket) => {
    let hello = true;
    socket.on('message', (data) => {
      if (hello) {
        hello = false;
        socket.send(welcome(script.welcome));
        return;
      }
      script.on?.(socket, data);
    });
  });
});
after(() => new Promise((r) => wss.close(r)));

async function connected(s, options = {}) {
  script = s;
  const client = new MoltClient({ WebSocket, reconnect: false, ...options });
  const states = [];
  client.onState((st, why) => states.push(`${st}: ${why}`));
  await client.connect(`ws://127.0.0.1:${wss.address().port}/`, 'liar');
  return { client, states };
}

for (const [what, send, reason] of [
  ['bytes that are no frame', () => new Uint8Array([1, 2, 3]), /^closed: the server sent a frame of 3 bytes is too short$/],
  ['a size prefix that is not the length', () => new Uint8Array([200, 0, 0, 0, 0, 0, 0, 0]), /size prefix \(200\) is not its length \(4\)/],
  ['a text message', () => 'hello', /^closed: the server sent a text message$/],
  ['a Hello', () => frame((b) => [w.Body.Hello, w.Hello.createHello(b, 2, 0n, b.createString('x'), 0, 0, 0)]), /client-to-server message/],
  ['a second Welcome', () => welcome(), /^closed: the server sent a second welcome$/],
  ['an envelope without a body', () => frame((b) => [w.Body.NONE, 0]), /malformed frame \(an envelope without a body\)/],
  [
    'a replica over the limits',
    () =>
      frame((b) => {
        const fields = Array.from({ length: 65 }, (_, i) => w.ReplicaFieldInfo.createReplicaFieldInfo(b, b.createString(`f${i}`), w.ReplicaFieldType.Int));
        return [w.Body.Replica, w.Replica.createReplica(b, 1, w.ReplicaUpdateKind.Snapshot, b.createString('r'), w.Replica.createFieldsVector(b, fields), 0)];
      }),
    /beyond the client's limits \(4096 replicas, 64 fields, names of 128 bytes\)/,
  ],
  ['an Acks whose seqs run past the frame', () => acksPastTheEnd(4), /malformed frame \(accepted: a vector of 4 seqs at \d+ in \d+ bytes\)$/],
  ['an Acks that claims a billion seqs', () => acksPastTheEnd(1e9), /malformed frame \(accepted: a vector of 1000000000 seqs at/],
]) {
  test(`ends the connection, with the reason, when the server sends ${what}`, async () => {
    let sent = false;
    const { client, states } = await connected({
      on(socket) {
        if (!sent) socket.send(send());
        sent = true;
      },
    });
    const pending = client.request('game.Get').catch((e) => e); // triggers the lie
    await until(() => client.state === 'closed', 'the client to close');
    assert.match(states.at(-1), reason);
    const e = await pending;
    assert.equal(e.code, 'disconnected');
  });
}

test('a request is settled once, whatever the server answers twice or unasked', async () => {
  const { client } = await connected({
    on(socket, data) {
      const id = requestIdOf(data);
      if (id === undefined) return;
      socket.send(response(id, id)); // the answer
      socket.send(response(id, 99)); // again: ignored
      socket.send(response(id + 1000, 98)); // an id never asked: ignored
    },
  });
  const answers = await Promise.all([client.request('game.Get'), client.request('game.Get'), client.request('game.Get')]);
  assert.deepEqual(answers.map((a) => a[0]), [1, 2, 3]);
  assert.equal(client.state, 'connected');
  await client.disconnect();
});

test('a prediction is resolved once, whatever the acks say twice, late, or of seqs never sent', async () => {
  const resolved = [];
  const { client } = await connected(
    {
      welcome: { walking: true },
      on(socket, data) {
        const i = intentOf(data);
        if (i === undefined || i.channel !== 4) return;
        if (i.seq === 1) socket.send(acks([1, 1, 77], [1])); // twice, and rejected too: accepted once
        if (i.seq === 2) socket.send(acks([], [2, 2, 0]));
        if (i.seq === 3) socket.send(acks([3], [])); // after its own timeout: ignored
        if (i.seq === 4) socket.send(acks([4, 3], [3])); // 3 again, late
      },
    },
    { predictTimeoutMs: 150 },
  );
  client.onResolved((channel, seq, accepted, reason) => resolved.push([channel, seq, accepted, reason]));
  assert.equal(client.channel('game.Move').kind, 'predicted_intent');
  assert.equal(client.predict('game.Move', new Uint8Array([1])), 1);
  assert.equal(client.predict('game.Move', new Uint8Array([2])), 2);
  await until(() => resolved.length === 2, 'the first two');
  // The third: the server holds its ack until the client timed it out.
  let late = false;
  script.on = ((on) => (socket, data) => {
    if (intentOf(data)?.seq !== 3) return on(socket, data);
    until(() => resolved.length === 3, 'the timeout').then(() => {
      on(socket, data);
      late = true;
    });
  })(script.on);
  assert.equal(client.predict('game.Move', new Uint8Array([3])), 3);
  assert.deepEqual(client.pending().map((p) => [p.channel, p.seq, [...p.payload]]), [['game.Move', 3, [3]]]);
  await until(() => late, 'the late ack');
  // Sent after the late ack on the same socket: once 4 is resolved, the late ack was read.
  assert.equal(client.predict('game.Move', new Uint8Array([4])), 4);
  await until(() => resolved.length === 4, 'the fourth');
  assert.deepEqual(resolved, [
    ['game.Move', 1, true, 'accepted'],
    ['game.Move', 2, false, 'rejected'],
    ['game.Move', 3, false, 'timeout'],
    ['game.Move', 4, true, 'accepted'],
  ]);
  assert.deepEqual(client.pending(), []);
  assert.equal(client.state, 'connected');
  await client.disconnect();
});

test('unreliable messages carry their channel seq, and a latest-wins channel drops what is older than the newest', async () => {
  const sent = [];
  const { client } = await connected({
    welcome: { walking: true },
    on(socket, data) {
      const i = intentOf(data);
      if (i === undefined) return;
      sent.push([i.channel, i.seq]);
      if (sent.length !== 4) return;
      // game.Pos (latest wins) in serial-number order across the wrap; seq 0 is an older server's.
      for (const seq of [0xfffffffe, 0xffffffff, 3, 2, 3, 0, 4]) socket.send(event(2, seq, seq & 0xff));
      for (const seq of [5, 4, 4]) socket.send(event(3, seq, seq)); // game.Chat: every one
    },
  });
  const heard = [];
  client.on('*', (payload, channel) => heard.push([channel, payload[0]]));
  const pos = client.channel('game.Pos');
  assert.deepEqual([pos.kind, pos.latestWins, pos.maxPayloadBytes, pos.priority], ['unreliable', true, 900, 'low']);
  client.intent('game.Pos', new Uint8Array(900));
  client.intent(pos, new Uint8Array([1]));
  client.intent('game.Chat', new Uint8Array([1]));
  client.intent(pos.id, new Uint8Array([1]));
  assert.throws(() => client.intent('game.Pos', new Uint8Array(901)), {
    code: 'invalid_argument',
    message: 'a payload of 901 bytes exceeds the 900-byte cap of channel "game.Pos" (unreliable payloads fit one datagram)',
  });
  assert.throws(() => client.predict('game.Pos', new Uint8Array(1)), {
    code: 'not_found',
    message: '"game.Pos" is an unreliable channel, not a predicted intent channel',
  });
  await until(() => heard.length === 8, 'the events');
  assert.deepEqual(sent, [[2, 1], [2, 2], [3, 1], [2, 3]]);
  assert.deepEqual(heard, [
    ['game.Pos', 0xfe],
    ['game.Pos', 0xff],
    ['game.Pos', 3],
    ['game.Pos', 0],
    ['game.Pos', 4],
    ['game.Chat', 5],
    ['game.Chat', 4],
    ['game.Chat', 4],
  ]);
  assert.equal(client.staleEvents, 2);
  await client.disconnect();
});

test('a server that goes silent is a lost link', async () => {
  script = { welcome: { pingIntervalMs: 100 } };
  const client = new MoltClient({ WebSocket });
  const states = [];
  client.onState((st, why) => states.push(`${st}: ${why}`));
  await client.connect(`ws://127.0.0.1:${wss.address().port}/`, 'quiet');
  await until(() => client.state === 'reconnecting', 'the silence to be noticed', 5000);
  assert.equal(states.at(-1), 'reconnecting: the server was silent for 2 s');
  await client.disconnect();
});

test('a Redirect is followed when the link ends: a new session on the server it names, as the same user', async () => {
  const hellos = []; // what the server redirected to heard
  const other = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise((r) => other.on('listening', r));
  other.on('connection', (socket) => {
    socket.once('message', (data) => {
      const env = w.Envelope.getSizePrefixedRootAsEnvelope(new flatbuffers.ByteBuffer(new Uint8Array(data)));
      const hello = env.body(new w.Hello());
      hellos.push({ user: hello.user(), resumed: hello.resumeTokenLength() > 0 });
      socket.send(welcome());
    });
  });
  const address = `127.0.0.1:${other.address().port}`;
  let told = false;
  const { client, states } = await connected({
    on(socket) {
      if (told) return;
      told = true;
      socket.send(frame((b) => [w.Body.Redirect, w.Redirect.createRedirect(b, b.createString('nowhere'), b.createString('x'), b.createString('a bad address'))]));
      socket.send(
        frame((b) => [w.Body.Redirect, w.Redirect.createRedirect(b, b.createString(address), b.createString('eu-2'), b.createString('the server is draining'))]),
      );
      socket.send(frame((b) => [w.Body.Bye, w.Bye.createBye(b, b.createString('ServerShutdown'), b.createString('go to eu-2'))]));
    },
  });
  client.request('game.Get').catch(() => {}); // what makes the fake server speak (reconnect is off: followed all the same)
  await until(() => hellos.length === 1 && client.state === 'connected', 'the client on the other server');
  assert.deepEqual(hellos, [{ user: 'liar', resumed: false }]);
  assert.ok(states.includes(`reconnecting: redirected to server eu-2 at ${address} (the server is draining)`), states.join('\n'));
  await client.disconnect();
  await new Promise((r) => other.close(r));
});

test('forged frames decode to a message or a reason, never an exception or a long loop', () => {
  const valid = [welcome(), response(1, 2), frame((b) => [w.Body.Event, w.Event.createEvent(b, 1, w.Event.createPayloadVector(b, [1, 2, 3]))])];
  let seed = 12345;
  const random = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
  let reasons = 0;
  for (let i = 0; i < 20000; ++i) {
    const f = valid[i % valid.length].slice();
    for (let k = 1 + Math.floor(random() * 4); k > 0; --k) f[4 + Math.floor(random() * (f.length - 4))] = Math.floor(random() * 256);
    const m = decodeFrame(f);
    assert.ok(typeof m === 'string' || typeof m.type === 'string');
    if (typeof m === 'string') ++reasons;
  }
  assert.ok(reasons > 0, 'some forgeries are caught');
});
