#!/usr/bin/env node
// ONNX Runtime peer of `tern bench` (onnxruntime-node, its bundled CPU library): the graphs of
// export_onnx.py (encoder, cross K/V, one decoder step with past self-K/V in and out, batch
// axes dynamic), a batch of --batch sentences, greedy or --beam K beam search, exactly --tokens
// tokens per sentence (EOS masked, as tern bench does with min_length = max_length).
//
// usage: node ort_bench.js --dir DIR [--threads 1] [--source-length 32] [--tokens 32]
//                          [--batch 1] [--beam 1] [--length-penalty 1] [--repeat 5] [--warmup 1]
// --batch B: B equal-length sources (no padding), sentence b's id[i] = 4 + ((b * length + i) *
// 7919 + 17) mod (vocab - 4), last id EOS, as tern bench. --beam K: beam search by the rules of
// runtime/decoding/beam_search.cc for min_length = max_length = --tokens (no hypothesis ends
// early): one live hypothesis per sentence at first; scores are sums of log-probabilities
// (log-softmax with EOS masked); the K best extensions of a sentence's hypotheses survive (ties:
// lower hypothesis, then lower token), found from each row's 2K best log-probabilities, which
// ONNX Runtime computes (export_onnx.py's beam_topk.onnx: LogSoftmax + TopK); present_k/present_v
// rows are reordered by parent after every step (in place; sentences whose hypotheses all kept
// their rows are skipped, as tern does); the best final hypothesis by score /
// length^length_penalty wins. The cross K/V are copied to the K rows of each sentence before the
// first step (timed as decode, as tern's SetRowsPerSentence).
// --profile PREFIX: instead of timing, run --repeat translations with ONNX Runtime's profiler
// on and print the time per graph and per kind of node (linear, attention MatMul, Softmax,
// LayerNorm, ...) as JSON, for comparing with bench/profile.py's buckets for tern.
// DIR holds encoder.onnx, cross_kv.onnx, decoder_step.onnx, beam_topk.onnx, argmax.onnx and
// meta.json (fp32 or int8). Greedy takes each row's argmax with argmax.onnx (a JavaScript loop
// for exports that lack it).
// Prints one JSON object with the keys of `tern bench --json`.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

function parseArgs(argv) {
  const args = { threads: 1, 'source-length': 32, tokens: 32, batch: 1, beam: 1, 'length-penalty': 1, repeat: 5, warmup: 1 };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    if (!a.startsWith('--')) throw new Error(`unexpected argument ${a}`);
    const [k, v] = a.includes('=') ? a.slice(2).split('=', 2) : [a.slice(2), argv[++i]];
    args[k] = k === 'dir' || k === 'profile' ? v : Number(v);
  }
  if (!args.dir) throw new Error('--dir is required');
  for (const k of ['threads', 'source-length', 'tokens', 'batch', 'beam', 'repeat']) {
    if (!Number.isInteger(args[k]) || args[k] < 1) throw new Error(`--${k} must be an integer >= 1`);
  }
  return args;
}

const nowMs = () => Number(process.hrtime.bigint()) / 1e6;
const cpuMs = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };  // whole process
const median = (v) => {
  const s = [...v].sort((a, b) => a - b);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
};

function benchSource(length, cfg, batch) {  // same formula as tern bench: rows of `length` ids
  const span = cfg.src_vocab_size - 4;
  const rows = [];
  for (let b = 0; b < batch; ++b) {
    const ids = [];
    for (let i = 0; i + 1 < length; ++i) ids.push(4 + (((b * length + i) * 7919 + 17) % span));
    ids.push(cfg.eos_id);
    rows.push(ids);
  }
  return rows;
}

function peakRss() {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'utf8'));
    if (m) return Number(m[1]) * 1024;
  } catch (e) { /* no /proc */ }
  return process.resourceUsage().maxRSS * 1024;
}

function top5(logits) {
  const idx = Array.from(logits.keys()).sort((a, b) => logits[b] - logits[a] || a - b).slice(0, 5);
  return idx.map((i) => [i, logits[i]]);
}

// Node kinds for the profile summary, from the exported node names and op types.
function nodeKind(name, op) {
  if (op === 'DynamicQuantizeMatMul' || op === 'Gemm' || op === 'FusedGemm') return 'linear';
  if (/MatMul/.test(op)) return /(proj|fc1|fc2)/.test(name) ? 'linear' : 'attention matmul';
  if (op === 'Softmax') return 'softmax';
  if (/LayerNorm/.test(op) || /(ReduceMean|Pow|Sqrt|Sub|Div)/.test(op) && /layer_norm/.test(name)) return 'layernorm';
  return 'other';
}

function summarizeProfiles(prefix, sessions, names) {
  const out = {};
  sessions.forEach((s, i) => {
    s.endProfiling();  // writes PREFIX-NAME_<date>.json (node's binding does not return the name)
    const dir = path.dirname(prefix);
    const base = `${path.basename(prefix)}-${names[i]}_`;
    const file = path.join(dir, fs.readdirSync(dir).filter((f) => f.startsWith(base) && f.endsWith('.json')).sort().pop());
    const events = JSON.parse(fs.readFileSync(file, 'utf8'));
    const kinds = {};
    let total = 0;
    for (const e of events) {
      if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time')) continue;
      const kind = nodeKind(e.name, (e.args && e.args.op_name) || '');
      kinds[kind] = (kinds[kind] || 0) + e.dur / 1000;
      total += e.dur / 1000;
    }
    out[names[i]] = { total_ms: total, ms_by_kind: kinds };
    fs.unlinkSync(file);
  });
  return out;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const meta = JSON.parse(fs.readFileSync(path.join(args.dir, 'meta.json'), 'utf8'));
  const cfg = meta.config;
  const { layers: L, heads: H, d_head: dh } = meta;
  const rssStart = process.memoryUsage().rss;
  const opts = {
    intraOpNumThreads: args.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  };
  const t0 = nowMs();
  const create = (name) => ort.InferenceSession.create(path.join(args.dir, name + '.onnx'),
    args.profile ? { ...opts, enableProfiling: true, profileFilePrefix: `${args.profile}-${name}` } : opts);
  const encoder = await create('encoder');
  const crossKv = await create('cross_kv');
  const step = await create('decoder_step');
  if (args.beam > 1 && !meta.beam_topk) {
    throw new Error(`${args.dir}: no beam_topk.onnx (exported before --beam); re-run export_onnx.py`);
  }
  const topk = args.beam > 1 ? await create('beam_topk') : null;
  const argmax = args.beam === 1 && meta.argmax ? await create('argmax') : null;  // older exports: JavaScript
  const loadMs = nowMs() - t0;

  const int64 = (ids, dims) => new ort.Tensor('int64', BigInt64Array.from(ids.map(BigInt)), dims);
  const batch = args.batch;
  const beam = args.beam;
  const rows = batch * beam;
  const V = cfg.tgt_vocab_size;
  if ((batch > 1 || beam > 1) && !meta.dynamic_batch) {
    throw new Error(`${args.dir}: exported without a dynamic batch axis; re-run export_onnx.py`);
  }
  async function encode(src) {
    const { enc_out } = await encoder.run({ src_ids: int64(src.flat(), [src.length, src[0].length]) });
    const { cross_k, cross_v } = await crossKv.run({ enc_out });
    return { cross_k, cross_v };
  }
  // [L, batch, ...] -> [L, batch * beam, ...]: each sentence's rows copied to its K hypotheses.
  function expandRows(t) {
    if (beam === 1) return t;
    const [l, b, ...rest] = t.dims;
    const block = rest.reduce((x, y) => x * y, 1);
    const src = t.data;
    const out = new Float32Array(src.length * beam);
    for (let i = 0; i < l; ++i) {
      for (let s = 0; s < b; ++s) {
        const from = src.subarray((i * b + s) * block, (i * b + s + 1) * block);
        for (let j = 0; j < beam; ++j) out.set(from, ((i * b + s) * beam + j) * block);
      }
    }
    return new ort.Tensor('float32', out, [l, b * beam, ...rest]);
  }
  // present [L, rows, H, T, dh], in place: row r takes row parents[r]'s cache (through a scratch
  // copy of the sentence's K rows; sentences whose rows all kept their place are skipped).
  function reorderRows(t, parents) {
    const [l, r, ...rest] = t.dims;
    const block = rest.reduce((x, y) => x * y, 1);
    const data = t.data;
    const scratch = new Float32Array(beam * block);
    for (let s = 0; s < batch; ++s) {
      let identity = true;
      for (let j = 0; j < beam; ++j) identity = identity && parents[s * beam + j] === s * beam + j;
      if (identity) continue;
      for (let i = 0; i < l; ++i) {
        const base = i * r * block;
        for (let j = 0; j < beam; ++j) {
          const p = parents[s * beam + j];
          scratch.set(data.subarray(base + p * block, base + (p + 1) * block), j * block);
        }
        data.set(scratch, base + s * beam * block);
      }
    }
  }
  // One beam step. beam_topk.onnx gives each row's 2 * beam best log-probabilities (LogSoftmax
  // + TopK in ONNX Runtime, ties: lower token first); a sentence's candidates are its live rows'
  // score + log-probability (float32), best first, ties: lower row, then lower token, as
  // beam_search.cc. No EOS can win (masked), so the first `beam` survive.
  const keep = 2 * beam;
  const f = Math.fround;
  const kTensor = int64([keep], [1]);
  async function beamStep(logitsTensor, score, history) {
    const { values, indices } = await topk.run({ logits: logitsTensor, k: kTensor });
    const vals = values.data;
    const idx = indices.data;
    const parents = new Int32Array(rows);
    const tokensOut = new Int32Array(rows);
    const nextScore = new Float32Array(rows);
    const nextHistory = new Array(rows);
    for (let s = 0; s < batch; ++s) {
      const cands = [];
      for (let j = 0; j < beam; ++j) {
        const row = s * beam + j;
        if (score[row] === -Infinity) continue;
        for (let i = 0; i < keep; ++i) {
          const c = f(score[row] + vals[row * keep + i]);
          if (c !== -Infinity) cands.push([c, row, Number(idx[row * keep + i])]);
        }
      }
      cands.sort((x, y) => y[0] - x[0] || x[1] - y[1] || x[2] - y[2]);
      if (cands.length < beam) throw new Error(`sentence ${s}: fewer than ${beam} live extensions`);
      for (let j = 0; j < beam; ++j) {
        const row = s * beam + j;
        const [c, parent, v] = cands[j];
        parents[row] = parent;
        tokensOut[row] = v;
        nextScore[row] = c;
        nextHistory[row] = [...history[parent], v];
      }
    }
    return { parents, tokens: tokensOut, score: nextScore, history: nextHistory };
  }
  // Greedy: each row's argmax, lowest id on ties (export_onnx.py's argmax.onnx, or JavaScript).
  async function argmaxRows(logitsTensor, history, token) {
    if (argmax) {
      const ids = (await argmax.run({ logits: logitsTensor })).ids.data;
      for (let row = 0; row < rows; ++row) {
        const best = Number(ids[row]);
        history[row].push(best);
        token[row] = best;
      }
      return;
    }
    const logits = logitsTensor.data;
    for (let row = 0; row < rows; ++row) {
      const off = row * V;
      let best = 0;
      for (let v = 1; v < V; ++v) if (logits[off + v] > logits[off + best]) best = v;
      history[row].push(best);
      token[row] = best;
    }
  }
  async function decode(cross, tokens, stamps, probe) {
    let pastK = new ort.Tensor('float32', new Float32Array(0), [L, rows, H, 0, dh]);
    let pastV = pastK;
    const crossK = expandRows(cross.cross_k);
    const crossV = expandRows(cross.cross_v);
    const token = new Array(rows).fill(cfg.decoder_start_id);
    // Beam state: score (float32, -Infinity: dead row) and token history per row.
    let score = new Float32Array(rows).fill(-Infinity);
    for (let s = 0; s < batch; ++s) score[s * beam] = 0;
    let history = Array.from({ length: rows }, () => []);
    for (let t = 0; t < tokens; ++t) {
      const r = await step.run({
        token: int64(token, [rows, 1]), position: int64([t], [1]), past_k: pastK, past_v: pastV,
        cross_k: crossK, cross_v: crossV,
      });
      const logits = r.logits.data;
      for (let row = 0; row < rows; ++row) logits[row * V + cfg.eos_id] = -Infinity;  // min_length = tokens
      if (beam === 1) {
        if (probe && t === 0) probe.first = top5(logits.subarray(0, V));
        if (probe && t === tokens - 1) probe.last = top5(logits.subarray(0, V));
        await argmaxRows(r.logits, history, token);
      } else {
        const next = await beamStep(r.logits, score, history);
        score = next.score;
        history = next.history;
        for (let row = 0; row < rows; ++row) token[row] = next.tokens[row];
        reorderRows(r.present_k, next.parents);
        reorderRows(r.present_v, next.parents);
      }
      pastK = r.present_k;
      pastV = r.present_v;
      if (stamps) stamps.push(nowMs());
    }
    if (beam === 1) return history;
    // At the length limit every hypothesis ends; the best normalized score wins (first on ties).
    const lp = args['length-penalty'];
    const out = [];
    for (let s = 0; s < batch; ++s) {
      let best = 0;
      for (let j = 1; j < beam; ++j) {
        const norm = (x) => (lp === 0 ? x : f(x / f(Math.pow(tokens, lp))));
        if (norm(score[s * beam + j]) > norm(score[s * beam + best])) best = j;
      }
      out.push(history[s * beam + best]);
    }
    return out;
  }

  const src = benchSource(args['source-length'], cfg, batch);
  if (args.profile) {
    for (let r = 0; r < args.repeat; ++r) await decode(await encode(src), args.tokens, null, null);
    const extra = [[topk, 'beam_topk'], [argmax, 'argmax']].filter(([sess]) => sess);
    const prof = summarizeProfiles(args.profile, [encoder, crossKv, step, ...extra.map((e) => e[0])],
      ['encoder', 'cross_kv', 'decoder_step', ...extra.map((e) => e[1])]);
    for (const [graph, p] of Object.entries(prof)) {
      const perStep = graph === 'decoder_step' || graph === 'beam_topk' || graph === 'argmax';
      const per = perStep ? args.repeat * args.tokens : args.repeat;
      console.log(`  ${graph}: ${(p.total_ms / per).toFixed(3)} ms per ${perStep ? 'step' : 'call'}`);
      for (const [kind, ms] of Object.entries(p.ms_by_kind).sort((a, b) => b[1] - a[1])) {
        console.log(`    ${(100 * ms / p.total_ms).toFixed(1).padStart(5)}%  ${kind}`);
      }
    }
    return;
  }
  const totals = [], encodes = [], perToken = [], first = [], last = [];
  const cpuTotals = [], cpuEncodes = [], cpuPerToken = [];
  let ids = null;
  for (let r = 0; r < args.warmup + args.repeat; ++r) {
    const stamps = [];
    const ca = cpuMs();
    const a = nowMs();
    const cross = await encode(src);
    const b = nowMs();
    const cb = cpuMs();
    ids = await decode(cross, args.tokens, stamps, null);
    const c = nowMs();
    const cc = cpuMs();
    if (r < args.warmup) continue;
    totals.push(c - a);
    encodes.push(b - a);
    cpuTotals.push(cc - ca);
    cpuEncodes.push(cb - ca);
    cpuPerToken.push((cc - cb) / args.tokens);
    perToken.push((c - b) / args.tokens);
    if (beam === 1) {
      first.push(stamps[0] - b);
      last.push(stamps.length > 1 ? stamps[stamps.length - 1] - stamps[stamps.length - 2] : 0);
    }
  }
  async function encodeMs(length) {
    const s = benchSource(length, cfg, batch);
    const times = [];
    for (let r = 0; r < args.warmup + args.repeat; ++r) {
      const a = nowMs();
      await encode(s);
      if (r >= args.warmup) times.push(nowMs() - a);
    }
    return median(times);
  }
  const enc32 = args['source-length'] === 32 ? median(encodes) : await encodeMs(32);
  const enc128 = cfg.max_positions >= 128 ? await encodeMs(128) : null;
  // Verification pass (greedy): sentence 0's top-5 logits of the first and last step.
  const probe = {};
  if (beam === 1) await decode(await encode(src), args.tokens, null, probe);
  const total = median(totals);
  const bytes = ['encoder', 'cross_kv', 'decoder_step']
    .reduce((s, n) => s + fs.statSync(path.join(args.dir, n + '.onnx')).size, 0);
  const result = {
    engine: 'onnxruntime',
    mode: meta.precision,
    onnxruntime: ort.env.versions ? ort.env.versions.node : null,
    model: args.dir,
    model_bytes: bytes,
    threads: args.threads,
    source_length: args['source-length'],
    tokens: args.tokens,
    batch,
    beam,
    repeat: args.repeat,
    warmup: args.warmup,
    load_prepare_ms: loadMs,
    encode_ms_32: enc32,
    encode_ms_128: enc128,
    encode_ms: median(encodes),
    decode_ms_per_token: median(perToken),
    decode_first_step_ms: first.length ? median(first) : 0,
    decode_last_step_ms: last.length ? median(last) : 0,
    total_ms: total,
    tokens_per_s: (batch * args.tokens * 1000) / total,
    total_ms_runs: totals,
    cpu_encode_ms: median(cpuEncodes),
    cpu_decode_ms_per_token: median(cpuPerToken),
    cpu_total_ms: median(cpuTotals),
    peak_rss_bytes: peakRss(),
    rss_end_bytes: process.memoryUsage().rss,
    rss_before_load_bytes: rssStart,
    source_ids: src[0],
    ids: ids[0],
  };
  if (batch > 1) result.ids_batch = ids.flat();  // row after row
  if (beam === 1) {
    result.top5_first = probe.first;
    result.top5_last = probe.last;
  }
  console.log(JSON.stringify(result));
}

main().catch((e) => {
  console.error(`ort_bench: ${e.stack || e}`);
  process.exit(1);
});
