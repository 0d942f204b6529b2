// SPDX-License-Identifier: Apache-2.0
// Serves the sdk/ts directory over HTTP for the examples, on loopback, with no dependency:
//   node sdk/ts/examples/serve.mjs [PORT]     (default 8080; 0 picks a free one)
// then open http://127.0.0.1:PORT/examples/counter/. It prints "examples on http://..." once it
// listens. Only files under sdk/ts are served; nothing is written. With MOLT_SERVE_WHILE_PID set
// it exits when that process does (scripts/run.sh: moltd). The browser tests import
// `exampleServer` and add their own routes.
import { createReadStream, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const types = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.map': 'application/json',
  '.css': 'text/css',
  '.json': 'application/json',
};

/** An HTTP server of sdk/ts's files; `route(req, res)` answers first when it returns true. */
export function exampleServer(route = () => false) {
  return createServer((req, res) => {
    if (route(req, res)) return;
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    let file = normalize(join(root, path));
    if (file !== root && !file.startsWith(root + sep)) {
      res.writeHead(403).end('outside sdk/ts\n');
      return;
    }
    try {
      if (statSync(file).isDirectory()) file = join(file, 'index.html');
      const size = statSync(file).size;
      res.writeHead(200, { 'Content-Type': types[extname(file)] ?? 'application/octet-stream', 'Content-Length': size });
      createReadStream(file).pipe(res);
    } catch {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end(`${path}: not found (did npm run build run?)\n`);
    }
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const server = exampleServer();
  server.listen(Number(process.argv[2] ?? 8080), '127.0.0.1', () => {
    console.log(`examples on http://127.0.0.1:${server.address().port}/examples/counter/`);
  });
  for (const s of ['SIGINT', 'SIGTERM']) process.on(s, () => process.exit(0));
  const parent = Number(process.env.MOLT_SERVE_WHILE_PID ?? 0);
  if (parent > 0) {
    setInterval(() => {
      try {
        process.kill(parent, 0);
      } catch {
        process.exit(0);
      }
    }, 500).unref();
  }
}
