// SPDX-License-Identifier: Apache-2.0
// Replicas: the latest value of every field of every replica the server sends this session
// (docs/network.md, "Replicas"), kept whether or not anything listens, with libmolt_client's
// semantics and limits (kernel/src/client/replica_store.h).
import type { ReplicaFieldType, ReplicaReading, ReplicaValue, ServerMessage } from './frames.js';

export type ReplicaChange = 'snapshot' | 'changed' | 'removed';

/** A replica as last heard: read its fields by name with `get`. */
export interface Replica {
  readonly id: number;
  readonly name: string;
  readonly fields: readonly { readonly name: string; readonly type: ReplicaFieldType | 'unknown' }[];
  /** Values in field order: bigint for int fields, number for float, Uint8Array for bytes. */
  readonly values: readonly (ReplicaValue | undefined)[];
  /** The value of the field named `field` (undefined when there is none). */
  get(field: string): ReplicaValue | undefined;
}

export type ReplicaHandler = (replica: Replica, change: ReplicaChange, field: string | undefined) => void;

export const MAX_REPLICAS = 4096;
export const MAX_FIELDS = 64;
export const MAX_NAME = 128;

class HeldReplica implements Replica {
  values: (ReplicaValue | undefined)[];
  constructor(
    readonly id: number,
    readonly name: string,
    readonly fields: { name: string; type: ReplicaFieldType | 'unknown' }[],
  ) {
    this.values = fields.map(() => undefined);
  }
  get(field: string): ReplicaValue | undefined {
    const i = this.fields.findIndex((f) => f.name === field);
    return i < 0 ? undefined : this.values[i];
  }
  /** Writes what `values` carry; returns the indices of the fields written. */
  write(values: ReplicaReading[]): number[] {
    const written: number[] = [];
    for (const v of values) {
      const f = this.fields[v.field];
      if (f === undefined) continue; // a field the snapshot did not name
      switch (f.type) {
        case 'int':
          this.values[v.field] = v.int;
          break;
        case 'float':
          this.values[v.field] = v.float;
          break;
        case 'bytes':
          this.values[v.field] = v.bytes;
          break;
        default:
          continue; // a type from a newer server
      }
      written.push(v.field);
    }
    return written;
  }
}

export interface ReplicaUpdate {
  replica: Replica;
  change: ReplicaChange;
  field?: string;
}

export class ReplicaStore {
  private held = new Map<number, HeldReplica>();

  get size(): number {
    return this.held.size;
  }

  find(name: string): Replica | undefined {
    for (const r of this.held.values()) if (r.name === name) return r;
    return undefined;
  }

  all(): Replica[] {
    return [...this.held.values()];
  }

  /**
   * Applies a replica message; returns what changed (a removed replica is forgotten once the
   * caller delivered its update: `forget`), or a string naming the limit the server broke.
   */
  apply(m: Extract<ServerMessage, { type: 'replica' }>): ReplicaUpdate[] | string {
    switch (m.kind) {
      case 'snapshot': {
        if (
          m.fields.length > MAX_FIELDS ||
          new TextEncoder().encode(m.name).length > MAX_NAME ||
          (!this.held.has(m.id) && this.held.size >= MAX_REPLICAS)
        ) {
          return (
            `the server sent a replica beyond the client's limits (${MAX_REPLICAS} replicas, ` +
            `${MAX_FIELDS} fields, names of ${MAX_NAME} bytes)`
          );
        }
        const r = new HeldReplica(m.id, m.name, m.fields);
        r.write(m.values);
        this.held.set(m.id, r);
        return [{ replica: r, change: 'snapshot' }];
      }
      case 'delta': {
        const r = this.held.get(m.id);
        if (r === undefined) return []; // no snapshot to apply it to
        return r.write(m.values).map((i) => ({ replica: r, change: 'changed', field: r.fields[i]!.name }));
      }
      case 'remove': {
        const r = this.held.get(m.id);
        return r === undefined ? [] : [{ replica: r, change: 'removed' }];
      }
      default:
        return []; // a kind from a newer server
    }
  }

  forget(id: number): void {
    this.held.delete(id);
  }

  clear(): void {
    this.held.clear();
  }
}
