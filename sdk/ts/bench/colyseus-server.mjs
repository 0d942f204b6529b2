// SPDX-License-Identifier: Apache-2.0
// The echo room on Colyseus 0.18 (its official server, @colyseus/core, on its WebSocket transport,
// @colyseus/ws-transport): what the counter plugin's counter.Echo does, for the comparison in
// docs/benchmarks.md. `node colyseus-server.mjs PORT`; prints "colyseus listening" when ready.
import { Room, Server } from '@colyseus/core';
import { WebSocketTransport } from '@colyseus/ws-transport';

class EchoRoom extends Room {
  maxClients = 100_000;
  onCreate() {
    this.onMessage('echo', (client, seq) => client.send('echoed', seq));
  }
}

const server = new Server({ transport: new WebSocketTransport(), greet: false });
server.define('echo', EchoRoom);
await server.listen(Number(process.argv[2] ?? 2567));
console.log('colyseus listening');
