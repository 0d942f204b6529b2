// SPDX-License-Identifier: Apache-2.0
// The counter example page in headless Chromium (MOLT_CHROMIUM: Debian's chromium-headless-shell)
// against a real moltd: it joins over ws://, streams 1,000 echoes while the server hot-swaps its
// plugins in the middle (every echo back once, in order), and joins over wss:// with the test CA.
// The page reports each step to the test's own HTTP server (?report=), so no browser driver is
// needed: the test only starts Chromium and reads what the page posts.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import WebSocket from 'ws';

import { exampleServer } from '../examples/serve.mjs';
import { MoltClient } from '../dist/index.js';
import { startMoltd, until } from './support.mjs';

const CHROMIUM = process.env.MOLT_CHROMIUM || '/usr/lib/chromium/chromium-headless-shell';

/** The example server with a /report route; `reports` collects what the page posted. */
async function pageServer() {
  const reports = [];
  const server = exampleServer((req, res) => {
    if (req.method !== 'POST' || req.url !== '/report') return false;
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      reports.push(JSON.parse(body));
      res.writeHead(204).end();
    });
    return true;
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { reports, base: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => server.close(r)) };
}

function chromium(url, args = []) {
  const profile = mkdtempSync(join(tmpdir(), 'molt-chromium-'));
  const child = spawn(
    CHROMIUM,
    ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', `--user-data-dir=${profile}`, ...args, url],
    { stdio: 'ignore', detached: true }, // its own process group: the renderers go with it
  );
  return {
    async close() {
      const exited = new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r() : child.on('exit', r)));
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
      await exited;
      rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
    },
  };
}

const last = (reports, event) => reports.filter((r) => r.event === event).at(-1);

test('the example page streams 1,000 echoes through a hot swap: every one back once, in order', async () => {
  const server = await startMoltd();
  const page = await pageServer();
  const url = `${page.base}/examples/counter/?user=chromium&stream=1000&ws=${encodeURIComponent(server.url)}&report=/report`;
  const browser = chromium(url);
  try {
    await until(() => last(page.reports, 'joined') || last(page.reports, 'failed'), 'the page to join', 20_000);
    assert.equal(last(page.reports, 'failed'), undefined, JSON.stringify(page.reports));
    // Swap the plugins once the stream is under way.
    await until(() => (last(page.reports, 'progress')?.stats.echoesSent ?? 0) >= 300, 'the stream to start', 20_000);
    const before = server.output.length;
    server.child.kill('SIGHUP');
    await server.waitFor('{"swap":"ok"', 20_000, before);
    const mid = last(page.reports, 'progress').stats;
    await until(() => last(page.reports, 'done'), 'the stream to end', 40_000);
    const done = last(page.reports, 'done');
    const why = `${JSON.stringify(done)}\n${server.output}`;
    assert.ok(mid.echoesSent < 1000, `the swap came mid-stream (${mid.echoesSent} sent)`);
    assert.equal(done.state, 'connected', why);
    assert.equal(done.stats.echoesSent, 1000, why);
    assert.equal(done.stats.echoesHeard, 1000, why);
    assert.equal(done.stats.outOfOrder, 0, why);
    assert.equal(done.stats.lastEcho, '1000', why);
    assert.deepEqual(done.stats.states, ['connecting', 'connected']); // the swap did not touch the link
  } finally {
    await browser.close();
    await page.close();
    await server.stop();
  }
});

test('the page joins over wss:// with the test CA, and Node does too', async () => {
  const pki = mkdtempSync(join(tmpdir(), 'molt-pki-'));
  const openssl = (...args) => execFileSync('openssl', args, { cwd: pki, stdio: ['ignore', 'pipe', 'pipe'] });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  openssl('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-subj', '/CN=Molt Test CA', '-days', '1');
  openssl('req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost');
  writeFileSync(join(pki, 'san.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
  openssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.pem', '-days', '1', '-extfile', 'san.ext');
  // Chromium is told to trust the certificate by its key's SHA-256: the flag matches keys of the
  // chain the server presents, and moltd presents its certificate without the CA (the flag takes
  // effect with a --user-data-dir). Node trusts the CA itself, below.
  const spki = execFileSync('sh', ['-c', 'openssl x509 -in server.pem -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64'], { cwd: pki })
    .toString()
    .trim();
  const server = await startMoltd({ args: ['--tls-cert', join(pki, 'server.pem'), '--tls-key', join(pki, 'server.key')] });
  const page = await pageServer();
  try {
    assert.match(server.url, /^wss:\/\/127\.0\.0\.1:\d+\/$/);
    const wss = server.url.replace('127.0.0.1', 'localhost');
    const browser = chromium(`${page.base}/examples/counter/?user=tls&ws=${encodeURIComponent(wss)}&report=/report`, [
      `--ignore-certificate-errors-spki-list=${spki}`,
    ]);
    try {
      await until(() => last(page.reports, 'joined') || last(page.reports, 'failed'), 'the page to join over TLS', 20_000);
      assert.equal(last(page.reports, 'failed'), undefined, `${JSON.stringify(page.reports)}\n${server.output}`);
    } finally {
      await browser.close();
    }
    // Node: the ws package takes the CA; a subclass passes it, since the client only gives a URL.
    const ca = execFileSync('cat', [join(pki, 'ca.pem')]);
    class TrustingWebSocket extends WebSocket {
      constructor(url) {
        super(url, { ca });
      }
    }
    const client = new MoltClient({ WebSocket: TrustingWebSocket });
    await client.connect(wss, 'node-tls');
    assert.equal(client.state, 'connected');
    await client.disconnect();
    // Without the CA the handshake is refused, and the client says so.
    const e = await new MoltClient({ WebSocket, reconnect: false }).connect(wss, 'untrusting').catch((x) => x);
    assert.equal(e.code, 'disconnected');
  } finally {
    await page.close();
    await server.stop();
    rmSync(pki, { recursive: true, force: true });
  }
});
