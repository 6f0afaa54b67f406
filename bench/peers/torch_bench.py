#!/usr/bin/env python3
"""PyTorch peer of `tern bench`: the same checkpoint through tools/model/tern_torch.py
(TernModel: the project's reference implementation, same math and names), a batch of --batch
sentences (default 1), greedy with the K/V cache or --beam K beam search, exactly --tokens
tokens per sentence (EOS masked, as tern bench does with min_length = max_length).

  --batch B     B sources of --source-length ids each, all the same length (no padding, so no
                mask): sentence b's id[i] = 4 + ((b * length + i) * 7919 + 17) mod (vocab - 4),
                last id EOS, as tern bench.
  --beam K      beam search by the rules of runtime/decoding/beam_search.cc for the case the
                benchmark runs (min_length = max_length = --tokens, so no hypothesis ends early):
                one live hypothesis per sentence at first, a hypothesis' score is its sum of
                log-probabilities (log-softmax of the logits with EOS masked: max and sum of
                exponentials in double as tern does), the K best extensions of a sentence's
                live hypotheses survive (ties: lower hypothesis, then lower token), the
                decoder's self-attention K/V caches are reordered by parent every step, and
                the best of the K final hypotheses by score / length^length_penalty wins
                (--length-penalty, default 1.0 as tern bench; all have --tokens tokens).

  --mode fp32   TernModel as is (fp32, torch.set_num_threads(--threads)).
  --mode int8   torch.ao.quantization.quantize_dynamic(qint8) on every nn.Linear. The tied output
                projection is an nn.Linear here too (a copy of the embedding matrix), so that it
                is quantized like every other matrix, as in tern's int8 model. The quantized
                engine is the first of onednn, qnnpack, fbgemm that this torch supports (Debian's
                torch 1.13 has no fbgemm) and is printed in the JSON.

Timed like tern bench: "encode" = encoder + every decoder layer's cross-attention K/V of the
batch; "decode" = --tokens decoder steps of the whole batch (embedding + positions, layers,
output projection, argmax or the beam step, and for beams the copy of the cross K/V to every
hypothesis), decode_ms_per_token = one step of the batch; tokens_per_s counts the generated
tokens of all sentences. Prints one JSON object (same keys as `tern bench --json`: ids of
sentence 0, ids_batch of every sentence row after row when --batch > 1, top5_* only for
greedy).
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


def bench_source(length, cfg, batch=1):
    """The ids tern bench translates, one list per sentence: sentence b's
    id[i] = 4 + ((b * length + i) * 7919 + 17) mod (vocab - 4), then EOS."""
    span = cfg.src_vocab_size - 4
    return [[4 + ((b * length + i) * 7919 + 17) % span for i in range(length - 1)] + [cfg.eos_id]
            for b in range(batch)]


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
    def __init__(self, model, project, length_penalty=1.0):
        self.m = model
        self.cfg = model.cfg
        self.project = project
        self.length_penalty = length_penalty

    def encode(self, src):
        enc = self.m.encoder(src, None)  # equal-length sources, no padding: no mask
        cache = {}
        for i, layer in enumerate(self.m.decoder.layers):
            k, v = layer.encoder_attn.kv(enc)
            cache[i] = {"self": {}, "cross": {"k": k, "v": v}}
        return enc, cache

    def decode(self, enc, cache, tokens, beam=1, stamps=None, probe=None):
        """-> ids of every sentence (lists of `tokens` ids)."""
        if beam > 1:
            return self.beam_search(enc, cache, tokens, beam, stamps)
        cfg = self.cfg
        batch = enc.shape[0]
        tok = torch.full((batch, 1), cfg.decoder_start_id, dtype=torch.long)
        out = []
        for t in range(tokens):
            h = self.m.decoder(tok, enc, None, cache)
            logits = self.project(h[:, -1])
            logits[:, cfg.eos_id] = float("-inf")  # min_length = tokens
            if probe is not None and t in (0, tokens - 1):
                v, i = torch.topk(logits[0], 5)
                probe["first" if t == 0 else "last"] = [[int(a), float(b)] for a, b in zip(i, v)]
            nxt = tern_torch.argmax_lowest(logits)
            out.append(nxt)
            tok = nxt[:, None]
            if stamps is not None:
                stamps.append(time.perf_counter())
        return torch.stack(out, dim=1).tolist()

    def beam_search(self, enc, cache, tokens, beam, stamps=None):
        """runtime/decoding/beam_search.cc with min_length = max_length = tokens (see the
        module's doc): rows b * beam .. b * beam + beam - 1 are sentence b's hypotheses."""
        cfg = self.cfg
        batch = enc.shape[0]
        rows = batch * beam
        vocab = cfg.tgt_vocab_size
        for layer in cache.values():  # every hypothesis of a sentence reads its source's K/V
            cross = layer["cross"]
            cross["k"] = cross["k"].repeat_interleave(beam, dim=0)
            cross["v"] = cross["v"].repeat_interleave(beam, dim=0)
        enc = enc.repeat_interleave(beam, dim=0)  # not read (the cross K/V are cached)
        tok = torch.full((rows, 1), cfg.decoder_start_id, dtype=torch.long)
        score = torch.full((rows,), float("-inf"))
        score[::beam] = 0.0  # one live hypothesis per sentence at first
        history = torch.zeros((rows, 0), dtype=torch.long)
        identity = torch.arange(rows)
        for t in range(tokens):
            h = self.m.decoder(tok, enc, None, cache)
            logits = self.project(h[:, -1])
            logits[:, cfg.eos_id] = float("-inf")  # length < min_length
            mx = logits.max(dim=-1).values
            total = (logits - mx[:, None]).double().exp().sum(dim=-1)
            base = (score - mx) - total.log().float()
            cand = (base[:, None] + logits).view(batch, beam * vocab)
            # The best 2 * beam, then tern's order: score descending, lower (row, token) first.
            vals, idx = torch.topk(cand, 2 * beam, dim=1)
            parents, toks, scores = [], [], []
            for b, (vs, ix) in enumerate(zip(vals.tolist(), idx.tolist())):
                best = sorted((p for p in zip(vs, ix) if p[0] != float("-inf")),
                              key=lambda p: (-p[0], p[1]))[:beam]
                for v, i in best:
                    parents.append(b * beam + i // vocab)
                    toks.append(i % vocab)
                    scores.append(v)
            parents = torch.tensor(parents)
            score = torch.tensor(scores, dtype=torch.float32)
            tok = torch.tensor(toks)[:, None]
            history = torch.cat([history[parents], tok], dim=1)
            if not torch.equal(parents, identity):  # reorder the self-attention K/V caches
                for i, layer in cache.items():
                    if isinstance(i, int):
                        s = layer["self"]
                        s["k"] = s["k"].index_select(0, parents)
                        s["v"] = s["v"].index_select(0, parents)
            if stamps is not None:
                stamps.append(time.perf_counter())
        # At the length limit every hypothesis ends; the best normalized score wins (first on
        # ties, as tern).
        norm = score / (float(tokens) ** self.length_penalty) if self.length_penalty else score
        out = []
        for b in range(batch):
            j = max(range(beam), key=lambda j: (norm[b * beam + j].item(), -j))
            out.append(history[b * beam + j].tolist())
        return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True, help="model.safetensors (canonical names)")
    ap.add_argument("--config", help="config.json (default: the checkpoint's metadata)")
    ap.add_argument("--mode", choices=["fp32", "int8"], default="fp32")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--source-length", type=int, default=32)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--batch", type=int, default=1, help="sentences translated together")
    ap.add_argument("--beam", type=int, default=1, help="beam search with K beams (1: greedy)")
    ap.add_argument("--length-penalty", type=float, default=1.0, help="beam: score / length^p")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    args = ap.parse_args()
    if args.batch < 1 or args.beam < 1:
        ap.error("--batch and --beam must be >= 1")

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
    runner = Runner(model, project, args.length_penalty)
    load_ms = (time.perf_counter() - t0) * 1e3

    def encode_ms(length):
        src = torch.tensor(bench_source(length, cfg, args.batch), dtype=torch.long)
        times = []
        for r in range(args.warmup + args.repeat):
            a = time.perf_counter()
            runner.encode(src)
            b = time.perf_counter()
            if r >= args.warmup:
                times.append((b - a) * 1e3)
        return statistics.median(times)

    src_rows = bench_source(args.source_length, cfg, args.batch)
    src_ids = src_rows[0]
    src = torch.tensor(src_rows, dtype=torch.long)
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
            ids = runner.decode(enc, cache, args.tokens, args.beam, stamps)
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
            if args.beam == 1:
                first.append((stamps[0] - b) * 1e3)
                last.append((stamps[-1] - stamps[-2]) * 1e3 if len(stamps) > 1 else 0.0)
        enc32 = statistics.median(encodes) if args.source_length == 32 else encode_ms(32)
        enc128 = encode_ms(128) if cfg.max_positions >= 128 else None
        probe = {}
        if args.beam == 1:  # verification pass: sentence 0's top-5 logits
            runner.decode(*runner.encode(src), args.tokens, 1, None, probe)
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
        "batch": args.batch,
        "beam": args.beam,
        "repeat": args.repeat,
        "warmup": args.warmup,
        "load_prepare_ms": load_ms,
        "encode_ms_32": enc32,
        "encode_ms_128": enc128,
        "encode_ms": statistics.median(encodes),
        "decode_ms_per_token": statistics.median(per_token),
        "decode_first_step_ms": statistics.median(first) if first else 0.0,
        "decode_last_step_ms": statistics.median(last) if last else 0.0,
        "total_ms": total,
        "tokens_per_s": args.batch * args.tokens * 1e3 / total,
        "total_ms_runs": totals,
        "cpu_encode_ms": statistics.median(cpu_encodes),
        "cpu_decode_ms_per_token": statistics.median(cpu_per_token),
        "cpu_total_ms": statistics.median(cpu_totals),
        "peak_rss_bytes": peak_rss(),
        "rss_end_bytes": rss_now(),
        "rss_before_load_bytes": rss_start,
        "source_ids": src_ids,
        "ids": ids[0],
    }
    if args.batch > 1:
        result["ids_batch"] = [i for row in ids for i in row]  # row after row
    if args.beam == 1:
        result["top5_first"] = probe.get("first")
        result["top5_last"] = probe.get("last")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
