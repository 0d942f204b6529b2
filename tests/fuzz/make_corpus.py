#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# File: tests/fuzz/make_corpus.py
#
# Writes the seed corpora of molt_net_fuzz (tests/fuzz/net_fuzz.cc) to tests/fuzz/corpus/net and
# of molt_client_fuzz (tests/fuzz/client_fuzz.cc) to tests/fuzz/corpus/client: one file per
# scenario, each a 4-byte control header (flags, three cut points; see the targets) and the byte
# stream of one connection (what the client sends the server, or the server the client). Frames are real FlatBuffers built by flatc from JSON (so no
# Python FlatBuffers package is needed) against schemas/molt_wire.fbs and the test payload schema,
# with the channel ids net_fuzz.cc declares. Deterministic: re-running rewrites the same bytes.
#
#   python3 tests/fuzz/make_corpus.py          # needs flatc on PATH (flatbuffers-compiler)
import json
import pathlib
import random
import shutil
import struct
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
WIRE = ROOT / "schemas" / "molt_wire.fbs"
PAYLOADS = ROOT / "tests" / "kernel" / "net" / "test_payloads.fbs"
CORPUS = ROOT / "tests" / "fuzz" / "corpus"

# Channel ids, in net_fuzz.cc's declaration order.
SAY, ADD, BARE, OPEN, EVENT = 0, 1, 2, 3, 4

# Control byte bits (net_fuzz.cc).
HELLO_FIRST = 1
STEP = 2


def advance(tenths):
    """The clock advance per piece, in 100 ms units (0..63)."""
    return (tenths & 63) << 2


def flatc(schema, obj, root_type=None, size_prefixed=False):
    """The binary FlatBuffer flatc builds from `obj` (a JSON-able dict)."""
    with tempfile.TemporaryDirectory() as tmp:
        src = pathlib.Path(tmp) / "msg.json"
        src.write_text(json.dumps(obj))
        cmd = ["flatc", "-b", "-o", tmp] + (["--size-prefixed"] if size_prefixed else [])
        if root_type:
            cmd += ["--root-type", root_type]
        subprocess.run(cmd + [str(schema), str(src)], check=True)
        return (pathlib.Path(tmp) / "msg.bin").read_bytes()


def frame(body):
    """A length prefix (4 bytes, little-endian) and `body`."""
    return struct.pack("<I", len(body)) + body


def envelope(kind, body=None):
    """A frame: the envelope as a size-prefixed buffer (the prefix is the frame's length, and the
    fields are aligned the way the server verifies them)."""
    obj = {"body_type": kind} if body is None else {"body_type": kind, "body": body}
    return flatc(WIRE, obj, size_prefixed=True)


def hello(user="fuzz", version=2, protocol_hash=0, join=b""):
    return envelope("Hello", {"protocol_version": version, "protocol_hash": protocol_hash,
                              "user": user, "join_data": list(join)})


def say(text="hi", room=1, volume=0.5):
    return flatc(PAYLOADS, {"text": text, "room": room, "volume": volume})


def add(amount):
    return flatc(PAYLOADS, {"amount": amount}, root_type="molt.test.Add")


def intent(channel, payload):
    return envelope("Intent", {"channel": channel, "payload": list(payload)})


def request(channel, request_id, payload):
    return envelope("Request", {"channel": channel, "id": request_id, "payload": list(payload)})


def seed(flags, stream, cuts=(0x40, 0x80, 0xC0)):
    return bytes([flags & 0xFF, *cuts]) + stream


def cut_after(stream, offset):
    """The cut-point byte (net_fuzz.cc: at byte / 256 of the stream) nearest past `offset`."""
    return min(255, -(-offset * 256 // len(stream)))


def seeds():
    rng = random.Random(20261129)
    garbage = bytes(rng.randrange(256) for _ in range(96))
    one_intent = intent(SAY, say())
    timeout_request = request(ADD, 6, add(7))
    timeout_stream = timeout_request + envelope("Ping", {"seq": 2, "time_ns": 7})
    return {
        # The handshake.
        "hello": seed(0, hello()),
        "hello_bad_version": seed(0, hello(version=1)),
        "hello_auth_refused": seed(0, hello(user="mallory")),
        "hello_auth_alias": seed(0, hello(user="alias", join=b"join data") + one_intent),
        "intent_before_hello": seed(0, one_intent),
        "hello_split_everywhere": seed(0, hello() + one_intent, cuts=(1, 2, 3)),
        "hello_intent_second_hello": seed(0, hello() + one_intent + hello()),
        # Intents.
        "intent": seed(HELLO_FIRST, one_intent),
        "intent_text_too_long": seed(HELLO_FIRST, intent(SAY, say(text="x" * 40))),
        "intent_room_refused_by_hook": seed(HELLO_FIRST, intent(SAY, say(room=3))),
        "intent_hook_throws": seed(HELLO_FIRST, intent(SAY, say(room=4))),
        "intent_kick": seed(HELLO_FIRST, intent(SAY, say(text="kick")) + one_intent),
        "intent_handler_throws": seed(HELLO_FIRST, intent(SAY, say(text="throw"))),
        "intent_echo": seed(HELLO_FIRST, intent(SAY, say(text="echo")) * 3),
        "intent_rate_limited": seed(HELLO_FIRST | STEP | advance(1), one_intent * 24),
        "intent_bad_payload": seed(HELLO_FIRST, intent(SAY, garbage[:24])),
        "intent_unguarded": seed(HELLO_FIRST, intent(BARE, say())),
        "intent_open": seed(HELLO_FIRST, intent(OPEN, add(5)) * 4),
        "intent_unknown_channel":
            seed(HELLO_FIRST, (intent(999, say()) + intent(EVENT, say())) * 4),
        # Requests.
        "request": seed(HELLO_FIRST, request(ADD, 1, add(21))),
        "request_refused": seed(HELLO_FIRST, request(ADD, 2, add(-3)) + request(ADD, 3, add(666))
                                + request(ADD, 4, add(5000)) + request(SAY, 5, say())),
        # The request arrives whole in the first piece; three more pieces of 600 ms pass its 1 s
        # timeout.
        "request_timeout": seed(HELLO_FIRST | STEP | advance(6), timeout_stream,
                                cuts=(cut_after(timeout_stream, len(timeout_request)), 255, 255)),
        "request_handler_throws_and_double_reply":
            seed(HELLO_FIRST, request(ADD, 7, add(8)) + request(ADD, 8, add(9))),
        # Other messages.
        "ping_pong_server_only_bye":
            seed(HELLO_FIRST | STEP | advance(20), envelope("Ping", {"seq": 1, "time_ns": 42})
                 + envelope("Pong", {"seq": 1, "time_ns": 1})
                 + envelope("Welcome", {"session_id": 1})
                 + envelope("Bye", {"reason": "ClientClosed"})),
        "handshake_timeout": seed(STEP | advance(30), hello()[:7]),
        # Broken framing.
        "hello_garbage": seed(HELLO_FIRST, garbage),
        "hello_oversized_length": seed(HELLO_FIRST, struct.pack("<I", 0xFFFFFF00) + garbage),
        "hello_zero_length": seed(HELLO_FIRST, struct.pack("<I", 0)),
        "truncated_intent": seed(HELLO_FIRST, one_intent + one_intent[: len(one_intent) // 2]),
        "tiny_frames_flood": seed(HELLO_FIRST, frame(b"\x00") * 120),
        # A union type without its table passes the FlatBuffers verifier (found by this fuzzer:
        # it crashed the server before the handshake).
        "hello_without_body": seed(0, envelope("Hello")),
        "intent_without_body": seed(HELLO_FIRST, envelope("Intent") + envelope("Request")),
    }


# Client seeds (client_fuzz.cc): channel ids of the Welcome it builds, and its control bits.
C_EVENT, C_ADD, C_SAY = 0, 1, 2
WELCOMED = 1
IN_FLIGHT = 2
C_STEP = 4


def channel_info(cid, name, kind, rate=100.0, timeout_ms=0):
    return {"id": cid, "name": name, "kind": kind, "schema": "fuzz.Say", "rate": rate,
            "burst": rate, "timeout_ms": timeout_ms}


def welcome(resumed=False, channels=None):
    if channels is None:
        channels = [channel_info(C_EVENT, "fuzz.Event", "Event"),
                    channel_info(C_ADD, "fuzz.Add", "Request", timeout_ms=1000),
                    channel_info(C_SAY, "fuzz.Say", "Intent")]
    return envelope("Welcome", {"session_id": 1, "tick_rate": 60, "channels": channels,
                                "max_frame_bytes": 8192, "bytes_per_tick": 8192,
                                "messages_per_tick": 64, "ping_interval_ms": 1000,
                                "resume_token": [7] * 16, "resumed": resumed,
                                "resume_window_ms": 30000, "budget_burst_ticks": 4})


def response(request_id, status=0, payload=b"", retry_after_ms=0):
    return envelope("Response", {"id": request_id, "status": status, "payload": list(payload),
                                 "retry_after_ms": retry_after_ms})


def event(channel, payload):
    return envelope("Event", {"channel": channel, "payload": list(payload)})


def replica(rid, kind, name=None, fields=None, values=None):
    body = {"id": rid, "kind": kind}
    if name is not None:
        body["name"] = name
    if fields is not None:
        body["fields"] = fields
    if values is not None:
        body["values"] = values
    return envelope("Replica", body)


def client_seeds():
    rng = random.Random(20261201)
    garbage = bytes(rng.randrange(256) for _ in range(96))
    board = replica(9, "Snapshot", "board",
                    [{"name": "joins", "type": "Int"}, {"name": "heat", "type": "Float"},
                     {"name": "motd", "type": "Bytes"}],
                    [{"field": 0, "int_value": 3}, {"field": 1, "float_value": 0.5},
                     {"field": 2, "bytes": list(b"hello")}])
    return {
        # The handshake, from the server's side.
        "welcome": seed(0, welcome() + event(C_EVENT, say())),
        "welcome_twice": seed(0, welcome() + welcome()),
        "refuse_rate_limited": seed(0, envelope("Refuse", {"reason": "RateLimited",
                                                           "text": "retry later",
                                                           "retry_after_ms": 1000})),
        "refuse_unknown_reason": seed(0, envelope("Refuse", {"reason": 9, "text": "?"})),
        "bye_before_welcome": seed(0, envelope("Bye", {"reason": "ServerShutdown", "text": "bye"})),
        "event_before_welcome": seed(0, event(C_EVENT, say()) + welcome()),
        "welcome_duplicate_channel_ids": seed(0, welcome(channels=[
            channel_info(1, "a", "Intent"), channel_info(1, "b", "Request", timeout_ms=0),
            channel_info(65535, "", "Event", rate=-1.0)])),
        # Answers and events once welcomed.
        "responses": seed(WELCOMED | IN_FLIGHT, response(1, 0, say()) + response(2, -9)
                          + response(3, -13, retry_after_ms=500) + response(3) + response(99)),
        "response_split_everywhere": seed(WELCOMED | IN_FLIGHT, response(2, 0, add(4)),
                                          cuts=(1, 2, 3)),
        "request_deadline": seed(WELCOMED | IN_FLIGHT | C_STEP, envelope("Ping", {"seq": 1})),
        "events": seed(WELCOMED, event(C_EVENT, say()) + event(C_ADD, say()) + event(77, b"")
                       + event(C_EVENT, garbage[:40])),
        "ping_error_pong": seed(WELCOMED | C_STEP, envelope("Ping", {"seq": 4, "time_ns": 9})
                                + envelope("Error", {"reason": "RateLimited", "channel": C_SAY,
                                                     "retry_after_ms": 250, "text": "slow"})
                                + envelope("Pong", {"seq": 1, "time_ns": 1})),
        "channels_changed": seed(WELCOMED | IN_FLIGHT, envelope("Channels", {"channels": [
            channel_info(C_EVENT, "fuzz.Event", "Event"),
            channel_info(5, "fuzz.New", "Intent")]}) + response(1)),
        # Replicas.
        "replica_snapshot_delta_remove": seed(WELCOMED, board
                                              + replica(9, "Delta", values=[
                                                  {"field": 0, "int_value": 4},
                                                  {"field": 7, "int_value": 1}])
                                              + replica(9, "Remove") + replica(9, "Delta")),
        "replica_type_mismatch": seed(WELCOMED, board + replica(9, "Delta", values=[
            {"field": 2, "int_value": 1}, {"field": 0, "bytes": [1, 2]}])),
        "replica_snapshot_twice": seed(WELCOMED, board + board),
        # A draining server's Redirect (wire 2.4): kept, then followed when the Bye ends the link;
        # addresses that cannot be read are ignored. Numeric: a follow never resolves a name.
        "redirect_then_bye": seed(WELCOMED | IN_FLIGHT, envelope("Redirect", {
            "address": "127.0.0.1:1", "server": "b", "reason": "the server is draining"})
            + envelope("Bye", {"reason": "ServerShutdown", "text": "go to b"}) + response(1)),
        "redirect_bad_addresses": seed(WELCOMED, b"".join(
            envelope("Redirect", {"address": a, "server": "x"})
            for a in ("nowhere", "[::1]:70000", ":5", "10.0.0.1:", "[]:1", "10.0.0.1:0x10"))
            + envelope("Bye", {"reason": "ServerShutdown"})),
        "redirect_before_welcome": seed(0, envelope("Redirect", {"address": "127.0.0.1:1"})
                                        + welcome() + envelope("Bye", {})),
        # The end, and broken framing.
        "bye_with_requests": seed(WELCOMED | IN_FLIGHT, envelope("Bye", {"reason": "Kicked"})
                                  + response(1)),
        "oversized_length": seed(WELCOMED, struct.pack("<I", 0xFFFFFF00) + garbage),
        "zero_length": seed(WELCOMED, struct.pack("<I", 0)),
        "garbage": seed(WELCOMED | IN_FLIGHT, frame(garbage)),
        "bodiless_bodies": seed(WELCOMED | IN_FLIGHT, b"".join(
            envelope(k) for k in ("Response", "Event", "Replica", "Channels", "Ping", "Error",
                                  "Redirect"))),
        "truncated": seed(WELCOMED, board[: len(board) // 2]),
    }


def ws_frame(opcode, payload, fin=True, masked=True, key=b"\x37\xfa\x21\x3d"):
    """A client's WebSocket frame (ws_fuzz.cc): FIN, opcode, masked."""
    head = bytes([(0x80 if fin else 0) | opcode])
    m = 0x80 if masked else 0
    n = len(payload)
    if n < 126:
        head += bytes([m | n])
    elif n <= 0xFFFF:
        head += bytes([m | 126]) + struct.pack(">H", n)
    else:
        head += bytes([m | 127]) + struct.pack(">Q", n)
    if not masked:
        return head + payload
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def ws_seeds():
    """molt_ws_fuzz: byte 0 bit 0 sends a valid upgrade (a client: answer) first, bit 1 refuses
    its Origin, bit 2 sends a frame after each piece, bit 3 is the client's role; then three
    cuts; then the stream."""
    upgraded, refusing, sending, client = 1, 2, 4, 8
    wire = frame(envelope("Ping", {"seq": 1, "time_ns": 2}))
    plain = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
    return {
        "binary": seed(upgraded | sending, ws_frame(2, wire)),
        "fragmented_with_ping": seed(upgraded, ws_frame(2, wire[:5], fin=False)
                                     + ws_frame(9, b"hi") + ws_frame(0, wire[5:])),
        "two_frames_one_message": seed(upgraded, ws_frame(2, wire + wire)),
        "short_message": seed(upgraded, ws_frame(2, wire[:3])),
        "unmasked": seed(upgraded, ws_frame(2, wire, masked=False)),
        "text": seed(upgraded, ws_frame(1, b"{}")),
        "close": seed(upgraded | sending, ws_frame(8, b"\x03\xe8bye") + ws_frame(2, wire)),
        "long_length": seed(upgraded, ws_frame(2, bytes(300))[:12]),
        "plain_http": seed(0, plain),
        "refused_origin": seed(upgraded | refusing, ws_frame(2, wire)),
        "bad_version": seed(0, plain.replace(b"\r\n\r\n", b"\r\nUpgrade: websocket\r\n"
                                             b"Connection: Upgrade\r\nSec-WebSocket-Version: 8"
                                             b"\r\n\r\n")),
        # The client's role (bit 3): the stream is the server's, after its valid answer (bit 0).
        "client_binary": seed(client | upgraded | sending, ws_frame(2, wire, masked=False)),
        "client_ping_close": seed(client | upgraded, ws_frame(9, b"hi", masked=False)
                                  + ws_frame(8, b"\x03\xe9bye", masked=False)),
        "client_masked": seed(client | upgraded, ws_frame(2, wire)),
        "client_refused": seed(client, b"HTTP/1.1 403 Forbidden\r\nContent-Length: 4\r\n\r\nno\r\n"),
        "client_bad_accept": seed(client, b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket"
                                  b"\r\nSec-WebSocket-Accept: x\r\n\r\n"),
    }


# The datagram target's key and session (datagram_fuzz.cc).
DATAGRAM_KEY = bytes(range(32))
DATAGRAM_SESSION = 0x1122334455667788


def seal_datagram(counter, frame, direction=b"molt c2s", session=DATAGRAM_SESSION):
    """A sealed datagram as kernel/src/wire/datagram_seal.cc makes it: [0x4D][session][counter]
    then ChaCha20-Poly1305 of the frame under HKDF-SHA256(key, info=direction), the header as
    associated data, the nonce 4 zero bytes and the counter, all little-endian."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=direction).derive(DATAGRAM_KEY)
    header = b"\x4d" + struct.pack("<QQ", session, counter)
    nonce = b"\0" * 4 + struct.pack("<Q", counter)
    return header + ChaCha20Poly1305(key).encrypt(nonce, frame, header)


def datagram_run(*datagrams):
    """datagram_fuzz.cc's input: each datagram after its length (u16 LE)."""
    return b"".join(struct.pack("<H", len(d)) + d for d in datagrams)


def datagram_seeds():
    rng = random.Random(2612)

    def noise(n):
        return bytes(rng.randrange(256) for _ in range(n))

    one = seal_datagram(1, noise(40))
    sizes = [seal_datagram(i + 1, noise(n)) for i, n in enumerate((0, 1, 16, 200, 1200, 4000))]
    return {
        "one": datagram_run(one),
        "empty_frame": datagram_run(seal_datagram(1, b"")),
        "sizes": datagram_run(*sizes[:5]),
        "large": datagram_run(sizes[5]),
        "intent_frame": datagram_run(seal_datagram(7, envelope("Intent", {
            "channel": SAY, "payload": list(say("north")), "seq": 1}))),
        "replayed": datagram_run(one, one),
        "reordered": datagram_run(*(seal_datagram(c, noise(8)) for c in (5, 3, 4, 3, 1, 6))),
        "window_edge": datagram_run(*(seal_datagram(c, noise(8)) for c in (100, 37, 36, 101))),
        "jump": datagram_run(*(seal_datagram(c, noise(8)) for c in (1, 1000, 999, 937, 936))),
        "counter_zero": datagram_run(seal_datagram(0, noise(8))),
        "counter_max": datagram_run(seal_datagram(2**64 - 1, noise(8)), seal_datagram(2, noise(8))),
        "reflected": datagram_run(seal_datagram(1, noise(8), direction=b"molt s2c")),
        "other_session": datagram_run(seal_datagram(1, noise(8), session=DATAGRAM_SESSION + 1)),
        "truncated": datagram_run(one[:-1], one[:33], one[:32], one[:1], b"", one),
        "padded": datagram_run(one + b"\0", one),
        "flipped": datagram_run(one[:20] + bytes([one[20] ^ 1]) + one[21:], one),
    }


def write(out, made):
    """Rewrites the generated seeds; inputs the fuzzer found (regress_*) stay."""
    out.mkdir(parents=True, exist_ok=True)
    for old in out.iterdir():
        if not old.name.startswith("regress_"):
            old.unlink()
    for name, data in sorted(made.items()):
        (out / name).write_bytes(data)
    print(f"make_corpus: {len(made)} seeds in {out.relative_to(ROOT)}")


def main():
    if shutil.which("flatc") is None:
        sys.exit("make_corpus: flatc is missing (apt-get install flatbuffers-compiler)")
    write(CORPUS / "net", seeds())
    write(CORPUS / "ws", ws_seeds())
    write(CORPUS / "client", client_seeds())
    try:
        made = datagram_seeds()
    except ImportError:
        sys.exit("make_corpus: the datagram seeds need python3-cryptography (ChaCha20-Poly1305)")
    write(CORPUS / "datagram", made)


if __name__ == "__main__":
    main()
