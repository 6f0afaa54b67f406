#!/usr/bin/python3
"""Self-checks of tools/model/t5_torch.py:  /usr/bin/python3 tools/model/test_t5_torch.py

The equivalence the converter's t5 map relies on (converter/architectures/t5.cc) is checked
here against tern's own reference (tern_torch.py): a tied T5 v1.0 equals tern's pre-RMSNorm
encoder-decoder with T5 bias once every q projection is multiplied by sqrt(d_kv) and the
decoder's final norm gain by d_model^-0.5, and differs without either fold."""

import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import t5_torch  # noqa: E402
import tern_torch as tt  # noqa: E402

V10 = {"d_model": 16, "d_kv": 4, "d_ff": 24, "num_heads": 4, "num_layers": 2, "num_decoder_layers": 1,
       "relative_attention_num_buckets": 8, "relative_attention_max_distance": 10, "vocab_size": 30}


def make(cfg, seed=0):
    torch.manual_seed(seed)
    m = t5_torch.T5ForConditionalGeneration(cfg).double().eval()
    with torch.no_grad():
        for name, p in m.named_parameters():
            p.copy_(torch.randn(p.shape, dtype=torch.float64) * (1.0 + (0.2 if "layer_norm" in name else 0.0)))
            if "layer_norm" in name:
                p.add_(1.0)
    return m


def test_names():
    m = make(V10)
    names = set(m.state_dict())
    for stack, n in (("encoder", 2), ("decoder", 1)):
        assert f"{stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight" in names
        assert f"{stack}.final_layer_norm.weight" in names
    assert "encoder.block.1.layer.0.SelfAttention.relative_attention_bias.weight" not in names
    assert "decoder.block.0.layer.1.EncDecAttention.q.weight" in names
    assert "decoder.block.0.layer.2.DenseReluDense.wi.weight" in names
    assert "encoder.block.1.layer.1.DenseReluDense.wo.weight" in names
    assert not any(n.endswith(".bias") for n in names)  # T5 has no biases
    assert m.state_dict()["encoder.block.0.layer.0.SelfAttention.q.weight"].shape == (16, 16)
    gated = make(dict(V10, feed_forward_proj="gated-gelu", d_kv=8, num_heads=3))
    gnames = set(gated.state_dict())
    assert {"encoder.block.0.layer.1.DenseReluDense.wi_0.weight",
            "encoder.block.0.layer.1.DenseReluDense.wi_1.weight"} <= gnames
    assert gated.state_dict()["decoder.block.0.layer.1.EncDecAttention.o.weight"].shape == (16, 24)
    assert "lm_head.weight" in gnames


def test_gelu_new_is_the_tanh_gelu():
    x = torch.linspace(-6, 6, 101, dtype=torch.float64)
    assert torch.allclose(t5_torch.gelu_new(x), F.gelu(x, approximate="tanh"), atol=1e-12, rtol=0)
    assert not torch.allclose(t5_torch.gelu_new(x), F.gelu(x), atol=1e-5)


def canonical(sd, cfg, fold_q=True, fold_out=True):
    """The converter's t5 map (tied v1.0, relu) in Python."""
    q = math.sqrt(cfg["d_kv"]) if fold_q else 1.0
    out = {"encoder.embed_tokens.weight": sd["shared.weight"]}
    for stack, n in (("encoder", cfg["num_layers"]), ("decoder", cfg["num_decoder_layers"])):
        out[f"{stack}.relative_attention_bias.weight"] = sd[f"{stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight"]
        for i in range(n):
            f, t = f"{stack}.block.{i}.layer.", f"{stack}.layers.{i}."
            atts = [("self_attn", "0.SelfAttention")] + ([("encoder_attn", "1.EncDecAttention")] if stack == "decoder" else [])
            for to, frm in atts:
                out[f"{t}{to}.q_proj.weight"] = sd[f"{f}{frm}.q.weight"] * q
                for a, b in (("k_proj", "k"), ("v_proj", "v"), ("out_proj", "o")):
                    out[f"{t}{to}.{a}.weight"] = sd[f"{f}{frm}.{b}.weight"]
            out[f"{t}self_attn_layer_norm.weight"] = sd[f"{f}0.layer_norm.weight"]
            if stack == "decoder":
                out[f"{t}encoder_attn_layer_norm.weight"] = sd[f"{f}1.layer_norm.weight"]
            ff = "2" if stack == "decoder" else "1"
            out[f"{t}fc1.weight"] = sd[f"{f}{ff}.DenseReluDense.wi.weight"]
            out[f"{t}fc2.weight"] = sd[f"{f}{ff}.DenseReluDense.wo.weight"]
            out[f"{t}final_layer_norm.weight"] = sd[f"{f}{ff}.layer_norm.weight"]
        out[f"{stack}.layer_norm.weight"] = sd[f"{stack}.final_layer_norm.weight"]
    if fold_out:
        out["decoder.layer_norm.weight"] = out["decoder.layer_norm.weight"] * cfg["d_model"] ** -0.5
    return out


def test_tied_t5_equals_tern_with_the_folds():
    m = make(V10)
    sd = m.state_dict()
    cfg = tt.Config(d_model=16, heads=4, encoder_layers=2, decoder_layers=1, d_ff=24, activation="relu",
                    norm="pre", norm_kind="rms_norm", layer_norm_eps=1e-6, position="relative",
                    relative_attention="t5_bias", relative_buckets=8, relative_max_distance=10,
                    embedding_scale=1.0, shared_embeddings=True, tied_output=True, src_vocab_size=30,
                    tgt_vocab_size=30, pad_id=0, eos_id=1, unk_id=2, bos_id=0, decoder_start_id=0)
    src = torch.tensor([[5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 1], [8, 9, 1] + [0] * 10])
    tgt = torch.tensor([[0, 5, 6, 7, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], [0, 7, 8, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9]])
    with torch.no_grad():
        enc = m.encode(src)
        want = m.decode(enc, src, tgt)
        errors = []
        for fold_q, fold_out in ((True, True), (False, True), (True, False)):
            tern = tt.TernModel(cfg).double().eval()
            weights = {k: torch.zeros_like(v) for k, v in tern.state_dict().items()}  # biases: 0
            mapped = canonical(sd, V10, fold_q, fold_out)
            assert set(mapped) <= set(weights), set(mapped) - set(weights)
            weights.update(mapped)
            tern.load_state_dict(weights)
            errors.append(float((tern(src, tgt) - want).abs().max()))
            if fold_q:
                e = tern.encode(src)
                real = src != 0
                assert float((e - enc)[real].abs().max()) < 1e-10
    # Sequences longer than the exact buckets: the log buckets are used too.
    assert errors[0] < 1e-10, errors
    assert errors[1] > 1e-3 and errors[2] > 1e-3, errors  # the check notices a missing fold


if __name__ == "__main__":
    torch.set_num_threads(1)
    for name, fn in sorted(globals().items()):
        if name.startswith("test_") and callable(fn):
            fn()
            print(f"{name}: ok")
