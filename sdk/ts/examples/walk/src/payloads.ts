// SPDX-License-Identifier: Apache-2.0
// The walk plugin's payloads (plugins/walk/walk.fbs) with the types flatc --ts generated from its
// schema: a step for the predicted intent walk.Move, and the position walk.Pos sends.
import * as flatbuffers from 'flatbuffers';

import { Move } from './gen/molt/walk/move.js';
import { Pos } from './gen/molt/walk/pos.js';

/** walk.Move{dx, dy}: each in -1 .. 1 (the plugin's rules refuse anything else). */
export function move(dx: number, dy: number): Uint8Array {
  const b = new flatbuffers.Builder(32);
  b.finish(Move.createMove(b, dx, dy));
  return b.asUint8Array().slice();
}

/** A step's own dx and dy, as pending() hands its payload back for a replay. */
export function step(payload: Uint8Array): { dx: number; dy: number } {
  const m = Move.getRootAsMove(new flatbuffers.ByteBuffer(payload));
  return { dx: m.dx(), dy: m.dy() };
}

/** The walk.Pos{session, x, y} sent after each accepted step: who moved, and where to. */
export function pos(payload: Uint8Array): { session: bigint; x: number; y: number } {
  const p = Pos.getRootAsPos(new flatbuffers.ByteBuffer(payload));
  return { session: p.session(), x: p.x(), y: p.y() };
}
