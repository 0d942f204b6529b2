// SPDX-License-Identifier: Apache-2.0
// What the TypeScript client's tests share: a real moltd started with the bundled plugins and a
// WebSocket port (MOLTD and MOLT_PLUGINS name them; by default the default preset's build), a TCP
// proxy that can cut every link as a failing network would, and small waits.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
export const MOLTD = process.env.MOLTD ?? join(repo, 'build/default/bin/moltd');
export const PLUGINS = process.env.MOLT_PLUGINS ?? join(repo, 'build/default/plugins');

/**
 * Starts moltd on free ports (clients over TCP and WebSocket, the admin endpoint) with `config`
 * (an object, written as its JSON file) and `args`; resolves once it serves the bundled plugins.
 */
export async function startMoltd({ config, args = [], plugins = 6 } = {}) {
  const data = mkdtempSync(join(tmpdir(), 'molt-ts-'));
  const flags = ['-p', PLUGINS, '-d', data, '--port', '0', '--ws', '127.0.0.1:0', '--admin', '127.0.0.1:0', ...args];
  if (config !== undefined) {
    writeFileSync(join(data, 'config.json'), JSON.stringify(config));
    flags.push('-c', join(data, 'config.json'));
  }
  const child = spawn(MOLTD, flags, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const waiters = new Set();
  const hear = (chunk) => {
    output += chunk.toString();
    for (const w of waiters) w();
  };
  child.stdout.on('data', hear);
  child.stderr.on('data', hear);
  const exited = new Promise((r) => child.on('exit', (code, signal) => r({ code, signal })));
  const server = {
    child,
    data,
    get output() {
      return output;
    },
    /** Resolves once `text` has been logged (after `from`), rejects after `ms`. */
    waitFor(text, ms = 10_000, from = 0) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const at = output.indexOf(text, from);
          if (at >= 0) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve(at);
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`moltd did not log "${text}" within ${ms} ms:\n${output}`));
        }, ms);
        waiters.add(check);
        check();
      });
    },
    /** GET `path` from the admin API with the data directory's token; its JSON. */
    async admin(path) {
      const at = output.match(/admin endpoint on (http:\/\/127\.0\.0\.1:\d+)\//);
      if (at === null) throw new Error(`moltd did not say where its admin endpoint is:\n${output}`);
      const token = readFileSync(join(data, 'admin.token'), 'utf8').trim();
      const r = await fetch(at[1] + path, { headers: { Authorization: `Bearer ${token}` } });
      if (!r.ok) throw new Error(`GET ${path}: ${r.status} ${await r.text()}`);
      return r.json();
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const how = await exited;
      rmSync(data, { recursive: true, force: true });
      return how;
    },
  };
  try {
    await server.waitFor(`serving ${plugins} plugins`);
    const ws = output.match(/WebSocket clients on (wss?:\/\/127\.0\.0\.1:\d+\/)/);
    const tcp = output.match(/listening on 127\.0\.0\.1:(\d+)/);
    if (ws === null || tcp === null) throw new Error(`moltd did not say where it listens:\n${output}`);
    server.url = ws[1];
    server.port = Number(new URL(ws[1]).port);
    server.tcpPort = Number(tcp[1]);
  } catch (e) {
    await server.stop();
    throw e;
  }
  return server;
}

/** A TCP proxy on a free loopback port to `port`; `cut()` drops every link it carries. */
export async function startProxy(port) {
  const links = new Set();
  const server = createServer((a) => {
    const b = tcpConnect(port, '127.0.0.1');
    links.add(a);
    links.add(b);
    a.pipe(b);
    b.pipe(a);
    for (const s of [a, b]) {
      s.on('error', () => {});
      s.on('close', () => {
        links.delete(s);
        (s === a ? b : a).destroy();
      });
    }
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `ws://127.0.0.1:${server.address().port}/`,
    cut() {
      for (const s of links) s.destroy();
    },
    close() {
      for (const s of links) s.destroy();
      return new Promise((r) => server.close(r));
    },
  };
}

/** A loopback port nothing listens on: a free one the system handed out, closed again at once. */
export async function closedPort() {
  const server = createServer();
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address();
  await new Promise((r) => server.close(r));
  return port;
}

/** Resolves when `predicate()` holds, polling every 10 ms; rejects after `ms` saying `what`. */
export async function until(predicate, what, ms = 10_000) {
  const end = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Sends `payloadOf(i)` for i = 1..n on intent `channel`, waiting whenever the channel's rate says so. */
export async function sendPaced(client, channel, n, payloadOf) {
  for (let i = 1; i <= n; ) {
    try {
      client.intent(channel, payloadOf(i));
      ++i;
    } catch (e) {
      if (e.code !== 'rate_limited') throw e;
      await new Promise((r) => setTimeout(r, 2));
    }
  }
}
