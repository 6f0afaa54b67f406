#!/usr/bin/env python3
"""PyTorch peer of `tern bench`: the same checkpoint through tools/model/tern_torch.py
(TernModel: the project's reference implementation, same math and names), batch 1, greedy with
the K/V cache, exactly --tokens tokens (EOS masked, as tern bench does with min_length).

  --mode fp32   TernModel as is (fp32, torch.set_num_threads(--threads)).
  --mode int8   torch.ao.quantization.quantize_dynamic(qint8) on every nn.Linear. The tied output
                projection is an nn.Linear here too (a copy of the embedding matrix), so that it
                is quantized like every other matrix, as in tern's int8 model. The quantized
                engine is the first of onednn, qnnpack, fbgemm that this torch supports (Debian's
                torch 1.13 has no fbgemm) and is printed in the JSON.

Timed like tern bench: "encode" = encoder + every decoder layer's cross-attention K/V;
"decode" = --tokens decoder steps (embedding + positions, layers, output projection, argmax).
Prints one JSON object (same keys as `tern bench --json`).
"""
import argparse
import json
import os
import resource
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools", "model"))
import tern_torch  # noqa: E402


def bench_source(length, cfg):
    """The ids tern bench translates: 4 + (i * 7919 + 17) mod (vocab - 4), then EOS."""
    span = cfg.src_vocab_size - 4
    return [4 + (i * 7919 + 17) % span for i in range(length - 1)] + [cfg.eos_id]


def load_into(model, path):
    """Reads a safetensors file straight into the model's parameters (no intermediate copy of
    the weights, so peak memory is the model's own, not 3x it as a whole-file read would be)."""
    import struct
    state = model.state_dict()
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        header.pop("__metadata__", None)
        base = 8 + n
        if set(header) != set(state):
            raise SystemExit(f"{path}: tensors differ from the model's: {set(header) ^ set(state)}")
        for name, info in header.items():
            if info["dtype"] != "F32":
                raise SystemExit(f"{name}: {info['dtype']} (this peer reads F32 checkpoints)")
            t = state[name]
            if list(t.shape) != info["shape"]:
                raise SystemExit(f"{name}: shape {info['shape']} != {list(t.shape)}")
            b0, b1 = info["data_offsets"]
            f.seek(base + b0)
            view = memoryview(t.numpy()).cast("B")
            if f.readinto(view) != b1 - b0:
                raise SystemExit(f"{name}: short read")


def read_config(path, config_path):
    import struct
    if config_path:
        return tern_torch.Config.load(config_path)
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return tern_torch.Config.from_json(json.loads(f.read(n))["__metadata__"]["config"])


def rss_now():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def peak_rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class Runner:
    def __init__(self, model, project):
        self.m = model
        self.cfg = model.cfg
        self.project = project

    def encode(self, src):
        enc = self.m.encoder(src, None)  # batch 1, no padding: no mask
        cache = {}
        for i, layer in enumerate(self.m.decoder.layers):
            k, v = layer.encoder_attn.kv(enc)
            cache[i] = {"self": {}, "cross": {"k": k, "v": v}}
        return enc, cache

    def decode(self, enc, cache, tokens, stamps=None, probe=None):
        cfg = self.cfg
        tok = torch.full((1, 1), cfg.decoder_start_id, dtype=torch.long)
        out = []
        for t in range(tokens):
            h = self.m.decoder(tok, enc, None, cache)
            logits = self.project(h[:, -1])
            logits[:, cfg.eos_id] = float("-inf")  # min_length = tokens
            if probe is not None and t in (0, tokens - 1):
                v, i = torch.topk(logits[0], 5)
                probe["first" if t == 0 else "last"] = [[int(a), float(b)] for a, b in zip(i, v)]
            nxt = tern_torch.argmax_lowest(logits)
            out.append(int(nxt[0]))
            tok = nxt[:, None]
            if stamps is not None:
                stamps.append(time.perf_counter())
        return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True, help="model.safetensors (canonical names)")
    ap.add_argument("--config", help="config.json (default: the checkpoint's metadata)")
    ap.add_argument("--mode", choices=["fp32", "int8"], default="fp32")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--source-length", type=int, default=32)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    rss_start = rss_now()
    t0 = time.perf_counter()
    cfg = read_config(args.checkpoint, args.config)
    with torch.no_grad():
        model = tern_torch.TernModel(cfg).eval()
        load_into(model, args.checkpoint)
    engine = None
    if args.mode == "int8":
        # The tied output projection as an nn.Linear (a copy), so quantize_dynamic covers it.
        out_linear = nn.Linear(cfg.d_model, cfg.tgt_vocab_size, bias=model.output_bias)
        with torch.no_grad():
            out_linear.weight.copy_(model.output_weight())
            if model.output_bias:
                out_linear.bias.copy_(model.output_projection.bias)
        model.out_linear = out_linear
        engines = torch.backends.quantized.supported_engines
        engine = next(e for e in ("onednn", "qnnpack", "fbgemm", "x86") if e in engines)
        torch.backends.quantized.engine = engine
        model = torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8, inplace=True)
        project = model.out_linear
    else:
        project = model.project
    runner = Runner(model, project)
    load_ms = (time.perf_counter() - t0) * 1e3

    def encode_ms(length):
        src = torch.tensor([bench_source(length, cfg)], dtype=torch.long)
        times = []
        for r in range(args.warmup + args.repeat):
            a = time.perf_counter()
            runner.encode(src)
            b = time.perf_counter()
            if r >= args.warmup:
                times.append((b - a) * 1e3)
        return statistics.median(times)

    src_ids = bench_source(args.source_length, cfg)
    src = torch.tensor([src_ids], dtype=torch.long)
    totals, encodes, per_token, first, last = [], [], [], [], []
    cpu_totals, cpu_encodes, cpu_per_token = [], [], []
    ids = None
    with torch.inference_mode():
        for r in range(args.warmup + args.repeat):
            stamps = []
            ca = time.process_time()
            a = time.perf_counter()
            enc, cache = runner.encode(src)
            b = time.perf_counter()
            cb = time.process_time()
            ids = runner.decode(enc, cache, args.tokens, stamps)
            c = time.perf_counter()
            cc = time.process_time()
            if r < args.warmup:
                continue
            totals.append((c - a) * 1e3)
            encodes.append((b - a) * 1e3)
            cpu_totals.append((cc - ca) * 1e3)
            cpu_encodes.append((cb - ca) * 1e3)
            cpu_per_token.append((cc - cb) * 1e3 / args.tokens)
            per_token.append((c - b) * 1e3 / args.tokens)
            first.append((stamps[0] - b) * 1e3)
            last.append((stamps[-1] - stamps[-2]) * 1e3 if len(stamps) > 1 else 0.0)
        enc32 = statistics.median(encodes) if args.source_length == 32 else encode_ms(32)
        enc128 = encode_ms(128) if cfg.max_positions >= 128 else None
        probe = {}
        runner.decode(*runner.encode(src), args.tokens, None, probe)
    total = statistics.median(totals)
    result = {
        "engine": "pytorch",
        "mode": args.mode,
        "quantized_engine": engine,
        "torch": torch.__version__,
        "model": args.checkpoint,
        "model_bytes": os.path.getsize(args.checkpoint),
        "threads": args.threads,
        "source_length": args.source_length,
        "tokens": args.tokens,
        "repeat": args.repeat,
        "warmup": args.warmup,
        "load_prepare_ms": load_ms,
        "encode_ms_32": enc32,
        "encode_ms_128": enc128,
        "encode_ms": statistics.median(encodes),
        "decode_ms_per_token": statistics.median(per_token),
        "decode_first_step_ms": statistics.median(first),
        "decode_last_step_ms": statistics.median(last),
        "total_ms": total,
        "tokens_per_s": args.tokens * 1e3 / total,
        "total_ms_runs": totals,
        "cpu_encode_ms": statistics.median(cpu_encodes),
        "cpu_decode_ms_per_token": statistics.median(cpu_per_token),
        "cpu_total_ms": statistics.median(cpu_totals),
        "peak_rss_bytes": peak_rss(),
        "rss_end_bytes": rss_now(),
        "rss_before_load_bytes": rss_start,
        "source_ids": src_ids,
        "ids": ids,
        "top5_first": probe.get("first"),
        "top5_last": probe.get("last"),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
