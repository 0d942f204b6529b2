// SPDX-License-Identifier: Apache-2.0
// The counter example page: joins the bundled counter plugin over WebSocket, adds to the shared
// counter, and shows every player's count change live (the `counter` replica names who changed it
// last; counter.Get answers how much each player added). `scripts/run.sh` serves it.
//
// The page's query sets what it does: ?ws=URL (default ws://<this host>:7780/), ?user=NAME; and,
// for the browser tests (or a soak), ?stream=N streams N echoes once joined and ?report=URL posts
// each step of it there as JSON ({event: joined | progress | done | failed, ...}).
import { MoltClient, MoltError, type Replica } from '@molt/client';

import * as counter from './payloads.js';

const params = new URLSearchParams(location.search);
const url = params.get('ws') ?? `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.hostname}:7780/`;
const user = params.get('user') ?? `web-${Math.random().toString(36).slice(2, 7)}`;

const $ = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;
const client = new MoltClient();
const players = new Map<string, bigint>();
// What the page did, for a person and for the browser tests that drive it.
const stats = {
  echoesSent: 0,
  echoesHeard: 0,
  outOfOrder: 0,
  lastEcho: 0n,
  states: [] as string[],
  gaps: [] as string[], // "expected N, heard M" for each echo out of order
  dropped: [] as string[], // what the server said it dropped (Error frames)
};

function say(text: string): void {
  $('log').textContent = `${text}\n${$('log').textContent ?? ''}`.slice(0, 4000);
}

function showPlayers(): void {
  const rows = [...players.entries()].sort((a, b) => (a[1] < b[1] ? 1 : a[1] > b[1] ? -1 : 0));
  $('players').replaceChildren(
    ...rows.map(([name, count]) => {
      const li = document.createElement('li');
      li.textContent = `${name}${name === user ? ' (you)' : ''}: ${count}`;
      return li;
    }),
  );
}

async function refresh(player: string): Promise<void> {
  try {
    players.set(player, counter.value(await client.request('counter.Get', counter.get(player))));
    showPlayers();
  } catch (e) {
    say(`counter.Get ${player}: ${(e as Error).message}`);
  }
}

client.onState((state, reason) => {
  stats.states.push(reason ? `${state}: ${reason}` : state);
  $('state').textContent = reason ? `${state} (${reason})` : state;
  document.body.dataset.state = state;
});
client.onError((e) => {
  stats.dropped.push(`${e.channel ?? '?'}: ${e.reason} ${e.text}`);
  say(`the server dropped a message on ${e.channel ?? '?'}: ${e.reason} ${e.text}`);
});
client.onReplica('counter', (r: Replica, change) => {
  if (change === 'removed') return;
  $('total').textContent = String(r.get('value') ?? 0n);
  const last = r.get('last');
  if (last instanceof Uint8Array && last.length > 0) void refresh(new TextDecoder().decode(last));
});
client.on('counter.Echoed', (payload) => {
  const seq = counter.echoed(payload);
  if (seq !== stats.lastEcho + 1n) {
    ++stats.outOfOrder;
    stats.gaps.push(`expected ${stats.lastEcho + 1n}, heard ${seq}`);
  }
  stats.lastEcho = seq;
  ++stats.echoesHeard;
  $('echoes').textContent = `${stats.echoesHeard} / ${stats.echoesSent} echoed, ${stats.outOfOrder} out of order`;
});

function add(amount: number): void {
  try {
    client.intent('counter.Add', counter.add(amount));
  } catch (e) {
    say((e as MoltError).message); // e.g. rate_limited: counter.Add allows 5 per second
  }
}

/** Sends `n` numbered echoes as fast as the channel's rate allows. */
async function stream(n: number): Promise<void> {
  for (let i = 0; i < n; ) {
    try {
      client.intent('counter.Echo', counter.echo(BigInt(stats.echoesSent + 1)));
      ++stats.echoesSent;
      ++i;
    } catch (e) {
      if ((e as MoltError).code !== 'rate_limited') throw e;
      await new Promise((r) => setTimeout(r, 5)); // the channel's bucket refills
    }
  }
}

$('user').textContent = user;
$('url').textContent = url;
for (const b of document.querySelectorAll<HTMLButtonElement>('button[data-add]')) {
  b.onclick = () => add(Number(b.dataset.add));
}
$('stream').onclick = () => void stream(1000).catch((e) => say(String(e)));

const report = params.get('report');
function post(event: string, extra: object = {}): void {
  if (report === null) return;
  const body = JSON.stringify({ event, ...extra, stats }, (_, v) => (typeof v === 'bigint' ? v.toString() : v));
  void fetch(report, { method: 'POST', body }).catch(() => {});
}

const joined = client.connect(url, user).then(
  async (welcome) => {
    say(`joined as session ${welcome.sessionId} (${welcome.channels.length} channels)`);
    await refresh(user);
    return welcome;
  },
  (e: MoltError) => {
    say(`could not join: ${e.message}`);
    throw e;
  },
);

Object.assign(window, { molt: { client, stats, stream, add, joined, user } });

const toStream = Number(params.get('stream') ?? 0);
void joined.then(
  async (welcome) => {
    post('joined', { session: welcome.sessionId });
    if (toStream <= 0) return;
    const progress = setInterval(() => post('progress'), 100);
    await stream(toStream);
    const end = Date.now() + 30_000;
    while (stats.echoesHeard < stats.echoesSent && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    clearInterval(progress);
    post('done', { state: client.state });
  },
  (e: Error) => post('failed', { error: e.message }),
);
