#!/usr/bin/env python3
"""A tiny Hugging Face language-model checkpoint (config.json + model.safetensors, deterministic
weights, no torch) for the CLI and C API text tests: `gpt2` (d 8, 2 heads, 1 layer, 32
positions) or `llama` (d 16, 2 heads, 1 layer, 64 positions, BOS 1, EOS 2).
usage: make_lm_checkpoint.py gpt2|llama OUT_DIR VOCAB [EOS_ID]"""
import json
import math
import os
import struct
import sys

kind, out, vocab = sys.argv[1], sys.argv[2], int(sys.argv[3])
os.makedirs(out, exist_ok=True)
if kind == "gpt2":
    d, ff, positions = 8, 32, 32
    shapes = {"wte.weight": [vocab, d], "wpe.weight": [positions, d], "ln_f.weight": [d],
              "ln_f.bias": [d], "h.0.ln_1.weight": [d], "h.0.ln_1.bias": [d],
              "h.0.attn.c_attn.weight": [d, 3 * d], "h.0.attn.c_attn.bias": [3 * d],
              "h.0.attn.c_proj.weight": [d, d], "h.0.attn.c_proj.bias": [d],
              "h.0.ln_2.weight": [d], "h.0.ln_2.bias": [d], "h.0.mlp.c_fc.weight": [d, ff],
              "h.0.mlp.c_fc.bias": [ff], "h.0.mlp.c_proj.weight": [ff, d],
              "h.0.mlp.c_proj.bias": [d]}
    eos = int(sys.argv[4]) if len(sys.argv) > 4 else vocab - 1
    config = {"model_type": "gpt2", "vocab_size": vocab, "n_positions": positions, "n_embd": d,
              "n_head": 2, "n_layer": 1, "n_inner": ff, "activation_function": "gelu_new",
              "layer_norm_epsilon": 1e-5, "bos_token_id": eos, "eos_token_id": eos,
              "tie_word_embeddings": True}
else:
    d, ff, positions = 16, 32, 64
    p = "model.layers.0."
    shapes = {"model.embed_tokens.weight": [vocab, d], "model.norm.weight": [d],
              "lm_head.weight": [vocab, d], p + "input_layernorm.weight": [d],
              p + "post_attention_layernorm.weight": [d]}
    for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
        shapes[p + "self_attn." + name + ".weight"] = [d, d]
    shapes[p + "mlp.gate_proj.weight"] = [ff, d]
    shapes[p + "mlp.up_proj.weight"] = [ff, d]
    shapes[p + "mlp.down_proj.weight"] = [d, ff]
    eos = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": vocab,
              "hidden_size": d, "intermediate_size": ff, "num_hidden_layers": 1,
              "num_attention_heads": 2, "num_key_value_heads": 2, "hidden_act": "silu",
              "max_position_embeddings": positions, "rms_norm_eps": 1e-6,
              "rope_theta": 10000.0, "rope_scaling": None, "attention_bias": False,
              "mlp_bias": False, "tie_word_embeddings": False, "bos_token_id": 1,
              "eos_token_id": eos}
header, data, x = {}, b"", 0.0
for name, shape in sorted(shapes.items()):
    n = math.prod(shape)
    values = [1.0 + 0.1 * math.sin(x + i) if name.endswith("norm.weight") or "ln_" in name
              else 0.5 * math.sin(x + 0.37 * i) for i in range(n)]
    x += 1.0
    header[name] = {"dtype": "F32", "shape": shape,
                    "data_offsets": [len(data), len(data) + 4 * n]}
    data += struct.pack("<%df" % n, *values)
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
with open(out + "/model.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + data)
with open(out + "/config.json", "w") as f:
    json.dump(config, f)
