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

function welcome({ pingIntervalMs = 1000 } = {}) {
  return frame((b) => {
    const get = w.ChannelInfo.createChannelInfo(b, 1, b.createString('game.Get'), w.ChannelKind.Request, b.createString('game.Get'), Infinity, 1, 5000);
    const channels = w.Welcome.createChannelsVector(b, [get]);
    const token = w.Welcome.createResumeTokenVector(b, [1, 2, 3]);
    return [w.Body.Welcome, w.Welcome.createWelcome(b, 7n, 0n, 60, channels, 8192, 8192, 64, pingIntervalMs, token, false, 30000, 4)];
  });
}

function response(id, value) {
  return frame((b) => [w.Body.Response, w.Response.createResponse(b, id, 0, w.Response.createPayloadVector(b, [value]), 0)]);
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

async function connected(s) {
  script = s;
  const client = new MoltClient({ WebSocket, reconnect: false });
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
