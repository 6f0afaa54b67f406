#!/usr/bin/env python3
"""Smoke test of the training tools on a tiny model (one CPU thread, ~20 s):
train 4 steps, resume to 6 (step continues) with sentences weighted 3x, export (F16 safetensors with config metadata,
canonical names), evaluate the export on 5 test sentences, start a new run from the export
(--init-from) and train 2 more steps.
Run: /usr/bin/python3 tools/train/test_train_smoke.py
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EX = os.path.join(ROOT, "examples", "translation")
sys.path.insert(0, os.path.join(ROOT, "tools", "model"))


def run(*args):
    r = subprocess.run([sys.executable, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"{args} failed:\n{r.stdout}\n{r.stderr}")
    return r.stdout


def write_corpus(tmp, train, valid):
    """TMP/data/{train,valid}.{de,en}: the first TRAIN Ding test pairs, then VALID more."""
    data = os.path.join(tmp, "data")
    os.makedirs(data)
    for lang in ("de", "en"):
        with open(os.path.join(EX, "testset", f"test.{lang}"), encoding="utf-8") as f:
            lines = f.read().splitlines()
        for split, sl in (("train", slice(0, train)), ("valid", slice(train, train + valid))):
            with open(os.path.join(data, f"{split}.{lang}"), "w", encoding="utf-8") as f:
                f.write("\n".join(lines[sl]) + "\n")
    return data


def tiny_training(data):
    """train.py's arguments for a d32 1+1 model on DATA (a run directory still to add)."""
    small = json.dumps({"d_model": 32, "heads": 4, "encoder_layers": 1, "decoder_layers": 1,
                        "d_ff": 64})
    return [os.path.join(HERE, "train.py"), "--data", data, "--model-json", small,
            "--max-tokens", "400", "--log-every", "1"]


class TrainSmoke(unittest.TestCase):
    def test_train_resume_export_evaluate(self):
        import tern_torch
        with tempfile.TemporaryDirectory() as tmp:
            data = write_corpus(tmp, train=200, valid=20)
            rundir = os.path.join(tmp, "run")
            common = tiny_training(data) + ["--run", rundir]
            run(*common, "--max-steps", "4")
            run(*common, "--max-steps", "6", "--sentence-weight", "3")
            with open(os.path.join(rundir, "train.log")) as f:
                log = f.read()
            self.assertIn("resumed from", log)
            # weight 3 adds the sentences' own batches twice more
            self.assertRegex(log, r"\((\d+) sentences, weight 1\), (\d+) batches/epoch")
            import re
            (n1, b1), = re.findall(r"\((\d+) sentences, weight 1\), (\d+) batches", log)
            (n3, b3), = re.findall(r"\((\d+) sentences, weight 3\), (\d+) batches", log)
            self.assertEqual(n1, n3)
            self.assertGreater(int(n1), 150)
            extra = int(b3) - int(b1)
            self.assertTrue(extra > 0 and extra % 2 == 0, (b1, b3))
            self.assertIn("sentence weight 1 -> 3 from step 4: epoch", log)
            self.assertIn("step 4 ", log)
            self.assertIn("step 6 ", log)
            self.assertNotIn("step 7 ", log)
            out = os.path.join(tmp, "export")
            run(os.path.join(HERE, "export.py"), "--run", rundir, "--last", "2", "--out", out)
            tensors, meta = tern_torch.load_safetensors(os.path.join(out, "model.safetensors"))
            cfg = tern_torch.Config.from_json(meta["config"])
            self.assertEqual(sorted(tensors), sorted(tern_torch.canonical_names(cfg)))
            self.assertTrue(all(t.dtype.is_floating_point and t.element_size() == 2
                                for t in tensors.values()))
            self.assertEqual(meta["averaged_steps"], "4,6")
            self.assertEqual(tern_torch.Config.load(os.path.join(out, "config.json")).to_dict(),
                             cfg.to_dict())
            res = run(os.path.join(HERE, "evaluate.py"), "--model",
                      os.path.join(out, "model.safetensors"), "--limit", "5")
            self.assertIn("BLEU = ", res)
            # continue from the exported weights in a new run: step counter from the file's
            # averaged_steps, hours carried over, fresh optimizer with a re-warm-up
            run2 = os.path.join(tmp, "run2")
            run(os.path.join(HERE, "train.py"), "--run", run2, "--data", data, "--max-tokens", "400",
                "--log-every", "1", "--init-from", os.path.join(out, "model.safetensors"),
                "--rewarm", "4", "--max-steps", "8")
            with open(os.path.join(run2, "train.log")) as f:
                log2 = f.read()
            self.assertIn("step counter 6, fresh optimizer, re-warm-up 4 steps", log2)
            self.assertIn("valid step 6 nll", log2)  # the initial weights are validated first
            self.assertIn("step 8 ", log2)
            self.assertNotIn("step 9 ", log2)
            sys.path.insert(0, HERE)
            import train
            a = train.argparse.Namespace(lr_scale=1.0, warmup=4000, init_step=100, rewarm=10)
            self.assertAlmostEqual(train.lr_at(105, a, 256), 0.5 * train.lr_at(
                105, train.argparse.Namespace(lr_scale=1.0, warmup=4000), 256))


class SelectArm(unittest.TestCase):
    def test_prepare_only_evaluate_json_and_the_selection(self):
        """train.py --prepare-only writes the id cache and trains nothing; evaluate.py --json
        writes what select_arm.py reads; select_arm.py exports the arm (and last / average)
        with the best mean validation BLEU, copies its SentencePiece model, and skips an arm
        with missing results."""
        import shutil
        import tern_torch
        with tempfile.TemporaryDirectory() as tmp:
            data = write_corpus(tmp, train=100, valid=10)
            base = os.path.join(tmp, "runs")
            common = tiny_training(data)
            run(*common, "--run", os.path.join(base, ".encode"), "--prepare-only")
            self.assertTrue(any(n.startswith("train.de-en.") for n in os.listdir(os.path.join(data, "ids"))))
            self.assertFalse(os.path.exists(os.path.join(base, ".encode", "last.pt")))
            run(*common, "--run", os.path.join(base, "a"), "--max-steps", "3")
            shutil.copytree(os.path.join(base, "a"), os.path.join(base, "b"))
            os.makedirs(os.path.join(base, "c"))  # an arm whose run failed: no results
            j = os.path.join(base, "a", "probe.json")
            out = run(os.path.join(HERE, "evaluate.py"), "--run", os.path.join(base, "a"), "--last",
                      "1", "--src", os.path.join(data, "valid.de"), "--ref",
                      os.path.join(data, "valid.en"), "--json", j)
            with open(j) as f:
                res = json.load(f)
            self.assertEqual(res["sentences"], 10)
            self.assertIn(f"BLEU = {res['bleu']:.2f}", out)
            # made-up results: b's average wins on the mean over the sets (not on Ding alone)
            sets = ("valid", "valid_everyday", "valid_technical")
            bleu = {("a", "last"): (20, 10, 10), ("a", "avg"): (9, 9, 9),
                    ("b", "last"): (5, 5, 5), ("b", "avg"): (12, 14, 15)}
            for (arm, how), scores in bleu.items():
                for name, b in zip(sets, scores):
                    with open(os.path.join(base, arm, f"eval_{how}.{name}.json"), "w") as f:
                        json.dump({"bleu": b, "chrf": 40.0, "loops": 1, "sentences": 10}, f)
            ship = os.path.join(tmp, "ship")
            out = run(os.path.join(HERE, "select_arm.py"), "--base", base, "--out", ship,
                      "a", "b", "c")
            self.assertIn("selected: b, average of last 3 (mean validation BLEU 13.67)", out)
            self.assertIn("| c | last | missing | missing | missing | - |", out)
            with open(os.path.join(ship, "compare.md")) as f:
                self.assertIn("selected: b", f.read())
            tensors, meta = tern_torch.load_safetensors(os.path.join(ship, "model.safetensors"))
            self.assertEqual(meta["averaged_steps"], "3")  # b's one snapshot
            with open(os.path.join(ship, "spm.model"), "rb") as f, \
                    open(os.path.join(EX, "spm.model"), "rb") as g:
                self.assertEqual(f.read(), g.read())
            r = subprocess.run([sys.executable, os.path.join(HERE, "select_arm.py"), "--base",
                                base, "--out", os.path.join(tmp, "none"), "c"],
                               capture_output=True, text=True)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("no arm has all its validation results", r.stderr)


class Collate(unittest.TestCase):
    def test_batches_as_the_per_pair_loop_builds_them(self):
        """The vectorized collate against the obvious loop, on ragged random pairs (lengths
        0..9, one pair alone, pairs in any order)."""
        import numpy as np
        import torch
        sys.path.insert(0, HERE)
        import tern_torch
        import train
        cfg = tern_torch.Config.from_dict(train.DEFAULT_MODEL | {"src_vocab_size": 50,
                                                                  "tgt_vocab_size": 50})
        rng = np.random.default_rng(7)

        def flat(n):
            lens = rng.integers(0, 10, n)
            off = np.zeros(n + 1, dtype=np.int64)
            off[1:] = np.cumsum(lens)
            return rng.integers(4, 50, off[-1]).astype(np.int16), off

        s, so = flat(40)
        t, to = flat(40)
        for idx in ([3], [5, 1, 30, 2], list(range(40)), [39, 0]):
            src, tin, tout = train.collate(np.array(idx), s, so, t, to, cfg)
            B = len(idx)
            ls = max(so[i + 1] - so[i] for i in idx) + 1
            lt = max(to[i + 1] - to[i] for i in idx) + 1
            es = torch.full((B, ls), cfg.pad_id)
            ei = torch.full((B, lt), cfg.pad_id)
            eo = torch.full((B, lt), cfg.pad_id)
            for b, i in enumerate(idx):
                si = [int(x) for x in s[so[i]:so[i + 1]]]
                ti = [int(x) for x in t[to[i]:to[i + 1]]]
                es[b, :len(si) + 1] = torch.tensor(si + [cfg.eos_id])
                ei[b, :len(ti) + 1] = torch.tensor([cfg.bos_id] + ti)
                eo[b, :len(ti) + 1] = torch.tensor(ti + [cfg.eos_id])
            for got, want in ((src, es), (tin, ei), (tout, eo)):
                self.assertEqual(got.dtype, torch.long)
                self.assertTrue(torch.equal(got, want), (idx, got, want))


class SentencePairs(unittest.TestCase):
    def test_only_sentence_targets_count(self):
        import numpy as np
        import sentencepiece as spm
        sys.path.insert(0, HERE)
        import train
        sp = spm.SentencePieceProcessor(model_file=os.path.join(EX, "spm.model"))
        targets = ["The house is red.", "house", "red house", "Is it here, then?",
                   "one two three four", "Go home now!", "He said: \"It is late.\"", ""]
        ids = [sp.encode(t) for t in targets]
        off = np.zeros(len(ids) + 1, dtype=np.int64)
        off[1:] = np.cumsum([len(i) for i in ids])
        flat = np.array([t for i in ids for t in i], dtype=np.int16)
        # at least 4 words and a final . ! or ? (a closing quote may follow); empty: no
        self.assertEqual(train.sentence_pairs(sp, flat, off).tolist(), [0, 3, 6])

    def test_weight_below_one_is_refused(self):
        r = subprocess.run([sys.executable, os.path.join(HERE, "train.py"), "--sentence-weight",
                            "0"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--sentence-weight 0: must be at least 1", r.stderr)


if __name__ == "__main__":
    unittest.main()
