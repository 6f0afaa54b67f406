#!/usr/bin/env node
// ONNX Runtime peer of `tern bench` on a language model (onnxruntime-node, its bundled CPU
// library): export_lm_onnx.py's lm_step.onnx (new ids + past K/V in, last logits + present K/V
// out) for a batch of --batch prompts of --prompt-length ids (row b's id[i] = 4 + ((b * length
// + i) * 7919 + 17) mod (vocab - 4), as tern bench), prefilled in one run with an empty past,
// then exactly --tokens greedy tokens per prompt, one run per step with the previous present
// K/V as past (argmax.onnx picks each row's token, lowest id on ties). Timed like tern bench:
// prefill_ms includes the first argmax; decode_ms_per_token is one later step of the batch.
//
// usage: node ort_lm_bench.js --dir DIR [--threads 1] [--prompt-length 128] [--tokens 128]
//                             [--batch 1] [--repeat 5] [--warmup 1]
// Prints one JSON object with the keys of `tern bench --json` on a language model.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

function parseArgs(argv) {
  const args = { threads: 1, 'prompt-length': 128, tokens: 128, batch: 1, repeat: 5, warmup: 1 };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    if (!a.startsWith('--')) throw new Error(`unexpected argument ${a}`);
    const [k, v] = a.includes('=') ? a.slice(2).split('=', 2) : [a.slice(2), argv[++i]];
    args[k] = k === 'dir' ? v : Number(v);
  }
  if (!args.dir) throw new Error('--dir is required');
  for (const k of ['threads', 'prompt-length', 'tokens', 'batch', 'repeat']) {
    if (!Number.isInteger(args[k]) || args[k] < 1) throw new Error(`--${k} must be an integer >= 1`);
  }
  return args;
}

const nowMs = () => Number(process.hrtime.bigint()) / 1e6;
const median = (v) => {
  if (v.length === 0) return 0;
  const s = [...v].sort((a, b) => a - b);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
};

function peakRss() {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'utf8'));
    if (m) return Number(m[1]) * 1024;
  } catch (e) { /* no /proc */ }
  return process.resourceUsage().maxRSS * 1024;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const meta = JSON.parse(fs.readFileSync(path.join(args.dir, 'meta.json'), 'utf8'));
  const { layers: L, kv_heads: KV, d_head: dh, vocab: V } = meta;
  const opts = { intraOpNumThreads: args.threads, interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: 'all' };
  const t0 = nowMs();
  const step = await ort.InferenceSession.create(path.join(args.dir, 'lm_step.onnx'), opts);
  const argmax = await ort.InferenceSession.create(path.join(args.dir, 'argmax.onnx'), opts);
  const loadMs = nowMs() - t0;
  const B = args.batch, P = args['prompt-length'], N = args.tokens;
  const prompt = new BigInt64Array(B * P);
  for (let b = 0; b < B; ++b) {
    for (let i = 0; i < P; ++i) prompt[b * P + i] = BigInt(4 + (((b * P + i) * 7919 + 17) % (V - 4)));
  }
  const empty = new ort.Tensor('float32', new Float32Array(0), [L, B, KV, 0, dh]);
  const prefill = [], perToken = [], totals = [];
  let ids = null;
  for (let r = 0; r < args.warmup + args.repeat; ++r) {
    const out = [];
    const a = nowMs();
    let res = await step.run({ ids: new ort.Tensor('int64', prompt, [B, P]), past_k: empty, past_v: empty });
    let next = (await argmax.run({ logits: res.logits })).ids;
    const b = nowMs();
    for (let t = 0; ; ++t) {
      out.push(Array.from(next.data, Number));
      if (t + 1 === N) break;
      res = await step.run({ ids: new ort.Tensor('int64', next.data, [B, 1]), past_k: res.present_k,
        past_v: res.present_v });
      next = (await argmax.run({ logits: res.logits })).ids;
    }
    const c = nowMs();
    ids = out;
    if (r < args.warmup) continue;
    prefill.push(b - a);
    totals.push(c - a);
    if (N > 1) perToken.push((c - b) / (N - 1));
  }
  const pre = median(prefill), stepMs = median(perToken), total = median(totals);
  const row = (s) => ids.map((t) => t[s]);
  const j = {
    engine: 'onnxruntime', precision: meta.precision, threads: args.threads, prompt_length: P,
    tokens: N, batch: B, repeat: args.repeat, warmup: args.warmup, load_prepare_ms: loadMs,
    prefill_ms: pre, prefill_tokens_per_s: pre > 0 ? (B * P * 1000) / pre : 0,
    decode_ms_per_token: stepMs, decode_tokens_per_s: stepMs > 0 ? (B * 1000) / stepMs : 0,
    total_ms: total, tokens_per_s: total > 0 ? (B * N * 1000) / total : 0,
    peak_rss_bytes: peakRss(), ids: row(0),
  };
  if (B > 1) j.ids_batch = Array.from({ length: B }, (_, s) => row(s)).flat();
  console.log(JSON.stringify(j));
}

main().catch((e) => { console.error(`ort_lm_bench: ${e.message}`); process.exit(1); });
