#!/usr/bin/env python3
"""Write the seed corpus for fuzz_frame: one valid frame of each message
type, and a stream of several frames.  Layout per lib/proto.h; rerun after a
protocol change: python3 tests/fuzz/make-corpus.py tests/fuzz/corpus/frame"""
import os
import struct
import sys

VERSION = 5


def s(b):
    b = b.encode() if isinstance(b, str) else b
    return struct.pack(">I", len(b)) + b


def frame(t, payload):
    return struct.pack(">HBBI", t, VERSION, 0, len(payload)) + payload


SEEDS = {
    "start": frame(0x0101, s("alice") + s("tab-1") + s("/home/alice") +
                   struct.pack(">HHB", 24, 80, 0) + s("alice@127.0.0.1")),
    "input": frame(0x0102, s("") + s("s1") + s("k:1") +
                   s(b"ls -l\r\x00\xff") + s("@127.0.0.1")),
    "resize": frame(0x0103, s("") + s("s1") + struct.pack(">HH", 50, 132)),
    "close": frame(0x0104, s("bob") + s("x") + s("bob@::1")),
    "attach": frame(0x0105, s("") + s("s1") + struct.pack(">BQ", 1, 1 << 60)
                    + s("@127.0.0.1") + b"\x01"),
    "list": frame(0x0106, struct.pack(">B", 1) + s("")),
    "stats": frame(0x0107, b""),
    "error": frame(0x0202, struct.pack(">H", 2) + s("terminal not running")),
    "started": frame(0x0203, struct.pack(">i", 1234) + s("/tmp") + b"\x01"),
    "list_item": frame(0x0205, s("s1") + s("") + struct.pack(">i", 99) +
                       s("/w") + struct.pack(">HHBBiIqqq", 24, 80, 1, 0, 0,
                                             2, -1, 10**15, 10**15)),
    "output": frame(0x0302, struct.pack(">Q", 10**18 + 5) + "héllo".encode()),
    "screen": frame(0x0305, struct.pack(">QHHB", 10**18 + 5, 24, 80, 1) +
                    "\x1b[?1049h\x1b[1;1Hé".encode()),
    "gap": frame(0x0303, struct.pack(">QQ", 100, 10**18 + 100)),
    "exit": frame(0x0304, struct.pack(">Bi", 1, -9) + s("exit") +
                  struct.pack(">Q", 10**18 + 6)),
}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    with open(os.path.join(out, "stream"), "wb") as f:
        f.write(SEEDS["attach"] + SEEDS["output"] + SEEDS["gap"] +
                SEEDS["exit"])


if __name__ == "__main__":
    main()
