#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# File: tests/fuzz/make_corpus.py
#
# Writes the seed corpus of molt_net_fuzz (tests/fuzz/net_fuzz.cc) to tests/fuzz/corpus/net: one
# file per scenario, each a 4-byte control header (flags, three cut points; see net_fuzz.cc) and
# the byte stream of one connection. Frames are real FlatBuffers built by flatc from JSON (so no
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
OUT = ROOT / "tests" / "fuzz" / "corpus" / "net"

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


def main():
    if shutil.which("flatc") is None:
        sys.exit("make_corpus: flatc is missing (apt-get install flatbuffers-compiler)")
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.iterdir():
        old.unlink()
    made = seeds()
    for name, data in sorted(made.items()):
        (OUT / name).write_bytes(data)
    print(f"make_corpus: {len(made)} seeds in {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
