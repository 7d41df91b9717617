#!/usr/bin/env python3
"""Writes the binary test files of tests/data (.npy and .gguf, good and broken).

Plain Python (no numpy) so that the files can be regenerated anywhere:
    python3 tests/data/make_test_data.py
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def npy(descr, shape, payload, fortran=False, version=1):
    shape_text = "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, "True" if fortran else "False", shape_text)
    prefix = 10 if version == 1 else 12
    total = (prefix + len(header) + 1 + 63) // 64 * 64
    header += " " * (total - prefix - len(header) - 1) + "\n"
    length = struct.pack("<H", len(header)) if version == 1 else struct.pack("<I", len(header))
    return b"\x93NUMPY" + bytes([version, 0]) + length + header.encode("latin1") + payload


def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf(kvs, tensors, alignment=32):
    """kvs: list of (key, type id, packed value); tensors: list of (name, ne list, type id, data bytes)."""
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for key, type_id, value in kvs:
        out += gguf_string(key) + struct.pack("<I", type_id) + value
    offset = 0
    offsets = []
    for name, ne, type_id, data in tensors:
        offsets.append(offset)
        out += gguf_string(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        out += struct.pack("<IQ", type_id, offset)
        offset = (offset + len(data) + alignment - 1) // alignment * alignment
    out += b"\0" * ((-len(out)) % alignment)
    for (_, _, _, data) in tensors:
        out += data + b"\0" * ((-len(data)) % alignment)
    return out


def f32(values):
    return b"".join(struct.pack("<f", v) for v in values)


def f16(values):
    return b"".join(struct.pack("<e", v) for v in values)


def write(name, data):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)


def main():
    six = [float(i) for i in range(6)]
    write("good_2x3_f32.npy", npy("<f4", (2, 3), f32(six)))
    write("good_3_f16.npy", npy("<f2", (3,), f16([0.5, -1.0, 2.0])))
    write("good_4_i32.npy", npy("<i4", (4,), struct.pack("<4i", 3, 1, 4, 1)))
    write("good_2x3_f64.npy", npy("<f8", (2, 3), b"".join(struct.pack("<d", v) for v in six)))
    write("good_v2_f32.npy", npy("<f4", (2, 3), f32(six), version=2))
    write("truncated.npy", npy("<f4", (2, 3), f32(six))[:-5])
    write("truncated_header.npy", npy("<f4", (2, 3), f32(six))[:40])
    write("corrupt_magic.npy", b"\x93NUMPX" + npy("<f4", (2, 3), f32(six))[6:])
    write("corrupt_header.npy", npy("<f4", (2, 3), f32(six)).replace(b"'shape': (2, 3)", b"'shape': [2, 3]"))
    write("fortran.npy", npy("<f4", (2, 3), f32(six), fortran=True))
    write("big_endian.npy", npy(">f4", (2, 3), b"".join(struct.pack(">f", v) for v in six)))

    kvs = [
        ("general.architecture", 8, gguf_string("xbackend-test")),
        ("test.u8", 0, struct.pack("<B", 200)),
        ("test.i8", 1, struct.pack("<b", -100)),
        ("test.u16", 2, struct.pack("<H", 60000)),
        ("test.i16", 3, struct.pack("<h", -30000)),
        ("test.u32", 4, struct.pack("<I", 4000000000)),
        ("test.i32", 5, struct.pack("<i", -2000000000)),
        ("test.f32", 6, struct.pack("<f", 1.5)),
        ("test.bool", 7, struct.pack("<B", 1)),
        ("test.array", 9, struct.pack("<IQ", 8, 2) + gguf_string("a") + gguf_string("bc")),
        ("test.u64", 10, struct.pack("<Q", 2**63 + 5)),
        ("test.i64", 11, struct.pack("<q", -(2**62))),
        ("test.f64", 12, struct.pack("<d", -0.25)),
        ("test.nested", 9, struct.pack("<IQ", 9, 1) + struct.pack("<IQ", 5, 2) + struct.pack("<2i", 7, -7)),
    ]
    tensors = [
        ("w", [4, 3], 0, f32([float(i) / 4 for i in range(12)])),
        ("b", [3], 1, f16([1.0, 2.0, 3.0])),
        ("q", [32, 2], 2, bytes(18 * 2)),  # a q4_0 tensor (all-zero blocks)
    ]
    small = gguf(kvs, tensors)
    write("small.gguf", small)
    write("truncated.gguf", small[:-40])
    write("truncated_header.gguf", small[:60])
    write("corrupt.gguf", b"GGUX" + small[4:])
    write("bad_version.gguf", small[:4] + struct.pack("<I", 1) + small[8:])
    # A string length far beyond the file (a corrupt key).
    write("corrupt_length.gguf", b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1 << 40) + b"abc" + bytes(16))
    write("bad_dims.gguf", gguf([], [("w", [2, 2, 2, 2, 2], 0, f32([0.0] * 32))]))
    # A q4_0 tensor whose rows (40 values) are not whole blocks of 32.
    write("bad_block_rows.gguf", gguf([], [("q", [40, 2], 2, bytes(18 * 3))]))
    # A tensor of a type id that ggml does not define.
    write("unknown_type.gguf", gguf([], [("x", [4], 99, f32([0.0] * 4))]))


if __name__ == "__main__":
    main()
