#!/usr/bin/python3
"""Self-check of tools/model/tern_torch.py. Run: /usr/bin/python3 tools/model/test_tern_torch.py"""

import math
import os
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tern_torch as tt  # noqa: E402


def cfg_post_relu():
    return tt.Config(d_model=32, heads=4, encoder_layers=2, decoder_layers=2, d_ff=64,
                     activation="relu", norm="post", shared_embeddings=True, tied_output=True,
                     src_vocab_size=50, tgt_vocab_size=50)


def cfg_pre_gelu():
    return tt.Config(d_model=24, heads=3, encoder_layers=1, decoder_layers=3, d_ff=40,
                     activation="gelu", norm="pre", shared_embeddings=False, tied_output=False,
                     src_vocab_size=37, tgt_vocab_size=41)


def cfg_positions():
    """One small config per position kind / block variant (format 1.2)."""
    base = dict(d_model=24, heads=3, encoder_layers=2, decoder_layers=2, d_ff=32,
                src_vocab_size=30, tgt_vocab_size=30)
    return [
        tt.Config(**base, position="learned", max_positions=40),
        tt.Config(**base, norm="pre", position="relative", relative_attention="shaw",
                  relative_max_distance=2, shared_embeddings=False, tied_output=False),
        tt.Config(**base, norm="pre", position="relative", relative_attention="t5_bias",
                  relative_buckets=8, relative_max_distance=6),
        tt.Config(**base, norm="pre", norm_kind="rms_norm", activation="swiglu",
                  position="rotary", rotary_dim=6),
        tt.Config(**base, position="rotary"),          # rotary over all of d_head
        tt.Config(**base, activation="swiglu", position="none"),
    ]


def expected_names(cfg, output_bias):
    """Written directly from the CONVENTIONS.md table (independent of tt.canonical_names)."""
    names = set()
    names.add("encoder.embed_tokens.weight")
    if not cfg.shared_embeddings:
        names.add("decoder.embed_tokens.weight")
    if not cfg.tied_output:
        names.add("output_projection.weight")
    if output_bias:
        names.add("output_projection.bias")
    wb = ("weight", "bias")
    projs = ("q_proj", "k_proj", "v_proj", "out_proj")
    for stack, n, attns in (("encoder", cfg.encoder_layers, ("self_attn",)),
                            ("decoder", cfg.decoder_layers, ("self_attn", "encoder_attn"))):
        for i in range(n):
            p = f"{stack}.layers.{i}"
            for a in attns:
                for pr in projs:
                    for x in wb:
                        names.add(f"{p}.{a}.{pr}.{x}")
                for x in wb:
                    names.add(f"{p}.{a}_layer_norm.{x}")
            for m in ("fc1", "fc2", "final_layer_norm"):
                for x in wb:
                    names.add(f"{p}.{m}.{x}")
            if cfg.activation == "swiglu":
                names |= {f"{p}.fc3.weight", f"{p}.fc3.bias"}
            if cfg.position == "relative" and cfg.relative_attention == "shaw":
                names |= {f"{p}.self_attn.relative_key.weight",
                          f"{p}.self_attn.relative_value.weight"}
        if cfg.norm == "pre":
            for x in wb:
                names.add(f"{stack}.layer_norm.{x}")
        if cfg.position == "learned":
            names.add(f"{stack}.embed_positions.weight")
        if cfg.position == "relative" and cfg.relative_attention == "t5_bias":
            names.add(f"{stack}.relative_attention_bias.weight")
    if cfg.norm_kind == "rms_norm":  # RMSNorm has a weight only
        names = {n for n in names if not ("layer_norm" in n and n.endswith(".bias"))}
    return names


def test_state_dict_names():
    for cfg in [cfg_post_relu(), cfg_pre_gelu()] + cfg_positions():
        for bias in (False, True):
            m = tt.TernModel(cfg, output_bias=bias)
            keys = list(m.state_dict().keys())
            assert len(keys) == len(set(keys)), "duplicate state_dict keys"
            assert set(keys) == expected_names(cfg, bias), \
                (set(keys) ^ expected_names(cfg, bias))
            assert keys == tt.canonical_names(cfg, bias)
            # no aliasing: every parameter is a distinct tensor
            params = list(m.parameters())
            assert len({id(p) for p in params}) == len(params) == len(keys)
            sd = m.state_dict()
            if cfg.shared_embeddings:
                assert m.decoder.embedding() is m.encoder.embed_tokens
            if cfg.tied_output:
                assert m.output_weight() is m.decoder.embedding().weight
            # shapes
            d = cfg.d_model
            assert sd["encoder.embed_tokens.weight"].shape == (cfg.src_vocab_size, d)
            assert sd["encoder.layers.0.fc1.weight"].shape == (cfg.d_ff, d)
            assert sd["encoder.layers.0.fc2.weight"].shape == (d, cfg.d_ff)
            if not cfg.tied_output:
                assert sd["output_projection.weight"].shape == (cfg.tgt_vocab_size, d)
            # shared table survives .double() and still has a single key
            m2 = tt.TernModel(cfg, output_bias=bias).double()
            assert m2.decoder.embedding().weight.dtype == torch.float64
            assert list(m2.state_dict().keys()) == keys
    print("ok state_dict names")


def _randomize(model, gen, scale=1.0):
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * scale / math.sqrt(p.shape[-1]))


def test_incremental_equals_full():
    gen = torch.Generator().manual_seed(1234)
    for cfg in (cfg_post_relu(), cfg_pre_gelu(),
                tt.Config(d_model=16, heads=2, encoder_layers=1, decoder_layers=2, d_ff=24,
                          activation="swish", norm="post", shared_embeddings=False,
                          tied_output=True, src_vocab_size=20, tgt_vocab_size=30),
                *cfg_positions()):
        m = tt.TernModel(cfg, output_bias=True).double().eval()
        _randomize(m, gen, 3.0)
        src = torch.tensor([[5, 9, 11, 7, 2], [8, 6, 2, 0, 0], [2, 0, 0, 0, 0]])
        inc = m.greedy(src, 10, use_cache=True)
        full = m.greedy(src, 10, use_cache=False)
        assert inc == full, (inc, full)
        # per sentence alone (unpadded) == padded batch
        for b in range(src.shape[0]):
            n = int((src[b] != cfg.pad_id).sum())
            assert m.greedy(src[b, :n], 10) == [inc[b]]
        # step logits: incremental hidden states == full recompute at every position
        enc = m.encode(src)
        mask = m.src_pad_mask(src)
        tgt = torch.tensor([[1, 4, 7, 9, 5, 6]] * 3)
        full_logits = m.decode_logits(enc, tgt, mask)
        cache = {}
        steps = [m.project(m.decoder(tgt[:, t:t + 1], enc, mask, cache)) for t in range(tgt.shape[1])]
        inc_logits = torch.cat(steps, dim=1)
        assert torch.allclose(full_logits, inc_logits, atol=1e-10, rtol=0), \
            (full_logits - inc_logits).abs().max()
        # padding does not leak: unpadded rows of the batch == sentence alone
        for b in range(src.shape[0]):
            n = int((src[b] != cfg.pad_id).sum())
            alone = m.encode(src[b:b + 1, :n])
            assert torch.allclose(enc[b:b + 1, :n], alone, atol=1e-10, rtol=0)
            lg = m.decode_logits(alone, tgt[b:b + 1])
            assert torch.allclose(full_logits[b:b + 1], lg, atol=1e-10, rtol=0)
        print(f"ok incremental == full ({cfg.norm}/{cfg.activation}/{cfg.position}"
              f"{'/' + cfg.relative_attention if cfg.position == 'relative' else ''}): {inc}")


def test_causal():
    cfg = cfg_pre_gelu()
    m = tt.TernModel(cfg).double().eval()
    src = torch.tensor([[5, 6, 2]])
    enc = m.encode(src)
    a = m.decode_logits(enc, torch.tensor([[1, 4, 7, 9]]))
    b = m.decode_logits(enc, torch.tensor([[1, 4, 8, 10]]))
    assert torch.allclose(a[:, :2], b[:, :2], atol=1e-12)
    assert not torch.allclose(a[:, 2:], b[:, 2:])
    print("ok causal mask")


def test_safetensors_roundtrip():
    gen = torch.Generator().manual_seed(7)
    tensors = {
        "a.f32": torch.randn(3, 5, generator=gen),
        "b.f64": torch.randn(2, 2, dtype=torch.float64, generator=gen),
        "c.f16": torch.randn(7, generator=gen).half(),
        "d.bf16": torch.randn(4, 3, generator=gen).bfloat16(),
        "e.i32": torch.tensor([[1, -2, 3], [2**31 - 1, -2**31, 0]], dtype=torch.int32),
        "f.i64": torch.tensor([2**40, -5], dtype=torch.int64),
        "g.u8": torch.tensor([0, 255, 7], dtype=torch.uint8),
        "h.i8": torch.tensor([-128, 127], dtype=torch.int8),
        "i.bool": torch.tensor([True, False, True]),
        "j.scalar": torch.tensor(3.5),
        "k.empty": torch.zeros(0, 4),
        "l.i16": torch.tensor([-300, 300], dtype=torch.int16),
    }
    meta = {"config": '{"d_model": 4}', "note": "héllo"}
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "x.safetensors")
        tt.save_safetensors(p, tensors, meta)
        raw = open(p, "rb").read()
        n = int.from_bytes(raw[:8], "little")
        assert (8 + n) % 8 == 0
        import json
        hdr = json.loads(raw[8:8 + n])
        assert hdr["a.f32"]["dtype"] == "F32" and hdr["e.i32"]["dtype"] == "I32"
        # no holes, each tensor aligned to its element size
        spans = sorted(v["data_offsets"] for k, v in hdr.items() if k != "__metadata__")
        pos = 0
        for b0, b1 in spans:
            assert b0 == pos
            pos = b1
        assert pos == len(raw) - 8 - n
        got, gmeta = tt.load_safetensors(p)
        assert gmeta == meta
        assert set(got) == set(tensors)
        for k, t in tensors.items():
            assert got[k].dtype == t.dtype and got[k].shape == t.shape, k
            assert torch.equal(got[k], t), k
        # a model round trip
        m = tt.TernModel(cfg_pre_gelu(), output_bias=True)
        tt.save_safetensors(p, m.state_dict(), {"config": m.cfg.to_json()})
        got, gmeta = tt.load_safetensors(p)
        cfg = tt.Config.from_json(gmeta["config"])
        assert cfg == m.cfg
        m2 = tt.TernModel.from_tensors(cfg, got)
        for k, v in m.state_dict().items():
            assert torch.equal(v, m2.state_dict()[k])
    print("ok safetensors round trip")


def test_config_json():
    c = cfg_post_relu()
    assert abs(c.embedding_scale - math.sqrt(32)) < 1e-15
    c2 = tt.Config.from_json(c.to_json())
    assert c2 == c
    doc = """{
      "architecture": "encoder_decoder",
      "d_model": 32, "heads": 4, "encoder_layers": 2, "decoder_layers": 2, "d_ff": 64,
      "activation": "relu",            // relu | gelu | swish
      "norm": "post",                  // post (paper) | pre
      "layer_norm_eps": 1e-5,
      "embedding_scale": 5.656854,     // multiply token embeddings by this
      "shared_embeddings": true, "tied_output": true,
      "src_vocab_size": 50, "tgt_vocab_size": 50, "some_future_key": 7
    }"""
    c3 = tt.Config.from_json(doc)
    assert c3.embedding_scale == 5.656854 and c3.extra == {"some_future_key": 7}
    assert tt.Config.from_json(c3.to_json()).to_dict()["some_future_key"] == 7
    print("ok config json")


def test_seed_golden_pe():
    pe = tt.sinusoidal_positions(3, 4)
    golden = [[0.00, 1.00, 0.00, 1.00], [0.84, 0.54, 0.01, 1.00], [0.91, -0.42, 0.02, 1.00]]
    for p in range(3):
        for j in range(4):
            assert abs(round(float(pe[p, j]), 2) - golden[p][j]) < 1e-9, (p, j, float(pe[p, j]))
    emb = torch.tensor([[0.10, 0.20, 0.30, 0.40], [0.50, 0.60, 0.70, 0.80],
                        [0.90, 0.10, 0.20, 0.30]], dtype=torch.float64)
    summed = [[0.10, 1.20, 0.30, 1.40], [1.34, 1.14, 0.71, 1.80], [1.81, -0.32, 0.22, 1.30]]
    x = emb + pe
    for p in range(3):
        for j in range(4):
            assert abs(float(x[p, j]) - summed[p][j]) < 0.006, (p, j, float(x[p, j]))
    # exact values
    assert abs(float(pe[1, 0]) - math.sin(1.0)) < 1e-15
    assert abs(float(pe[2, 2]) - math.sin(0.02)) < 1e-15
    assert abs(float(pe[2, 3]) - math.cos(0.02)) < 1e-15
    # the model's embedding path uses the same PE (embedding_scale 1, one-hot-like table)
    cfg = tt.Config(d_model=4, heads=1, encoder_layers=0, decoder_layers=0, d_ff=4,
                    embedding_scale=1.0, src_vocab_size=3, tgt_vocab_size=3)
    m = tt.TernModel(cfg).double()
    with torch.no_grad():
        m.encoder.embed_tokens.weight.copy_(emb)
    out = m.encoder.embed(torch.tensor([[0, 1, 2]]))[0]
    assert torch.allclose(out, x, atol=1e-15)
    print("ok seed golden PE (d_model=4)")


def test_seed_golden_attention():
    q = torch.tensor([[1.0, 0.0], [0.0, 2.0]], dtype=torch.float64)
    k = torch.tensor([[1.0, 2.0], [0.0, 1.0]], dtype=torch.float64)
    v = torch.tensor([[0.5, 1.5], [2.0, 0.0]], dtype=torch.float64)
    z, a = tt.attention(q, k, v)
    assert torch.allclose(a, torch.tensor([[0.66976, 0.33024], [0.80443, 0.19557]],
                                          dtype=torch.float64), atol=6e-6)
    assert torch.allclose(z, torch.tensor([[0.99536, 1.00464], [0.79336, 1.20664]],
                                          dtype=torch.float64), atol=6e-6)
    assert tt.argmax_lowest(torch.tensor([1.0, 3.0, 3.0, 2.0])).item() == 1
    print("ok seed golden attention")


def test_t5_buckets():
    """T5's _relative_position_bucket against values worked out from its definition."""
    r = torch.tensor([0, -1, 1, -7, -8, -11, -12, -16, -32, -64, -127, -128, -1000, 8, 16, 128])
    assert tt.t5_relative_position_bucket(r, True, 32, 128).tolist() == \
        [0, 1, 17, 7, 8, 8, 9, 10, 12, 14, 15, 15, 15, 24, 26, 31]
    r = torch.tensor([5, 0, -1, -15, -16, -31, -32, -64, -127, -1000])
    assert tt.t5_relative_position_bucket(r, False, 32, 128).tolist() == \
        [0, 0, 1, 15, 16, 21, 21, 26, 31, 31]
    print("ok t5 buckets")


def test_position_math():
    # rotary: q_m . k_n depends only on m - n; dims beyond rotary_dim untouched
    gen = torch.Generator().manual_seed(3)
    q, k = torch.randn(1, 8, generator=gen, dtype=torch.float64), torch.randn(1, 8, generator=gen,
                                                                              dtype=torch.float64)
    def dot(m, n, r=8):
        cq, sq = tt.rotary_tables(torch.tensor([m]), r, 10000.0)
        ck, sk = tt.rotary_tables(torch.tensor([n]), r, 10000.0)
        return float((tt.apply_rotary(q, cq, sq, r) * tt.apply_rotary(k, ck, sk, r)).sum())
    assert abs(dot(5, 2) - dot(40, 37)) < 1e-12
    c, s_ = tt.rotary_tables(torch.tensor([3]), 6, 10000.0)
    assert torch.equal(tt.apply_rotary(q, c, s_, 6)[:, 6:], q[:, 6:])
    # RMSNorm: x / sqrt(mean(x^2) + eps) * w
    n = tt.RMSNorm(4, 1e-6).double()
    x = torch.tensor([[1.0, -2.0, 3.0, 0.5]], dtype=torch.float64)
    want = x / math.sqrt((1 + 4 + 9 + 0.25) / 4 + 1e-6)
    assert torch.allclose(n(x), want, atol=1e-15)
    # Shaw with zero tables and T5 with a zero bias are plain attention
    for cfg in cfg_positions()[1:3]:
        m = tt.TernModel(cfg).double().eval()
        _randomize(m, gen, 2.0)
        src, tgt = torch.tensor([[5, 9, 11, 7, 2]]), torch.tensor([[1, 4, 7, 9]])
        with torch.no_grad():
            before = m(src, tgt)
            for name, p in m.named_parameters():
                if "relative" in name:
                    p.zero_()
            plain = tt.TernModel(tt.Config(**{**cfg.to_dict(), "position": "none"})).double()
            plain.load_state_dict({k: v for k, v in m.state_dict().items() if "relative" not in k})
            assert torch.allclose(m(src, tgt), plain(src, tgt), atol=1e-12)
            assert not torch.allclose(before, plain(src, tgt))
    print("ok rotary / rms_norm / relative-zero checks")


if __name__ == "__main__":
    torch.set_num_threads(1)
    test_state_dict_names()
    test_config_json()
    test_seed_golden_pe()
    test_seed_golden_attention()
    test_causal()
    test_incremental_equals_full()
    test_t5_buckets()
    test_position_math()
    test_safetensors_roundtrip()
    print("ALL OK")
