// SPDX-License-Identifier: Apache-2.0
// @molt/client: the Molt client for browsers and Node (docs/client-ts.md).
export { ALL, MoltClient } from './client.js';
export type {
  ClientOptions,
  ChannelRef,
  ClientState,
  EventHandler,
  RequestOptions,
  ResolvedHandler,
  ServerError,
  ServerErrorHandler,
  StateHandler,
  WebSocketConstructor,
  WebSocketLike,
} from './client.js';
export { MoltError, Status } from './errors.js';
export type { MoltErrorCode } from './errors.js';
export { PROTOCOL_VERSION } from './frames.js';
export type { ChannelInfo, ChannelKind, ChannelPriority, ReplicaFieldType, ReplicaValue, Welcome } from './frames.js';
export type { PendingPrediction, Resolution } from './predictions.js';
export type { Replica, ReplicaChange, ReplicaHandler } from './replicas.js';
