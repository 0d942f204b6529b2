// SPDX-License-Identifier: Apache-2.0
// Predicted intents and unreliable channels against a real moltd over WebSocket, with the bundled
// walk plugin (plugins/walk): steps accepted, refused by the rules or by the plugin's handler, the
// pending list before the acks, positions on the unreliable walk.Pos, and predictions timed out
// by a server that does not answer in time (paused with SIGSTOP), by a disconnect and by a new
// session, each resolved exactly once.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import WebSocket from 'ws';

import { MoltClient } from '../dist/index.js';
import * as counter from '../examples/counter/build/payloads.js';
import * as walk from '../examples/walk/build/payloads.js';
import { startMoltd, startProxy, until } from './support.mjs';

const options = { WebSocket };

// A client that records its resolutions ([channel, seq, accepted, reason]) and the walk.Pos events
// it hears ({session, x, y}).
function walker(extra = {}) {
  const client = new MoltClient({ ...options, ...extra });
  const resolved = [];
  const positions = [];
  client.onResolved((channel, seq, accepted, reason) => resolved.push([channel, seq, accepted, reason]));
  client.on('walk.Pos', (payload) => positions.push(walk.pos(payload)));
  return { client, resolved, positions };
}

describe('walk against one moltd', () => {
  let server;
  before(async () => {
    server = await startMoltd({ config: { net: { offender_drop_first: 0 } } });
  });
  after(async () => {
    await server?.stop();
  });

  test('the table lists walk.Move as a predicted intent and walk.Pos as unreliable, latest-wins, low', async () => {
    const { client } = walker();
    await client.connect(server.url, 'ada');
    const move = client.channel('walk.Move');
    assert.equal(move.kind, 'predicted_intent');
    assert.equal(move.schema, 'molt.walk.Move');
    assert.equal(move.rate, 60);
    assert.deepEqual(
      (({ kind, schema, latestWins, maxPayloadBytes, priority }) => ({ kind, schema, latestWins, maxPayloadBytes, priority }))(
        client.channel('walk.Pos'),
      ),
      { kind: 'unreliable', schema: 'molt.walk.Pos', latestWins: true, maxPayloadBytes: 900, priority: 'low' },
    );
    assert.equal(client.channel('counter.Add').maxPayloadBytes, 0);
    await client.disconnect();
  });

  test('a step is accepted, resolved once, and its position goes to everyone on walk.Pos', async () => {
    const ada = walker();
    const bob = walker();
    const welcome = await ada.client.connect(server.url, 'ada');
    await bob.client.connect(server.url, 'bob');
    const seq = ada.client.predict('walk.Move', walk.move(1, 0));
    assert.equal(typeof seq, 'number');
    await until(() => ada.resolved.length === 1, 'the step to be resolved');
    assert.deepEqual(ada.resolved, [['walk.Move', seq, true, 'accepted']]);
    assert.deepEqual(ada.client.pending(), []);
    await until(() => ada.positions.length === 1 && bob.positions.length === 1, 'the positions');
    assert.deepEqual(ada.positions, [{ session: welcome.sessionId, x: 1, y: 0 }]);
    assert.deepEqual(bob.positions, ada.positions);
    assert.deepEqual(bob.resolved, [], "a prediction is its sender's alone");
    assert.equal(ada.client.staleEvents, 0);
    await ada.client.disconnect();
    await bob.client.disconnect();
  });

  test('pending lists the predictions oldest first until their acks, then each resolves in order', async () => {
    const { client, resolved, positions } = walker();
    await client.connect(server.url, 'cy');
    const steps = [walk.move(1, 0), walk.move(0, 1), walk.move(-1, 0)];
    const seqs = steps.map((s) => client.predict(client.channel('walk.Move'), s));
    assert.deepEqual(seqs, [seqs[0], seqs[0] + 1, seqs[0] + 2]);
    const pending = client.pending();
    assert.deepEqual(
      pending.map((p) => [p.channel, p.seq, walk.step(p.payload)]),
      [
        ['walk.Move', seqs[0], { dx: 1, dy: 0 }],
        ['walk.Move', seqs[1], { dx: 0, dy: 1 }],
        ['walk.Move', seqs[2], { dx: -1, dy: 0 }],
      ],
    );
    assert.deepEqual(client.pending('walk.Move'), pending);
    assert.deepEqual(client.pending('counter.Add'), []);
    await until(() => resolved.length === 3, 'three resolutions');
    assert.deepEqual(resolved, seqs.map((seq) => ['walk.Move', seq, true, 'accepted']));
    assert.deepEqual(client.pending(), []);
    await until(() => positions.length === 3, 'three positions');
    assert.deepEqual(positions.map(({ x, y }) => [x, y]), [[1, 0], [1, 1], [0, 1]]);
    await client.disconnect();
  });

  test('a step the rules refuse is rejected, and nothing moved', async () => {
    const { client, resolved, positions } = walker();
    const dropped = [];
    client.onError((e) => dropped.push(e));
    await client.connect(server.url, 'dee');
    const far = client.predict('walk.Move', walk.move(2, 0));
    await until(() => resolved.length === 1, 'the rejection');
    assert.deepEqual(resolved, [['walk.Move', far, false, 'rejected']]);
    await until(() => dropped.length === 1, 'its Error frame');
    assert.equal(dropped[0].reason, 'RuleViolated');
    assert.equal(dropped[0].channel, 'walk.Move');
    const next = client.predict('walk.Move', walk.move(0, -1));
    await until(() => resolved.length === 2, 'the next step');
    assert.deepEqual(resolved[1], ['walk.Move', next, true, 'accepted']);
    await until(() => positions.length === 1, 'its position');
    assert.deepEqual([positions[0].x, positions[0].y], [0, -1], 'the refused step moved nothing');
    await client.disconnect();
  });

  test("a step off the square is refused by the plugin's handler: rejected", async () => {
    const { client, resolved, positions } = walker();
    await client.connect(server.url, 'eve');
    // 100 steps to the edge at walk.Move's rate (60 a second), then one more.
    for (let i = 0; i < 101; ) {
      try {
        client.predict('walk.Move', walk.move(1, 0));
        ++i;
      } catch (e) {
        if (e.code !== 'rate_limited') throw e;
        await new Promise((r) => setTimeout(r, 5));
      }
    }
    await until(() => resolved.length === 101, '101 resolutions');
    assert.deepEqual(
      resolved.map(([, , , reason]) => reason),
      [...Array(100).fill('accepted'), 'rejected'],
    );
    assert.equal(positions.at(-1).x, 100);
    assert.equal(positions.length, 100, 'no position for the refused step');
    await client.disconnect();
  });

  test('an unreliable payload over its cap, and a prediction on the wrong kind, never leave', async () => {
    const { client, resolved } = walker();
    await client.connect(server.url, 'fin');
    assert.throws(() => client.intent('walk.Pos', new Uint8Array(901)), {
      code: 'invalid_argument',
      message: 'a payload of 901 bytes exceeds the 900-byte cap of channel "walk.Pos" (unreliable payloads fit one datagram)',
    });
    assert.throws(() => client.predict('counter.Add', counter.add(1)), {
      code: 'not_found',
      message: '"counter.Add" is an intent channel, not a predicted intent channel',
    });
    assert.throws(() => client.intent('walk.Move', walk.move(1, 0)), {
      code: 'not_found',
      message: '"walk.Move" is a predicted intent channel, not an intent channel',
    });
    assert.throws(() => client.predict(client.channel('counter.Get').id, new Uint8Array(1)), {
      code: 'not_found',
      message: 'the server has no predicted intent channel with id ' + client.channel('counter.Get').id,
    });
    assert.deepEqual(client.pending(), []);
    await client.disconnect();
    assert.throws(() => client.predict('walk.Move', walk.move(1, 0)), { code: 'state' });
    assert.deepEqual(resolved, []);
  });

  test('a disconnect resolves what is still pending as timed out, once', async () => {
    const { client, resolved } = walker();
    await client.connect(server.url, 'gus');
    const seq = client.predict('walk.Move', walk.move(0, 1));
    const closed = client.disconnect();
    assert.deepEqual(resolved, [['walk.Move', seq, false, 'timeout']]);
    await closed;
    assert.deepEqual(client.pending(), []);
    assert.equal(resolved.length, 1);
  });
});

test('a prediction the server does not answer in time times out, and its late ack changes nothing', async () => {
  const server = await startMoltd();
  try {
    const { client, resolved, positions } = walker({ predictTimeoutMs: 200 });
    await client.connect(server.url, 'hal');
    let seq;
    server.child.kill('SIGSTOP'); // the server reads nothing until SIGCONT
    try {
      seq = client.predict('walk.Move', walk.move(0, 1));
      await until(() => resolved.length === 1, 'the timeout');
    } finally {
      server.child.kill('SIGCONT');
    }
    assert.deepEqual(resolved, [['walk.Move', seq, false, 'timeout']]);
    assert.deepEqual(client.pending(), []);
    // The server takes the step now: its position, then its ack, which finds nothing pending.
    await until(() => positions.length === 1, "the late step's position");
    const next = client.predict('walk.Move', walk.move(0, 1));
    // Acked after the late one on the same link: once this one resolved, the late ack was read.
    await until(() => resolved.length === 2, 'the next step');
    assert.deepEqual(resolved, [
      ['walk.Move', seq, false, 'timeout'],
      ['walk.Move', next, true, 'accepted'],
    ]);
    // A timeout is the client's verdict, not the server's: the server did take the late step, and
    // its positions are what an app reconciles with.
    await until(() => positions.length === 2, 'the next position');
    assert.deepEqual(positions.map(({ y }) => y), [1, 2]);
    await client.disconnect();
  } finally {
    await server.stop();
  }
});

test('a prediction sent while the link was down times out when a new session comes instead', async () => {
  const server = await startMoltd({ config: { net: { resume_window_seconds: 0 } } });
  const proxy = await startProxy(server.port);
  try {
    const { client, resolved } = walker();
    await client.connect(proxy.url, 'ian');
    proxy.cut();
    await until(() => client.state === 'reconnecting', 'reconnecting');
    const seq = client.predict('walk.Move', walk.move(1, 1)); // queued for the old session
    assert.equal(client.pending().length, 1);
    await until(() => client.state === 'connected', 'connected again');
    assert.deepEqual(resolved, [['walk.Move', seq, false, 'timeout']]);
    const next = client.predict('walk.Move', walk.move(1, 1));
    await until(() => resolved.length === 2, 'a step in the new session');
    assert.deepEqual(resolved[1], ['walk.Move', next, true, 'accepted']);
    await client.disconnect();
  } finally {
    await proxy.close();
    await server.stop();
  }
});
