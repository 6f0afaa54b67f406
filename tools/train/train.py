#!/usr/bin/env python3
"""Train the demo German->English Transformer (tools/model/tern_torch.py, docs/CONVENTIONS.md).

Resumable: everything needed to continue (model, optimizer, step, RNG states, data position)
is written atomically to RUN_DIR/last.pt every --ckpt-minutes and on SIGTERM/SIGINT; a restart
with the same RUN_DIR continues from there. Weight-only snapshots RUN_DIR/ckpt_<step>.pt are
kept (--keep newest) for checkpoint averaging by tools/train/export.py.

Usage (see tools/train/run.sh):
  /usr/bin/python3 tools/train/train.py --run /var/cache/tern/train/base

Continuing from shipped weights (a new machine, or a new corpus): --init-from
examples/translation/model.safetensors starts a new run from those weights (the model config
is the file's; optimizer state starts fresh), with the step counter at --init-step (default:
the last step in the file's "averaged_steps" metadata), so the inverse-square-root schedule
continues where it left off, and a linear re-warm-up over --rewarm steps (default 200) for the
fresh Adam moments; the training hours already in the file ("train_hours") are carried over.

On an accelerator: --device cuda, the same run with its matrix products in bfloat16 (autocast;
weights, Adam state and loss in float32) and no host synchronization per step; checkpoints load
on either device. tools/train/compare.sh --device and gpu_session.sh use it (MODEL_CARD.md, v3).

Batching: pairs are sorted by (source length, target length) and cut into batches of at most
--max-tokens padded tokens per side (fairseq style: batch_size * max_len <= max_tokens); the
order of the batches is shuffled per epoch with a seed derived from (--seed, epoch), so the data
position is just (epoch, index of the next batch).
Ids: source = spm ids + eos; target in = bos + ids; target out = ids + eos.
"""
import argparse
import hashlib
import json
import math
import os
import random
import signal
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools", "model"))
import tern_torch  # noqa: E402

DEFAULT_MODEL = dict(
    architecture="encoder_decoder", d_model=256, heads=4, encoder_layers=3, decoder_layers=3,
    d_ff=1024, activation="relu", norm="post", layer_norm_eps=1e-5, position="sinusoidal",
    shared_embeddings=True, tied_output=True, pad_id=0, bos_id=1, eos_id=2, unk_id=3,
    decoder_start_id=1, max_positions=256,
)


def log(fh, msg):
    line = time.strftime("%Y-%m-%d %H:%M:%S ") + msg
    if fh is None or sys.stdout.isatty():
        print(line, flush=True)
    if fh:
        fh.write(line + "\n")
        fh.flush()


def atomic_save(obj, path):
    tmp = path + ".tmp"
    torch.save(obj, tmp)
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    os.replace(tmp, path)


def file_hash(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()[:16]


def encode_corpus(sp, src_path, tgt_path, cache_path, max_len):
    """Encode a parallel corpus once; cache (flat int16 ids + offsets) as .npz. The cache name
    carries hashes of the spm model and of both text files, so a rebuilt corpus is re-encoded."""
    h = hashlib.sha256()
    for p in (src_path, tgt_path):
        h.update(open(p, "rb").read())
    cache_path = cache_path.replace(".npz", f".{h.hexdigest()[:12]}.npz")
    if os.path.exists(cache_path):
        z = np.load(cache_path)
        return z["src"], z["src_off"], z["tgt"], z["tgt_off"]
    with open(src_path, encoding="utf-8") as f:
        src = [l.rstrip("\n") for l in f]
    with open(tgt_path, encoding="utf-8") as f:
        tgt = [l.rstrip("\n") for l in f]
    assert len(src) == len(tgt), (src_path, tgt_path)
    try:  # sentencepiece >= 0.2 encodes a list on several threads
        s_ids = sp.encode(src, num_threads=os.cpu_count())
        t_ids = sp.encode(tgt, num_threads=os.cpu_count())
    except TypeError:
        s_ids = sp.encode(src)
        t_ids = sp.encode(tgt)
    keep = [i for i in range(len(src)) if 0 < len(s_ids[i]) < max_len and 0 < len(t_ids[i]) < max_len]

    def flat(seqs):
        off = np.zeros(len(keep) + 1, dtype=np.int64)
        for j, i in enumerate(keep):
            off[j + 1] = off[j] + len(seqs[i])
        arr = np.empty(off[-1], dtype=np.int16)
        for j, i in enumerate(keep):
            arr[off[j]:off[j + 1]] = seqs[i]
        return arr, off

    s, so = flat(s_ids)
    t, to = flat(t_ids)
    tmp = cache_path + ".tmp.npz"
    np.savez(tmp, src=s, src_off=so, tgt=t, tgt_off=to)
    os.replace(tmp, cache_path)
    return s, so, t, to


def make_batches(s_off, t_off, max_tokens, subset=None):
    """Length-sorted batches (of the pairs in `subset`, default all): list of index arrays;
    (len+1) counts the eos/bos."""
    sl = np.diff(s_off) + 1
    tl = np.diff(t_off) + 1
    if subset is None:
        order = np.lexsort((tl, sl))
    else:
        order = subset[np.lexsort((tl[subset], sl[subset]))]
    batches, cur, cur_max = [], [], 0
    for i in order:
        m = max(cur_max, sl[i], tl[i])
        if cur and m * (len(cur) + 1) > max_tokens:
            batches.append(np.array(cur))
            cur, m = [], max(sl[i], tl[i])
        cur.append(i)
        cur_max = m
    if cur:
        batches.append(np.array(cur))
    return batches


def sentence_pairs(sp, t, t_off):
    """Indices of the pairs whose target is a sentence: at least 4 words (pieces that begin
    with U+2581) and a last piece ending in . ! or ? (a closing quote may follow). Decided on
    the ids, so it needs neither the text nor the cache's length filter. The corpus is mostly
    dictionary words and phrases (docs: examples/translation/MODEL_CARD.md); the task is
    sentences."""
    quotes = "\"'\u201c\u201d"
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
    ends = np.array([p.rstrip(quotes)[-1:] in (".", "!", "?") for p in pieces])
    quote = np.array([p != "" and p.strip(quotes + "\u2581") == "" for p in pieces])
    word = np.array([p.startswith("\u2581") for p in pieces], dtype=np.int64)
    n = len(t_off) - 1
    lengths = np.diff(t_off)
    nonempty = lengths > 0
    words = np.zeros(n, dtype=np.int64)
    words[nonempty] = np.add.reduceat(word[t], t_off[:-1][nonempty])
    last = np.zeros(n, dtype=np.int64)
    last[nonempty] = t[t_off[1:][nonempty] - 1]
    # A closing quote that is a piece of its own: the piece before it decides.
    behind = nonempty & quote[last] & (lengths >= 2)
    last[behind] = t[t_off[1:][behind] - 2]
    return np.flatnonzero(nonempty & ends[last] & (words >= 4))


def collate(idx, s, s_off, t, t_off, cfg):
    """One batch as (src, tgt_in, tgt_out) LongTensors, padded with pad_id: src = ids + eos,
    tgt_in = bos + ids, tgt_out = ids + eos. Vectorized (numpy gathers): at GPU batch sizes
    (thousands of short dictionary pairs) a Python loop per pair would starve the device."""
    idx = np.asarray(idx, dtype=np.int64)
    B = len(idx)
    rows = np.arange(B)

    def padded(flat, off, lead):
        start = off[idx]
        n = off[idx + 1] - start
        L = int(n.max()) + 1
        cols = np.arange(L - 1)
        inside = cols[None, :] < n[:, None]
        out = np.full((B, L), cfg.pad_id, dtype=np.int64)
        body = out[:, 1:] if lead else out[:, :-1]
        body[inside] = flat[(start[:, None] + cols[None, :])[inside]]
        return out, n

    src, sl = padded(s, s_off, False)
    src[rows, sl] = cfg.eos_id
    tout, tl = padded(t, t_off, False)
    tout[rows, tl] = cfg.eos_id
    tin, _ = padded(t, t_off, True)
    tin[:, 0] = cfg.bos_id
    return torch.from_numpy(src), torch.from_numpy(tin), torch.from_numpy(tout)


def init_weights(model, cfg):
    """fairseq-style init: xavier-uniform linears, zero biases, N(0, d^-1/2) embeddings."""
    for name, p in model.named_parameters():
        if name.endswith("embed_tokens.weight"):
            nn.init.normal_(p, mean=0.0, std=cfg.d_model ** -0.5)
            with torch.no_grad():
                p[cfg.pad_id].zero_()
        elif p.dim() == 2:
            nn.init.xavier_uniform_(p)
        elif name.endswith(".bias") and "layer_norm" not in name:
            nn.init.zeros_(p)


def lr_at(step, args, d_model):
    step = max(step, 1)
    lr = args.lr_scale * d_model ** -0.5 * min(step ** -0.5, step * args.warmup ** -1.5)
    init = getattr(args, "init_step", 0) or 0
    rewarm = getattr(args, "rewarm", 0) or 0
    if init and rewarm and step - init < rewarm:
        lr *= max(step - init, 1) / rewarm
    return lr


def loss_fn(logits, tout, pad_id, eps):
    V = logits.shape[-1]
    lp = F.log_softmax(logits.view(-1, V).float(), dim=-1)
    tgt = tout.view(-1)
    mask = tgt != pad_id
    nll = -lp.gather(1, tgt.unsqueeze(1)).squeeze(1)
    smooth = -lp.mean(dim=-1)
    loss = ((1 - eps) * nll + eps * smooth)[mask].sum()
    return loss, nll[mask].sum()


@torch.no_grad()
def evaluate(model, batches, data, cfg, device="cpu"):
    model.eval()
    tot, ntok = 0.0, 0
    for idx in batches:
        src, tin, tout = collate(idx, *data, cfg)
        ntok += int((tout != cfg.pad_id).sum())
        logits = model(src.to(device), tin.to(device))
        _, nll = loss_fn(logits, tout.to(device), cfg.pad_id, 0.0)
        tot += float(nll)
    model.train()
    return tot / max(ntok, 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", default="/var/cache/tern/train/base")
    ap.add_argument("--data", default="/var/cache/tern/data")
    ap.add_argument("--spm", default=os.path.join(ROOT, "examples", "translation", "spm.model"))
    ap.add_argument("--src", default="de")
    ap.add_argument("--tgt", default="en")
    ap.add_argument("--model-json", default="", help="JSON overriding DEFAULT_MODEL fields")
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--label-smoothing", type=float, default=0.1)
    ap.add_argument("--max-tokens", type=int, default=3000)
    ap.add_argument("--warmup", type=int, default=1500)
    ap.add_argument("--lr-scale", type=float, default=1.0)
    ap.add_argument("--max-len", type=int, default=128, help="drop pairs with more spm pieces")
    ap.add_argument("--ckpt-minutes", type=float, default=8.0)
    ap.add_argument("--valid-minutes", type=float, default=15.0)
    ap.add_argument("--log-every", type=int, default=50)
    ap.add_argument("--keep", type=int, default=10, help="weight snapshots kept for averaging")
    ap.add_argument("--max-steps", type=int, default=0)
    ap.add_argument("--max-hours", type=float, default=0.0,
                    help="stop (with a checkpoint) once the run's training time (train_seconds, "
                         "which includes hours carried over by --init-from) reaches this: for "
                         "comparisons on equal training time")
    ap.add_argument("--max-cpu-hours", type=float, default=0.0,
                    help="stop (with a checkpoint) once this run's CPU time in its steps "
                         "(cpu_seconds) reaches this: equal-time comparisons on a machine shared "
                         "with builds, where wall-clock step time measures the load, not the run")
    ap.add_argument("--sentence-weight", type=int, default=1,
                    help="each epoch holds the sentence pairs (sentence_pairs) this many times; "
                         "may change when a run resumes (logged)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu",
                    help="cpu (default), or cuda: the same run on an accelerator, its matrix "
                         "products in bfloat16 (autocast; weights, optimizer and loss in float32)")
    ap.add_argument("--init-from", default="",
                    help="new run: start from these weights (.safetensors with config metadata)")
    ap.add_argument("--init-step", type=int, default=-1,
                    help="step counter of an --init-from run (default: its averaged_steps' last)")
    ap.add_argument("--rewarm", type=int, default=200,
                    help="linear lr warm-up steps after --init-from (fresh optimizer state)")
    ap.add_argument("--extra-valid", default="everyday,technical",
                    help="comma list: also report NLL on DATA/valid_NAME.* when present")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--prepare-only", action="store_true",
                    help="encode the corpus into DATA/ids (once per SentencePiece model) and exit: "
                         "runs started together then share the cache instead of racing to write it")
    args = ap.parse_args()
    if args.sentence_weight < 1:
        ap.error(f"--sentence-weight {args.sentence_weight}: must be at least 1")

    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: no CUDA device is visible")
    os.makedirs(args.run, exist_ok=True)
    logf = open(os.path.join(args.run, "train.log"), "a")
    last_path = os.path.join(args.run, "last.pt")
    ckpt = torch.load(last_path, map_location="cpu") if os.path.exists(last_path) else None
    if ckpt is not None:
        # the run's settings are fixed by its first start (except operational knobs)
        saved = ckpt["args"]
        for k in ("src", "tgt", "model_json", "dropout", "label_smoothing", "max_tokens", "warmup",
                  "lr_scale", "max_len", "seed", "init_from", "init_step", "rewarm"):
            if k in saved:
                setattr(args, k, saved[k])
    init_tensors = init_meta = None
    if ckpt is None and args.init_from:
        init_tensors, init_meta = tern_torch.load_safetensors(args.init_from)
        args.model_json = init_meta["config"]
        if args.init_step < 0:
            args.init_step = int(init_meta.get("averaged_steps", "0").split(",")[-1] or 0)
    if args.init_step < 0:
        args.init_step = 0

    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=args.spm)
    mcfg = dict(DEFAULT_MODEL)
    mcfg.update(json.loads(args.model_json) if args.model_json else {})
    mcfg["src_vocab_size"] = mcfg["tgt_vocab_size"] = sp.get_piece_size()
    assert sp.pad_id() == mcfg["pad_id"] and sp.bos_id() == mcfg["bos_id"] and sp.eos_id() == mcfg["eos_id"]
    cfg = tern_torch.Config.from_dict(mcfg)

    tag = file_hash(args.spm)
    cache_dir = os.path.join(args.data, "ids")
    os.makedirs(cache_dir, exist_ok=True)
    t0 = time.time()
    train = encode_corpus(sp, f"{args.data}/train.{args.src}", f"{args.data}/train.{args.tgt}",
                          f"{cache_dir}/train.{args.src}-{args.tgt}.{tag}.npz", args.max_len)
    valid = encode_corpus(sp, f"{args.data}/valid.{args.src}", f"{args.data}/valid.{args.tgt}",
                          f"{cache_dir}/valid.{args.src}-{args.tgt}.{tag}.npz", 10 ** 6)
    batches = make_batches(train[1], train[3], args.max_tokens)
    vbatches = make_batches(valid[1], valid[3], args.max_tokens)
    ntrain = len(train[1]) - 1
    sentences = sentence_pairs(sp, train[2], train[3])
    if args.sentence_weight > 1:
        extra = make_batches(train[1], train[3], args.max_tokens, subset=sentences)
        batches += extra * (args.sentence_weight - 1)
    extra_valid = []
    for name in filter(None, args.extra_valid.split(",")):
        vs, vt = f"{args.data}/valid_{name}.{args.src}", f"{args.data}/valid_{name}.{args.tgt}"
        if os.path.exists(vs) and os.path.exists(vt):
            vd = encode_corpus(sp, vs, vt, f"{cache_dir}/valid_{name}.{args.src}-{args.tgt}.{tag}.npz",
                               10 ** 6)
            extra_valid.append((name, make_batches(vd[1], vd[3], args.max_tokens), vd))
    log(logf, f"data: {ntrain} train pairs ({len(sentences)} sentences, weight "
              f"{args.sentence_weight}), {len(batches)} batches/epoch "
              f"({time.time() - t0:.0f}s to load)")
    if args.prepare_only:
        return

    torch.manual_seed(args.seed)
    model = tern_torch.TernModel(cfg, dropout=args.dropout)
    init_weights(model, cfg)  # on the CPU: the same initial weights on every device
    model.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9,
                           **({"fused": True} if device.type == "cuda" else {}))
    nparams = sum(p.numel() for p in model.parameters())
    step, epoch, pos, train_seconds, tokens_seen = 0, 0, 0, 0.0, 0
    # train_seconds is wall-clock time of the steps: on a shared machine it overstates the
    # compute; cpu_seconds is this process's CPU time in the steps (since v2; 0 before)
    cpu_seconds = 0.0
    history = []
    if ckpt is not None:
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        step, epoch, pos = ckpt["step"], ckpt["epoch"], ckpt["pos"]
        train_seconds, tokens_seen = ckpt.get("train_seconds", 0.0), ckpt.get("tokens_seen", 0)
        cpu_seconds = ckpt.get("cpu_seconds", 0.0)
        history = ckpt.get("history", [])
        torch.set_rng_state(ckpt["torch_rng"])
        if device.type == "cuda" and ckpt.get("cuda_rng") is not None:
            torch.cuda.set_rng_state(ckpt["cuda_rng"])
        random.setstate(ckpt["py_rng"])
        log(logf, f"resumed from {last_path}: step {step}, epoch {epoch}, batch {pos}, "
                  f"{train_seconds / 3600:.2f} h trained")
        before = ckpt["args"].get("sentence_weight", 1)
        if before != args.sentence_weight:
            # another mixture means other batches: the data position starts a new epoch
            epoch, pos = epoch + 1, 0
            log(logf, f"sentence weight {before} -> {args.sentence_weight} from step {step}: "
                      f"epoch {epoch} begins")
    else:
        if init_tensors is not None:
            model.load_state_dict({k: v.float() for k, v in init_tensors.items()
                                   if not k.startswith("expected.")})
            step = args.init_step
            train_seconds = float(init_meta.get("train_hours", "0")) * 3600
            log(logf, f"initialised from {args.init_from} (steps {init_meta.get('averaged_steps')}, "
                      f"{train_seconds / 3600:.2f} h trained): step counter {step}, fresh optimizer, "
                      f"re-warm-up {args.rewarm} steps")
        log(logf, f"new run {args.run}: {nparams} parameters; config {cfg.to_json(None)}")
        with open(os.path.join(args.run, "config.json"), "w") as f:
            f.write(cfg.to_json() + "\n")
    log(logf, "args " + json.dumps(vars(args)))

    stop = {"flag": False}

    def on_signal(signum, frame):
        stop["flag"] = True
        log(logf, f"signal {signum}: will checkpoint and exit after this step")

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    def save(reason):
        state = {
            "model": model.state_dict(), "optimizer": opt.state_dict(), "step": step,
            "epoch": epoch, "pos": pos, "train_seconds": train_seconds, "tokens_seen": tokens_seen,
            "cpu_seconds": cpu_seconds,
            "torch_rng": torch.get_rng_state(), "py_rng": random.getstate(), "args": vars(args),
            "cuda_rng": torch.cuda.get_rng_state() if device.type == "cuda" else None,
            "config": cfg.to_dict(), "history": history,
        }
        atomic_save(state, last_path)
        snap = os.path.join(args.run, f"ckpt_{step:07d}.pt")
        atomic_save({"model": model.state_dict(), "step": step, "config": cfg.to_dict(),
                     "train_seconds": train_seconds}, snap)
        snaps = sorted(f for f in os.listdir(args.run) if f.startswith("ckpt_") and f.endswith(".pt"))
        for old in snaps[:-args.keep]:
            os.remove(os.path.join(args.run, old))
        log(logf, f"checkpoint ({reason}) step {step} -> {last_path}")

    def epoch_order(e):
        order = list(range(len(batches)))
        random.Random(args.seed * 100003 + e).shuffle(order)
        return order

    order = epoch_order(epoch)
    model.train()
    def validate():
        vl = evaluate(model, vbatches, valid, cfg, device)
        history.append({"step": step, "valid_nll": vl, "hours": train_seconds / 3600})
        msg = f"valid step {step} nll {vl:.3f} ppl {math.exp(vl):.2f}"
        for name, vb, vd in extra_valid:
            x = evaluate(model, vb, vd, cfg, device)
            history[-1][f"valid_{name}_nll"] = x
            msg += f"; {name} nll {x:.3f}"
        log(logf, msg)

    if init_tensors is not None:
        validate()  # the initial weights: the baseline of the continued run
    last_ckpt = last_valid = time.time()
    win_loss = win_nll = 0.0
    win_tok = win_src = 0
    win_t0 = time.time()
    while not stop["flag"]:
        if args.max_steps and step >= args.max_steps:
            break
        if args.max_hours and train_seconds >= args.max_hours * 3600:
            log(logf, f"--max-hours {args.max_hours} reached")
            break
        if args.max_cpu_hours and cpu_seconds >= args.max_cpu_hours * 3600:
            log(logf, f"--max-cpu-hours {args.max_cpu_hours} reached")
            break
        if pos >= len(order):
            epoch, pos = epoch + 1, 0
            order = epoch_order(epoch)
            log(logf, f"epoch {epoch} begins")
        idx = batches[order[pos]]
        ts = time.time()
        cs = time.process_time()
        src, tin, tout = collate(idx, *train, cfg)
        ntok = int((tout != cfg.pad_id).sum())
        nsrc = int((src != cfg.pad_id).sum())
        src, tin, tout = src.to(device), tin.to(device), tout.to(device)
        lr = lr_at(step + 1, args, cfg.d_model)
        for g in opt.param_groups:
            g["lr"] = lr
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            logits = model(src, tin)
        loss, nll = loss_fn(logits, tout, cfg.pad_id, args.label_smoothing)
        opt.zero_grad(set_to_none=True)
        (loss / ntok).backward()
        opt.step()
        step += 1
        pos += 1
        # the sums stay on the device until they are logged (no host sync per step)
        win_loss = win_loss + loss.detach()
        win_nll = win_nll + nll.detach()
        if device.type == "cuda" and step % args.log_every == 0:
            torch.cuda.synchronize()  # the step time of a logged window is the device's
        dt = time.time() - ts
        train_seconds += dt
        cpu_seconds += time.process_time() - cs
        tokens_seen += ntok + nsrc
        win_tok += ntok
        win_src += nsrc
        if step % args.log_every == 0:
            el = time.time() - win_t0
            log(logf, f"step {step} epoch {epoch} batch {pos}/{len(order)} lr {lr:.2e} "
                      f"loss {float(win_loss) / win_tok:.3f} nll {float(win_nll) / win_tok:.3f} "
                      f"tok/s {(win_tok + win_src) / el:.0f} (tgt {win_tok / el:.0f}) "
                      f"trained {train_seconds / 3600:.2f} h (cpu {cpu_seconds / 3600:.2f} h)")
            history.append({"step": step, "loss": float(win_loss) / win_tok,
                            "nll": float(win_nll) / win_tok,
                            "hours": train_seconds / 3600})
            win_loss = win_nll = 0.0
            win_tok = win_src = 0
            win_t0 = time.time()
        now = time.time()
        if now - last_valid >= args.valid_minutes * 60:
            validate()
            last_valid = time.time()
            win_t0 += last_valid - now
        if time.time() - last_ckpt >= args.ckpt_minutes * 60:
            save("periodic")
            last_ckpt = time.time()
    if not stop["flag"]:
        validate()  # at the budget (--max-steps/--max-hours/--max-cpu-hours): what comparisons read
    save("signal" if stop["flag"] else "end")
    log(logf, "exit")


if __name__ == "__main__":
    main()
