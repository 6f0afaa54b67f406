#!/usr/bin/python3
"""Writes the Python-made seeds of the fuzz corpora (tests/fuzz/corpus/<target>/):

  torch/    tiny torch.save state_dicts (Debian's python3-torch), incl. a training checkpoint
            {"epoch", "model": state_dict}, a tied (shared storage) pair, a transposed view,
            fp16 and bf16 and int64 tensors
  pickle/   the data.pkl of those archives (raw pickle programs for pickle_fuzzer)
  zip/      the archives again, plus an npz (zip_fuzzer)
  npz/      numpy.savez archives (f32, f16, f64, int32, uint8, fortran order, 0-d, empty) and
            a bare .npy
  safetensors/  a few hand-made headers (dtypes, metadata, an empty tensor)
  text/     a few lines: ASCII, umlauts, CJK, emoji, invalid UTF-8, NUL, empty, BPE cases
  decode/   a few fixed pseudo-random blobs (options, batch and ids for decode_fuzzer)

Every file is small (well under 4 KB). Deterministic: the same bytes on every run.

  /usr/bin/python3 tools/fuzz/make_seeds.py tests/fuzz/corpus
"""
import io
import json
import os
import struct
import sys
import zipfile

import numpy as np
import torch


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    print(f"{len(data):8d}  {path}")


def fixed_zip_times():
    """numpy.savez stamps entries with the current time: pin it so the seeds are reproducible.
    (torch.save already writes fixed timestamps.) The archives keep numpy's own layout, zip64
    extra fields included."""
    import time
    time.localtime = lambda *args: time.struct_time((1980, 1, 1, 0, 0, 0, 1, 1, -1))


def torch_bytes(obj):
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def pkl_of(archive):
    z = zipfile.ZipFile(io.BytesIO(archive))
    name = next(n for n in z.namelist() if n.endswith("/data.pkl"))
    return z.read(name)


def main(root):
    fixed_zip_times()
    g = torch.Generator().manual_seed(0)
    w = torch.randn(4, 3, generator=g)
    sd = {
        "encoder.embed_tokens.weight": torch.randn(5, 4, generator=g),
        "encoder.layers.0.fc1.weight": w,
        "encoder.layers.0.fc1.bias": torch.randn(4, generator=g),
    }
    torch_seeds = {
        "state_dict.pt": sd,
        "tied.pt": {"a.weight": w, "b.weight": w, "c.weight": w.t()},  # shared storage, a strided view
        "dtypes.pt": {
            "h": torch.randn(2, 3, generator=g).half(),
            "b": torch.randn(3, generator=g).bfloat16(),
            "d": torch.randn(2, generator=g).double(),
            "i": torch.arange(6, dtype=torch.int64).reshape(2, 3),
            "s": torch.arange(3, dtype=torch.int32)[1:],  # storage offset 1
            "z": torch.zeros(0, 3),
        },
        "checkpoint.pt": {"epoch": 3, "model": {"x.weight": torch.ones(2, 2)}, "lr": 0.5, "name": "run"},
    }
    import collections
    # The same state dict re-archived with zip64 records everywhere (central directory extra
    # fields, zip64 end record and locator), as torch writes files over 4 GiB.
    zipfile.ZIP64_LIMIT, limit = 0, zipfile.ZIP64_LIMIT
    zipfile.ZIP_FILECOUNT_LIMIT, count_limit = 0, zipfile.ZIP_FILECOUNT_LIMIT
    src = zipfile.ZipFile(io.BytesIO(torch_bytes(sd)))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            dst.writestr(zipfile.ZipInfo(info.filename, date_time=(1980, 1, 1, 0, 0, 0)), src.read(info.filename))
    zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT = limit, count_limit
    write(f"{root}/torch/zip64.pt", out.getvalue())
    write(f"{root}/zip/zip64.pt", out.getvalue())
    torch_seeds["ordered.pt"] = collections.OrderedDict(sd)
    param = torch.nn.Linear(3, 2)
    torch.manual_seed(0)
    torch.nn.init.constant_(param.weight, 0.25)
    torch.nn.init.constant_(param.bias, -1.0)
    torch_seeds["module_state_dict.pt"] = param.state_dict()  # OrderedDict with _metadata
    for name, obj in torch_seeds.items():
        data = torch_bytes(obj)
        write(f"{root}/torch/{name}", data)
        write(f"{root}/pickle/{name[:-3]}.pkl", pkl_of(data))
        if name in ("state_dict.pt", "tied.pt"):
            write(f"{root}/zip/{name}", data)

    arrays = {
        "f32": np.arange(6, dtype="<f4").reshape(2, 3),
        "f16": np.ones((3,), dtype="<f2"),
        "f64": np.array([1.5, -2.0], dtype="<f8"),
        "i32": np.arange(4, dtype="<i4"),
        "u8": np.frombuffer(b"model.yml text", dtype="u1"),
        "fortran": np.asfortranarray(np.arange(6, dtype="<f4").reshape(2, 3)),
        "scalar": np.array(7.0, dtype="<f4"),
        "empty": np.zeros((0, 4), dtype="<f4"),
    }
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    npz = buf.getvalue()
    write(f"{root}/npz/arrays.npz", npz)
    write(f"{root}/zip/arrays.npz", npz)
    buf = io.BytesIO()
    np.savez(buf, **{"Wemb": np.arange(8, dtype="<f4").reshape(2, 4),
                     "encoder_l1_self_Wq": np.eye(4, dtype="<f4")})
    write(f"{root}/npz/marian_like.npz", buf.getvalue())
    buf = io.BytesIO()
    np.save(buf, np.arange(3, dtype="<i8"))
    write(f"{root}/npz/bare.npy", buf.getvalue())

    def safetensors(header, data):
        text = json.dumps(header, separators=(",", ":")).encode()
        text += b" " * ((8 - (8 + len(text)) % 8) % 8)
        return struct.pack("<Q", len(text)) + text + data

    f = np.arange(4, dtype="<f4").tobytes()
    h = np.ones(2, dtype="<f2").tobytes()
    i = np.arange(3, dtype="<i8").tobytes()
    write(f"{root}/safetensors/dtypes.safetensors", safetensors({
        "__metadata__": {"format": "pt", "note": "fuzz seed"},
        "a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
        "b": {"dtype": "F16", "shape": [2], "data_offsets": [16, 20]},
        "c": {"dtype": "BF16", "shape": [1, 2], "data_offsets": [20, 24]},
        "d": {"dtype": "I64", "shape": [3], "data_offsets": [24, 48]},
        "e": {"dtype": "U8", "shape": [0], "data_offsets": [48, 48]},
        "f": {"dtype": "I32", "shape": [], "data_offsets": [48, 52]},
    }, f + h + h + i + b"\x07\x00\x00\x00"))
    write(f"{root}/safetensors/empty.safetensors", safetensors({}, b""))

    lines = {
        "ascii.txt": b"hello world 123\n",
        "letters.txt": b"abcdefghijklmnopqrstuvwxyz0123456",
        "umlaut.txt": "Grüße aus Köln, ß und Ä".encode(),
        "cjk_emoji.txt": "翻訳 テスト 🙂👍🏽".encode(),
        "invalid.txt": b"ok \xc3\x28 \xed\xa0\x80 \xf4\x90\x80\x80 \xc0\xaf end",
        "truncated.txt": b"abc \xe2\x82",
        "nul.txt": b"a\x00b c",
        "spaces.txt": b" \t \r\n",
        "long.txt": b"the quick brown fox jumps over the lazy dog " * 4,
        # For the byte-level BPE tokenizers: contractions, digit runs, space runs and line
        # breaks, decomposed marks (NFC), special tokens.
        "bpe.txt": ("I'M don'ſ 1234567 ٣½  x  \n\n  y\r\n...\t(z e\u0301 a\u0323\u0302 "
                    "\u1112\u1161\u11ab <|endoftext|><|im_start|>\u0338 <|begin_of_text|>").encode(),
    }
    for name, data in lines.items():
        write(f"{root}/text/{name}", data)

    # decode_fuzzer reads its options, batch and ids with FuzzedDataProvider: any bytes do;
    # a few fixed pseudo-random blobs of different lengths start it off.
    import random
    rng = random.Random(7)
    for n in (16, 48, 96, 200):
        write(f"{root}/decode/blob{n}.bin", bytes(rng.randrange(256) for _ in range(n)))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/fuzz/corpus")
