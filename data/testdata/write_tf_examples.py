"""An independent writer of tf.train.Example records in TFRecord files: protobuf's
own Python serializer (Debian's python3-protobuf, the schema compiled by protoc at
run time) and crcmod's CRC32C, none of Ringwork's code.

    python3 write_tf_examples.py PROTO_DIR OUT.tfrecord[.gz] JSON_SPEC

JSON_SPEC is a list of examples, each a dict name -> {"float": [...]} |
{"int64": [...]} | {"bytes": ["utf-8 text", ...]}.
"""
import gzip
import json
import os
import struct
import subprocess
import sys
import tempfile

import crcmod.predefined

crc32c = crcmod.predefined.mkCrcFun("crc-32c")


def masked(data):
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame(record):
    length = struct.pack("<Q", len(record))
    return (length + struct.pack("<I", masked(length)) + record +
            struct.pack("<I", masked(record)))


def main():
    proto_dir, out, spec = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    build = tempfile.mkdtemp()
    subprocess.run(["protoc", f"--proto_path={proto_dir}", f"--python_out={build}",
                    os.path.join(proto_dir, "tf_example.proto")], check=True)
    sys.path.insert(0, build)
    import tf_example_pb2 as pb

    data = b""
    for example in spec:
        e = pb.Example()
        for name, value in example.items():
            f = e.features.feature[name]
            if "float" in value:
                f.float_list.value.extend(value["float"])
            elif "int64" in value:
                f.int64_list.value.extend(value["int64"])
            else:
                f.bytes_list.value.extend(v.encode() for v in value["bytes"])
        data += frame(e.SerializeToString())
    with (gzip.open if out.endswith(".gz") else open)(out, "wb") as f:
        f.write(data)


if __name__ == "__main__":
    main()
