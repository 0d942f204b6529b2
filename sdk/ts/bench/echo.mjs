// SPDX-License-Identifier: Apache-2.0
// The paced echo workload (docs/benchmarks.md, "Browsers"): N clients each send R numbered echoes
// a second for S seconds and time each one's way back; then M idle clients join. Run against
//   molt-ws   moltd's WebSocket port, with @molt/client
//   molt-tcp  moltd's TCP port, with @molt/client over a length-prefixed TCP socket (the same
//             client code, so the two differ only by the transport)
//   colyseus  Colyseus 0.18 on its WebSocket transport, with @colyseus/sdk
// and prints, per target, the server's CPU per 100k echoes (user + system, from /proc; also what
// it costs per second with the clients connected and silent, and the CPU beyond that per 100k),
// the echo round trip p50/p99, and the server's memory per idle connection (RSS growth / M).
//   npm ci && node echo.mjs [--clients N] [--rate R] [--seconds S] [--idle M] [--targets a,b]
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect as tcpConnect } from 'node:net';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';

import { MoltClient } from '../dist/index.js';
import * as counter from '../examples/counter/build/payloads.js';
import { startMoltd } from '../test/support.mjs';

const { values: flags } = parseArgs({
  options: {
    clients: { type: 'string', default: '50' },
    rate: { type: 'string', default: '20' },
    seconds: { type: 'string', default: '15' },
    idle: { type: 'string', default: '1000' },
    targets: { type: 'string', default: 'molt-ws,molt-tcp,colyseus' },
  },
});
const N = Number(flags.clients);
const R = Number(flags.rate);
const S = Number(flags.seconds);
const M = Number(flags.idle);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// /proc/PID/stat: utime and stime in clock ticks (100 a second on Linux).
function cpuSeconds(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}
function rssBytes(pid) {
  return Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+) kB/)[1]) * 1024;
}
const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

// A WebSocket-shaped wrapper of a TCP socket carrying size-prefixed frames: @molt/client over TCP.
class TcpFrames {
  binaryType = 'arraybuffer';
  readyState = 0;
  onopen = null;
  onmessage = null;
  onclose = null;
  onerror = null;
  constructor(url) {
    const u = new URL(url);
    this.socket = tcpConnect(Number(u.port), u.hostname);
    this.socket.setNoDelay(true);
    let buffered = Buffer.alloc(0);
    this.socket.on('connect', () => {
      this.readyState = 1;
      this.onopen?.({});
    });
    this.socket.on('data', (chunk) => {
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
      while (buffered.length >= 4) {
        const size = buffered.readUInt32LE(0);
        if (buffered.length < 4 + size) break;
        const frame = new Uint8Array(buffered.subarray(0, 4 + size)); // a copy of its own
        buffered = buffered.subarray(4 + size);
        this.onmessage?.({ data: frame });
      }
    });
    this.socket.on('error', () => {});
    this.socket.on('close', () => {
      this.readyState = 3;
      this.onclose?.({ code: 1006, reason: '' });
    });
  }
  send(bytes) {
    this.socket.write(bytes);
  }
  close() {
    this.readyState = 2;
    this.socket.end();
  }
}

// Each target: start() -> { pid, stop }, join() -> a client with send(seq), onEcho(cb), close().
const targets = {
  'molt-ws': molt('ws'),
  'molt-tcp': molt('tcp'),
  colyseus: {
    async start() {
      const child = spawn(process.execPath, [new URL('colyseus-server.mjs', import.meta.url).pathname, '2598'], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      await new Promise((resolve) => child.stdout.on('data', (d) => d.toString().includes('listening') && resolve()));
      const { Client } = await import('@colyseus/sdk');
      return {
        pid: child.pid,
        async join() {
          const room = await new Client('ws://127.0.0.1:2598').joinOrCreate('echo');
          return {
            send: (seq) => room.send('echo', seq),
            onEcho: (cb) => room.onMessage('echoed', cb),
            close: () => room.leave(),
          };
        },
        stop: () => child.kill('SIGTERM'),
      };
    },
  },
};

function molt(transport) {
  return {
    async start() {
      const server = await startMoltd({ config: { net: { handshakes_per_address: 100000 } } });
      const url = transport === 'ws' ? server.url : `tcp://127.0.0.1:${server.tcpPort}/`;
      const WS = transport === 'ws' ? WebSocket : TcpFrames;
      return {
        pid: server.child.pid,
        async join(i) {
          const client = new MoltClient({ WebSocket: WS });
          await client.connect(url, `bench${i}`);
          return {
            send: (seq) => client.intent('counter.Echo', counter.echo(BigInt(seq))),
            onEcho: (cb) => client.on('counter.Echoed', (p) => cb(Number(counter.echoed(p)))),
            close: () => client.disconnect(),
          };
        },
        stop: () => server.stop(),
      };
    },
  };
}

async function run(name) {
  const server = await targets[name].start();
  const clients = [];
  for (let i = 0; i < N; ++i) clients.push(await server.join(i));
  const rtts = [];
  let echoes = 0;
  let measuring = false;
  const sent = clients.map(() => new Map());
  clients.forEach((c, i) =>
    c.onEcho((seq) => {
      const t = sent[i].get(seq);
      sent[i].delete(seq);
      if (measuring && t !== undefined) {
        rtts.push(performance.now() - t);
        ++echoes;
      }
    }),
  );
  // What the server costs with these clients connected and silent (pings, its ticks), per second.
  await sleep(1000);
  const quiet0 = cpuSeconds(server.pid);
  await sleep(5000);
  const quietPerSecond = (cpuSeconds(server.pid) - quiet0) / 5;
  let seq = 0;
  const tick = setInterval(() => {
    ++seq;
    clients.forEach((c, i) => {
      sent[i].set(seq, performance.now());
      c.send(seq);
    });
  }, 1000 / R);
  await sleep(2000); // warm up
  measuring = true;
  const cpu0 = cpuSeconds(server.pid);
  await sleep(S * 1000);
  const cpu = cpuSeconds(server.pid) - cpu0;
  measuring = false;
  clearInterval(tick);
  await sleep(500);
  for (const c of clients) await c.close();
  await sleep(1000);
  const rss0 = rssBytes(server.pid);
  const idle = [];
  for (let i = 0; i < M; ++i) idle.push(await server.join(N + i));
  await sleep(2000);
  const perIdle = (rssBytes(server.pid) - rss0) / M;
  for (const c of idle) await c.close();
  await server.stop();
  rtts.sort((a, b) => a - b);
  return {
    target: name,
    echoes,
    cpu_s: cpu,
    cpu_ms_per_100k: (cpu * 1000 * 100_000) / Math.max(echoes, 1),
    quiet_cpu_ms_per_s: quietPerSecond * 1000,
    marginal_ms_per_100k: ((cpu - quietPerSecond * S) * 1000 * 100_000) / Math.max(echoes, 1),
    rtt_p50_ms: percentile(rtts, 50),
    rtt_p99_ms: percentile(rtts, 99),
    idle_kib_per_connection: perIdle / 1024,
  };
}

console.log(`${N} clients x ${R} echoes/s for ${S} s, then ${M} idle connections`);
for (const name of flags.targets.split(',')) {
  const r = await run(name);
  console.log(
    `${r.target.padEnd(9)} ${String(r.echoes).padStart(7)} echoes  server cpu ${r.cpu_s.toFixed(2)} s = ` +
      `${r.cpu_ms_per_100k.toFixed(0)} ms per 100k (silent ${r.quiet_cpu_ms_per_s.toFixed(1)} ms/s, ` +
      `beyond it ${r.marginal_ms_per_100k.toFixed(0)} ms per 100k)  rtt p50 ${r.rtt_p50_ms.toFixed(2)} ms p99 ${r.rtt_p99_ms.toFixed(2)} ms  ` +
      `idle ${r.idle_kib_per_connection.toFixed(1)} KiB/connection`,
  );
}
