// SPDX-License-Identifier: Apache-2.0
// The counter plugin's payloads (plugins/counter/counter.fbs) with the types flatc --ts generated
// from its schema: what a game does for each of its own channels.
import * as flatbuffers from 'flatbuffers';

import { Add } from './gen/molt/counter/add.js';
import { Echo } from './gen/molt/counter/echo.js';
import { Get } from './gen/molt/counter/get.js';
import { Value } from './gen/molt/counter/value.js';

function finish(b: flatbuffers.Builder, root: flatbuffers.Offset): Uint8Array {
  b.finish(root);
  return b.asUint8Array().slice();
}

/** counter.Add{amount}: amount in -10 .. 10. */
export function add(amount: number): Uint8Array {
  const b = new flatbuffers.Builder(32);
  return finish(b, Add.createAdd(b, amount));
}

/** counter.Get{user}: the additions of `user`, or the total when empty. */
export function get(user = ''): Uint8Array {
  const b = new flatbuffers.Builder(64);
  return finish(b, Get.createGet(b, b.createString(user)));
}

/** counter.Echo{seq}: sent back on counter.Echoed. */
export function echo(seq: bigint): Uint8Array {
  const b = new flatbuffers.Builder(32);
  return finish(b, Echo.createEcho(b, seq));
}

/** The Value{value} that answers counter.Get. */
export function value(payload: Uint8Array): bigint {
  return Value.getRootAsValue(new flatbuffers.ByteBuffer(payload)).value();
}

/** The seq of an Echo that came back on counter.Echoed. */
export function echoed(payload: Uint8Array): bigint {
  return Echo.getRootAsEcho(new flatbuffers.ByteBuffer(payload)).seq();
}
