import { Packr } from 'msgpackr';
import { MOVE_TO_FINISHED_AT } from './ack-constants.js';

/** BullMQ's ARGV[8] of moveToFinished (its options), as an index of its KEYS-then-ARGV array. */
export const OPTIONS_INDEX = MOVE_TO_FINISHED_AT.options;

/** As BullMQ packs them (its redis-queue-backend.js makes its packer with these settings). */
const packer = new Packr({ useRecords: false, encodeUndefinedAsNil: true });

/**
 * An acknowledgement's options (BullMQ's moveToFinished ARGV[8]) but its token: the same for every job a
 * worker completes with the same job options, so the worker's short completion path keeps one per kind
 * (apps/worker completion-args.ts) and the fold's call carries each once, as JSON, with each job's token
 * beside it (ack-fold-lua.ts). `value` holds no token, and no null or undefined at any depth: msgpack's nil
 * is no entry in Lua, as undefined is none in JSON, but JSON's null is a value (cjson.null) that BullMQ's
 * checks for nil would take for one.
 */
export class SharedAckOptions {
  private text: string | undefined;

  constructor(readonly value: Readonly<Record<string, unknown>>) {}

  /** `value` as JSON, made once. */
  json(): string {
    return (this.text ??= JSON.stringify(this.value));
  }
}

/**
 * The options of an acknowledgement not packed yet, as the worker's short completion path makes them: its
 * token and the options it shares with others. BullMQ packs them with msgpack for every job; packing them
 * only to unpack them again cost about 3 µs of Node CPU per job (a CPU profile at concurrency 50), and
 * making and encoding them per job most of what is left: an acknowledgement that goes compact in the fold's
 * call sends its token alone. Whatever sends the acknowledgement to BullMQ's own script packs them first
 * (packOptions).
 */
export class AckOptions {
  constructor(
    readonly token: string,
    readonly shared: SharedAckOptions,
  ) {}

  /** The options as BullMQ makes them: the token first, then the rest. */
  get value(): Record<string, unknown> {
    return { token: this.token, ...this.shared.value };
  }

  packed(): Buffer {
    return packer.pack(this.value);
  }
}

/**
 * `v` without null or undefined entries at any depth, as cmsgpack leaves nils out of a Lua table: what
 * SharedAckOptions may hold, and what a packed BullMQ option set becomes before it is sent as JSON (ack-fold-lua.ts).
 */
export function withoutNulls(v: unknown): unknown {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) if (x != null) out[k] = withoutNulls(x);
  return out;
}

/** BullMQ's acknowledgement `args` with its options packed, as its own script reads them (in place: the array is the caller's to send). */
export function packOptions(args: unknown[]): unknown[] {
  const options = args[OPTIONS_INDEX];
  if (options instanceof AckOptions) args[OPTIONS_INDEX] = options.packed();
  return args;
}
