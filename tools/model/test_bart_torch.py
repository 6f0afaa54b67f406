#!/usr/bin/python3
"""Self-checks of tools/model/bart_torch.py:  /usr/bin/python3 tools/model/test_bart_torch.py

The BART / mBART reference (Hugging Face names, positions at offset 2) and tern's canonical
reference (tern_torch.py with layernorm_embedding, learned positions, forced_bos_id) are two
independent forwards of the same network: with the converter's mapping of the weights (model.
dropped, position rows 2.., final_logits_bias as the output bias) they must agree.
"""

import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bart_torch as bt  # noqa: E402
import tern_torch as tt  # noqa: E402

V, D, MAX_POS = 40, 16, 12


def hf_config(model_type):
    pre = model_type == "mbart"
    return {"model_type": model_type, "d_model": D, "encoder_attention_heads": 2,
            "encoder_layers": 2, "decoder_layers": 2, "encoder_ffn_dim": 24,
            "activation_function": "gelu", "scale_embedding": pre, "normalize_before": pre,
            "vocab_size": V, "max_position_embeddings": MAX_POS, "pad_token_id": 1,
            "bos_token_id": 0, "eos_token_id": 2, "decoder_start_token_id": 2}


def random_model(cfg, seed):
    torch.manual_seed(seed)
    m = bt.Seq2Seq(cfg).double().eval()
    with torch.no_grad():
        for name, p in m.named_parameters():
            p.copy_(torch.randn(p.shape, dtype=torch.float64) * (0.3 if name.endswith("bias") else 0.6))
        m.final_logits_bias.normal_()
    return m


def canonical(m, cfg, forced):
    """The converter's mapping (converter/architectures/bart.cc) as a tern_torch model."""
    pre = cfg["normalize_before"]
    c = tt.Config(d_model=D, heads=2, encoder_layers=2, decoder_layers=2, d_ff=24,
                  activation="gelu", norm="pre" if pre else "post", position="learned",
                  max_positions=MAX_POS, embedding_scale=math.sqrt(D) if pre else 1.0,
                  shared_embeddings=True, tied_output=True, src_vocab_size=V, tgt_vocab_size=V,
                  pad_id=1, bos_id=0, eos_id=2, unk_id=3, decoder_start_id=2,
                  layernorm_embedding=True, forced_bos_id=-1 if forced is None else forced)
    sd = {}
    for name, t in m.state_dict().items():
        if name == "final_logits_bias":
            sd["output_projection.bias"] = t[0]
        elif name == "model.shared.weight":
            sd["encoder.embed_tokens.weight"] = t
        elif "embed_positions" in name:
            sd[name[len("model."):]] = t[bt.POSITION_OFFSET:]
        else:
            sd[name[len("model."):]] = t
    out = tt.TernModel(c, output_bias=True).double().eval()
    out.load_state_dict(sd, strict=True)
    return out


def check(model_type, forced, seed):
    cfg = hf_config(model_type)
    m = random_model(cfg, seed)
    t = canonical(m, cfg, forced)
    src = torch.tensor([[5, 9, 12, 7, 2], [8, 3, 2, 1, 1]])
    tgt = torch.tensor([[2, 4, 6, 8], [2, 10, 11, 12]])
    with torch.no_grad():
        enc = m.encode(src)
        assert torch.allclose(enc[0], t.encode(src)[0], atol=1e-10), model_type
        assert torch.allclose(m.decode(enc, src, tgt), t(src, tgt), atol=1e-10), model_type
    for b, n in enumerate([5, 3]):
        want = m.greedy(src[b:b + 1, :n], 8, forced)
        assert t.greedy(src[b:b + 1, :n], 8) == [want], (model_type, want)
        if forced is not None:
            assert want[0] == forced


def test_bart_equals_tern_reference():
    check("bart", None, 1)
    check("bart", 0, 2)  # bart-large: <s> forced after </s>


def test_mbart_equals_tern_reference():
    check("mbart", None, 3)
    check("mbart", V - 1, 4)  # mBART-50: the target language code


def test_names_are_hugging_face_names():
    m = bt.Seq2Seq(hf_config("mbart"))
    names = set(m.state_dict_with_tied())
    for n in ("model.shared.weight", "model.encoder.embed_tokens.weight", "lm_head.weight",
              "final_logits_bias", "model.encoder.layernorm_embedding.weight",
              "model.decoder.layer_norm.bias", "model.decoder.layers.1.encoder_attn.k_proj.bias",
              "model.encoder.layers.0.final_layer_norm.weight"):
        assert n in names, n
    assert m.state_dict()["model.encoder.embed_positions.weight"].shape == (MAX_POS + 2, D)
    assert "model.encoder.layer_norm.weight" not in bt.Seq2Seq(hf_config("bart")).state_dict()


if __name__ == "__main__":
    torch.set_num_threads(1)
    for name, fn in sorted(globals().items()):
        if name.startswith("test_"):
            fn()
            print("ok", name)
