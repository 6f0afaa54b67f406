#!/usr/bin/python3
"""Make the language-model benchmark's models (issue 15): a Hugging Face LLaMA-layout checkpoint
of a published model's shape with random weights, and its .tern conversions, under
build/bench/models/<shape>/ (not in git: regenerated, seeded).

  smollm    SmolLM-135M's shape: d 576, 30 layers, 9 heads, 3 K/V heads (head 64), ff 1536,
            vocab 49152, tied embeddings, rope_theta 10000, RMSNorm eps 1e-5 (about 135M
            parameters: 0.54 GB in fp32).
  llama1b   LLaMA 3.2 1B's shape: d 2048, 16 layers, 32 heads, 8 K/V heads, ff 8192, vocab
            128256, tied, rope_theta 500000 with llama3 rope scaling (about 1.24G parameters:
            4.9 GB in fp32; only when asked for).

Speed does not depend on the weight values (every engine generates exactly the same number of
tokens), so random weights measure what trained ones would. The weights are N(0, 0.02), norms
ones plus small noise.

Usage: make_lm.py --tern build/x86_64/tools/tern [--out build/bench/models] [--shapes smollm]
                  [--dtypes fp32,int8,int4,int4row] [--force]
Prints one JSON line: {"<shape>": {"checkpoint", "config", "tern": {"fp32": path, ...}}}.
"""
import argparse
import json
import os
import subprocess
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools", "model"))
import llama_torch  # noqa: E402
import tern_torch  # noqa: E402

COMMON = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
          "attention_bias": False, "mlp_bias": False, "bos_token_id": 1, "eos_token_id": 2,
          "torch_dtype": "float32", "tie_word_embeddings": True}
SHAPES = {
    "smollm": dict(COMMON, hidden_size=576, num_hidden_layers=30, num_attention_heads=9,
                   num_key_value_heads=3, intermediate_size=1536, vocab_size=49152,
                   max_position_embeddings=2048, rms_norm_eps=1e-5, rope_theta=10000.0,
                   rope_scaling=None),
    "llama1b": dict(COMMON, hidden_size=2048, num_hidden_layers=16, num_attention_heads=32,
                    num_key_value_heads=8, intermediate_size=8192, vocab_size=128256,
                    max_position_embeddings=131072, rms_norm_eps=1e-5, rope_theta=500000.0,
                    rope_scaling={"factor": 32.0, "low_freq_factor": 1.0,
                                  "high_freq_factor": 4.0,
                                  "original_max_position_embeddings": 8192,
                                  "rope_type": "llama3"}),
}
DTYPE_FLAGS = {"fp32": [], "fp16": ["--dtype", "fp16"], "int8": ["--dtype", "int8"],
               "int4": ["--dtype", "int4", "--group-size", "32"], "int4row": ["--dtype", "int4", "--group-size", "0"],
               # int4 per row with the tied embedding / output projection int4 too (the
               # converter keeps an int4 model's embeddings int8 unless told)
               "int4all": ["--dtype", "int4", "--group-size", "0", "--keep", "int4:*embed_tokens*"]}


def make_checkpoint(cfg, path):
    gen = torch.Generator().manual_seed(20261201)
    with torch.no_grad():
        model = llama_torch.LlamaForCausalLM(cfg)
        for name, p in model.named_parameters():
            if name.endswith("layernorm.weight") or name == "model.norm.weight":
                p.copy_(1.0 + 0.05 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(0.02 * torch.randn(p.shape, generator=gen))
    sd = {k: v.contiguous() for k, v in model.state_dict().items()
          if "rotary_emb" not in k and k != "lm_head.weight"}  # tied: saved once
    tern_torch.save_safetensors(path, sd, metadata={"format": "pt"})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tern", required=True)
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench", "models"))
    ap.add_argument("--shapes", default="smollm")
    ap.add_argument("--dtypes", default="fp32,int8,int4")
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args()
    report = {}
    for shape in args.shapes.split(","):
        cfg = SHAPES[shape]
        out = os.path.join(args.out, shape)
        os.makedirs(out, exist_ok=True)
        checkpoint = os.path.join(out, "model.safetensors")
        config = os.path.join(out, "config.json")
        if args.force or not os.path.exists(checkpoint):
            with open(config, "w") as f:
                json.dump(cfg, f, indent=1)
            make_checkpoint(cfg, checkpoint)
        entry = {"checkpoint": checkpoint, "config": config, "tern": {}}
        for dtype in args.dtypes.split(","):
            path = os.path.join(out, f"model-{dtype}.tern")
            if args.force or not os.path.exists(path):
                subprocess.run([args.tern, "convert", checkpoint, "--arch", "llama", "-o", path,
                                "--quiet"] + DTYPE_FLAGS[dtype], check=True)
            entry["tern"][dtype] = path
        report[shape] = entry
    print(json.dumps(report))


if __name__ == "__main__":
    main()
