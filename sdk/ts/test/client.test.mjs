// SPDX-License-Identifier: Apache-2.0
// The TypeScript client against a real moltd over WebSocket: joins, requests, rejections, intents
// checked before they leave, replicas, pacing under the server's budget, resume after a cut link,
// refusals with the server's reasons, and AbortSignals.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import WebSocket from 'ws';

import { MoltClient, MoltError } from '../dist/index.js';
import * as counter from '../examples/counter/build/payloads.js';
import { closedPort, sendPaced, startMoltd, startProxy, until } from './support.mjs';

const options = { WebSocket };

describe('against one moltd', () => {
  let server;
  before(async () => {
    // Every refused intent gets its Error frame (by default the first 5 are dropped silently).
    server = await startMoltd({ config: { net: { offender_drop_first: 0 } } });
  });
  after(async () => {
    await server?.stop();
  });

  test('joins and gets the Welcome with the server table and limits', async () => {
    const client = new MoltClient(options);
    const states = [];
    client.onState((s, why) => states.push(why ? `${s}: ${why}` : s));
    const welcome = await client.connect(server.url, 'ada');
    assert.equal(client.state, 'connected');
    assert.deepEqual(states, ['connecting', 'connected']);
    assert.ok(welcome.sessionId > 0n);
    assert.equal(welcome.resumed, false);
    assert.ok(welcome.resumeToken.length > 0);
    assert.equal(welcome.maxFrameBytes, 8192);
    const add = client.channel('counter.Add');
    assert.equal(add.kind, 'intent');
    assert.equal(add.schema, 'molt.counter.Add');
    assert.equal(add.rate, 5);
    assert.equal(client.channel('counter.Get').kind, 'request');
    assert.equal(client.channel('no.Such'), undefined);
    await client.disconnect();
    assert.equal(client.state, 'idle');
    assert.deepEqual(states.at(-1), 'idle: disconnected by the app');
  });

  test('says the device quality in the Hello and while connected, and nothing out of range', async () => {
    const client = new MoltClient(options);
    for (const bad of [-1, Number.NaN, 17]) {
      assert.throws(
        () => client.setDeviceQuality(bad),
        (e) => e instanceof MoltError && e.code === 'invalid_argument' && e.message.includes('[0, 16]'),
      );
    }
    client.setDeviceQuality(0.3);
    const welcome = await client.connect(server.url, 'dev');
    assert.equal(welcome.deviceHints, true);
    let seen;
    const look = async () => {
      seen = (await server.admin(`/api/v1/sessions/${welcome.sessionId}`)).device_quality;
    };
    await look();
    assert.ok(Math.abs(seen - 0.3) < 1e-6, `the server has ${seen}`);
    client.setDeviceQuality(1.5);
    for (let i = 0; i < 200 && seen !== 1.5; ++i) {
      await new Promise((r) => setTimeout(r, 10));
      await look();
    }
    assert.equal(seen, 1.5);
    assert.equal(client.state, 'connected');
    await client.disconnect();
  });

  test('answers requests, each promise settled once with its own answer', async () => {
    const client = new MoltClient(options);
    await client.connect(server.url, 'bea');
    const before = counter.value(await client.request('counter.Get', counter.get('bea')));
    assert.equal(before, 0n);
    client.intent('counter.Add', counter.add(7));
    // Requests in flight at once (counter.Get allows 10 a second): every one answered, once, with
    // its own value; the intent before them was handled first.
    let answered = 0;
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        client.request('counter.Get', counter.get('bea')).then((p) => (++answered, counter.value(p))),
      ),
    );
    assert.equal(answered, 8);
    assert.ok(answers.every((v) => v === 7n), `answers: ${answers}`);
    await client.disconnect();
  });

  test('takes the channel object channel(name) returns, beside the name and the id', async () => {
    const client = new MoltClient(options);
    await client.connect(server.url, 'dot');
    const add = client.channel('counter.Add');
    const get = client.channel('counter.Get');
    const echoes = [];
    client.on(client.channel('counter.Echoed'), (p) => echoes.push(counter.echoed(p)));
    client.intent(add, counter.add(2));
    client.intent(add.id, counter.add(3));
    assert.equal(counter.value(await client.request(get, counter.get('dot'))), 5n);
    assert.equal(counter.value(await client.request(get.id, counter.get('dot'))), 5n);
    client.intent(client.channel('counter.Echo'), counter.echo(1n));
    await until(() => echoes.length === 1, 'the echo');
    assert.deepEqual(echoes, [1n]);
    // The wrong kind is refused naming the channel, as it is for a name.
    assert.throws(() => client.intent(get, new Uint8Array(1)), { code: 'not_found', message: /^"counter\.Get" is a request channel, not an intent channel$/ });
    await client.disconnect();
  });

  test('carries a rejection with its reason and refuses locally what the server would refuse', async () => {
    const client = new MoltClient(options);
    const dropped = [];
    client.onError((e) => dropped.push(e));
    await client.connect(server.url, 'cy');
    // counter.Get's rule: user at most 64 bytes.
    const e = await client.request('counter.Get', counter.get('x'.repeat(65))).catch((x) => x);
    assert.ok(e instanceof MoltError, String(e));
    assert.equal(e.code, 'rejected');
    assert.equal(e.status, -9);
    assert.match(e.message, /counter\.Get/);
    // Checked before they leave: unknown channel, wrong kind, too large, over the rate.
    assert.throws(() => client.intent('no.Such', new Uint8Array(1)), { code: 'not_found', message: 'the server has no channel "no.Such"' });
    assert.throws(() => client.intent('counter.Get', new Uint8Array(1)), { code: 'not_found', message: /^"counter\.Get" is a request channel, not an intent channel$/ });
    assert.throws(() => client.intent('counter.Add', new Uint8Array(9000)), {
      code: 'invalid_argument',
      message: "a payload of 9000 bytes does not fit the server's 8192-byte frames",
    });
    for (let i = 0; i < 5; ++i) client.intent('counter.Add', counter.add(1)); // the burst
    assert.throws(() => client.intent('counter.Add', counter.add(1)), {
      code: 'rate_limited',
      message: 'channel "counter.Add" allows 5 per second: the server would refuse this one',
    });
    // A value the rule refuses leaves (the client does not know the rules) and the server says why.
    await new Promise((r) => setTimeout(r, 1100));
    client.intent('counter.Add', counter.add(11));
    await until(() => dropped.length > 0, 'an Error frame');
    assert.equal(dropped[0].reason, 'RuleViolated');
    assert.equal(dropped[0].channel, 'counter.Add');
    assert.equal(client.state, 'connected');
    await client.disconnect();
    const r = await client.request('counter.Get', counter.get()).catch((x) => x);
    assert.equal(r.code, 'state');
  });

  test('keeps replicas: a snapshot on join, then each changed field', async () => {
    const client = new MoltClient(options);
    const seen = [];
    await client.connect(server.url, 'dee');
    await until(() => client.replica('counter') !== undefined, 'the counter replica');
    client.onReplica('counter', (r, change, field) => seen.push([change, field]));
    assert.deepEqual(seen[0], ['snapshot', undefined]); // held ones are announced at once
    const start = client.replica('counter').get('value');
    assert.equal(typeof start, 'bigint');
    client.intent('counter.Add', counter.add(3));
    await until(() => client.replica('counter').get('value') === start + 3n, 'the counter to change');
    assert.ok(seen.some(([c, f]) => c === 'changed' && f === 'value'));
    assert.equal(new TextDecoder().decode(client.replica('counter').get('last')), 'dee');
    await client.disconnect();
    assert.notEqual(client.replica('counter'), undefined, 'last known after a disconnect');
  });

  test("a stream at a channel's full rate is never refused: every echo back once, in order", async () => {
    const client = new MoltClient(options);
    const echoes = [];
    const dropped = [];
    client.on('counter.Echoed', (p) => echoes.push(counter.echoed(p)));
    client.onError((e) => dropped.push(e));
    await client.connect(server.url, 'fin');
    // counter.Echo: 200 a second, a burst of 200; the app sends as fast as the client lets it.
    await sendPaced(client, 'counter.Echo', 1000, (i) => counter.echo(BigInt(i)));
    await until(() => echoes.length === 1000 || dropped.length > 0, '1000 echoes', 20_000);
    assert.deepEqual(dropped, []);
    assert.deepEqual(echoes, Array.from({ length: 1000 }, (_, i) => BigInt(i + 1)));
    await client.disconnect();
  });

  test('an aborted request settles once as aborted and its late answer is ignored', async () => {
    const client = new MoltClient(options);
    await client.connect(server.url, 'eve');
    const ac = new AbortController();
    const p = client.request('counter.Get', counter.get(), { signal: ac.signal });
    ac.abort();
    const e = await p.catch((x) => x);
    assert.equal(e.code, 'aborted');
    const pre = new AbortController();
    pre.abort();
    assert.equal((await client.request('counter.Get', counter.get(), { signal: pre.signal }).catch((x) => x)).code, 'aborted');
    // The client still works, and answers go where they belong.
    assert.equal(typeof counter.value(await client.request('counter.Get', counter.get())), 'bigint');
    await client.disconnect();
  });

  test('surfaces a refusal with the server reason', async () => {
    const client = new MoltClient(options);
    const states = [];
    client.onState((s, why) => states.push(`${s}: ${why}`));
    const e = await client.connect(server.url, '').catch((x) => x);
    assert.ok(e instanceof MoltError);
    assert.equal(e.code, 'refused');
    assert.equal(e.reason, 'BadHello');
    assert.match(e.message, /^BadHello: /);
    assert.equal(client.state, 'closed');
    assert.equal(states.at(-1), `closed: ${e.message}`);
    // A closed client may connect again.
    await client.connect(server.url, 'fay');
    await client.disconnect();
  });

  test('a connect with nothing listening fails as disconnected, and an aborted one as aborted', async () => {
    const client = new MoltClient(options);
    const nowhere = `ws://127.0.0.1:${await closedPort()}/`;
    const e = await client.connect(nowhere, 'gus').catch((x) => x);
    assert.equal(e.code, 'disconnected');
    assert.ok(e.message.startsWith(`cannot connect to ${nowhere}: the link closed`), e.message);
    const ac = new AbortController();
    const p = client.connect(server.url, 'gus', { signal: ac.signal });
    ac.abort();
    assert.equal((await p.catch((x) => x)).code, 'aborted');
    assert.equal(client.state, 'idle');
    const none = await new MoltClient().connect(server.url, 'gus').catch((x) => x);
    assert.equal(none.code, globalThis.WebSocket ? undefined : 'state');
  });
});

test('pacing keeps a full-speed client under a tight transport budget; unpaced, it is ended as Flood', async () => {
  // 2 messages a tick at 60 Hz: 120 a second, below counter.Echo's own 200.
  const server = await startMoltd({ config: { net: { messages_per_tick: 2 } } });
  try {
    const client = new MoltClient(options);
    const echoes = [];
    client.on('counter.Echoed', (p) => echoes.push(counter.echoed(p)));
    const welcome = await client.connect(server.url, 'hal');
    assert.equal(welcome.messagesPerTick, 2);
    const n = 400;
    await sendPaced(client, 'counter.Echo', n, (i) => counter.echo(BigInt(i)));
    assert.ok(client.sendQueueBytes > 0, 'the queue holds what the budget does not allow yet');
    await until(() => echoes.length === n, `${n} echoes (have ${echoes.length})`, 20_000);
    assert.deepEqual(echoes, Array.from({ length: n }, (_, i) => BigInt(i + 1)));
    assert.equal(client.state, 'connected');
    await client.disconnect();

    // The same stream written straight to the socket: the server's budget ends it.
    const raw = new MoltClient(options);
    const states = [];
    raw.onState((s, why) => states.push(`${s}: ${why}`));
    await raw.connect(server.url, 'ian');
    const id = raw.channel('counter.Echo').id;
    const { intentFrame } = await import('../dist/frames.js');
    for (let i = 1; i <= n; ++i) raw['ws'].send(intentFrame(id, counter.echo(BigInt(i))));
    await until(() => raw.state === 'closed', 'the unpaced client to be ended');
    assert.match(states.at(-1), /^closed: Flood: /);
  } finally {
    await server.stop();
  }
});

test('resumes the same session after the link is cut, and what was sent meanwhile arrives', async () => {
  const server = await startMoltd();
  const proxy = await startProxy(server.port);
  try {
    const client = new MoltClient(options);
    const states = [];
    const echoes = [];
    client.onState((s, why) => states.push(why ? `${s}: ${why}` : s));
    client.on('counter.Echoed', (p) => echoes.push(counter.echoed(p)));
    const welcome = await client.connect(proxy.url, 'jo');
    await sendPaced(client, 'counter.Echo', 10, (i) => counter.echo(BigInt(i)));
    await until(() => echoes.length === 10, '10 echoes');
    proxy.cut();
    await until(() => client.state === 'reconnecting', 'reconnecting');
    // Sent while the link is down: queued, then sent after the resumed Welcome.
    await sendPaced(client, 'counter.Echo', 10, (i) => counter.echo(BigInt(10 + i)));
    const pending = client.request('counter.Get', counter.get('jo'));
    await until(() => client.state === 'connected', 'connected again');
    assert.equal(states.at(-1), 'connected: resumed');
    assert.match(states.at(-2), /^reconnecting: the link closed/);
    assert.equal(client.welcome.sessionId, welcome.sessionId);
    assert.equal(typeof counter.value(await pending), 'bigint');
    await until(() => echoes.length === 20, '20 echoes');
    assert.deepEqual(echoes, Array.from({ length: 20 }, (_, i) => BigInt(i + 1)));
    await client.disconnect();
  } finally {
    await proxy.close();
    await server.stop();
  }
});

test('a session the server no longer holds comes back as a new one, its old requests timed out', async () => {
  const server = await startMoltd({ config: { net: { resume_window_seconds: 0 } } });
  const proxy = await startProxy(server.port);
  try {
    const client = new MoltClient(options);
    const states = [];
    client.onState((s, why) => states.push(why ? `${s}: ${why}` : s));
    const first = await client.connect(proxy.url, 'kim');
    proxy.cut();
    await until(() => client.state === 'reconnecting', 'reconnecting');
    const lost = client.request('counter.Get', counter.get()).catch((x) => x);
    await until(() => client.state === 'connected', 'connected again');
    assert.equal(states.at(-1), 'connected: a new session: the server did not resume the old one');
    assert.notEqual(client.welcome.sessionId, first.sessionId);
    const e = await lost;
    assert.equal(e.code, 'timeout');
    assert.match(e.message, /a new session/);
    await client.disconnect();
  } finally {
    await proxy.close();
    await server.stop();
  }
});

test('a full server is a refusal with its reason', async () => {
  const server = await startMoltd({ config: { net: { max_sessions: 1 } } });
  try {
    const a = new MoltClient(options);
    await a.connect(server.url, 'lee');
    const e = await new MoltClient(options).connect(server.url, 'max').catch((x) => x);
    assert.equal(e.code, 'refused');
    assert.equal(e.reason, 'ServerFull');
    assert.ok(e.retryAfterMs > 0);
    await a.disconnect();
  } finally {
    await server.stop();
  }
});
