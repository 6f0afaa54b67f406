#!/usr/bin/env python3
"""A language-model fixture (tests/fixtures/checkpoints/FAMILY: config.json + model.safetensors
in the Hugging Face layout) with its vocabulary resized to VOCAB rows, so a real-sized tokenizer
fixture fits it: the tables with the vocabulary as their first dimension (embed_tokens, lm_head)
get deterministic new values, every other tensor and config key is kept. No torch.
usage: resize_lm_vocab.py FIXTURE_DIR OUT_DIR VOCAB"""
import json
import math
import os
import struct
import sys

src, out, vocab = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(os.path.join(src, "config.json")) as f:
    config = json.load(f)
old = config["vocab_size"]
with open(os.path.join(src, "model.safetensors"), "rb") as f:
    blob = f.read()
n = struct.unpack("<Q", blob[:8])[0]
header = json.loads(blob[8:8 + n])
header.pop("__metadata__", None)
base = 8 + n
new_header, data = {}, b""
for i, (name, t) in enumerate(sorted(header.items())):
    if t["dtype"] != "F32":
        sys.exit("%s: %s is %s; only F32 fixtures are resized" % (src, name, t["dtype"]))
    shape = list(t["shape"])
    if shape and shape[0] == old:
        shape[0] = vocab
        count = math.prod(shape)
        values = struct.pack("<%df" % count,
                             *(0.5 * math.sin(0.37 * j + i) for j in range(count)))
    else:
        begin, end = t["data_offsets"]
        values = blob[base + begin:base + end]
    new_header[name] = {"dtype": "F32", "shape": shape,
                        "data_offsets": [len(data), len(data) + len(values)]}
    data += values
text = json.dumps(new_header).encode()
text += b" " * (-len(text) % 8)
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "model.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + data)
config["vocab_size"] = vocab
with open(os.path.join(out, "config.json"), "w") as f:
    json.dump(config, f)
