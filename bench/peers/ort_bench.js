#!/usr/bin/env node
// ONNX Runtime peer of `tern bench` (onnxruntime-node, its bundled CPU library): the graphs of
// export_onnx.py (encoder, cross K/V, one decoder step with past self-K/V in and out), batch 1,
// greedy, exactly --tokens tokens (EOS masked, as tern bench does with min_length).
//
// usage: node ort_bench.js --dir DIR [--threads 1] [--source-length 32] [--tokens 32]
//                          [--repeat 5] [--warmup 1]
// --profile PREFIX: instead of timing, run --repeat translations with ONNX Runtime's profiler
// on and print the time per graph and per kind of node (linear, attention MatMul, Softmax,
// LayerNorm, ...) as JSON, for comparing with bench/profile.py's buckets for tern.
// DIR holds encoder.onnx, cross_kv.onnx, decoder_step.onnx and meta.json (fp32 or int8).
// Prints one JSON object with the keys of `tern bench --json`.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

function parseArgs(argv) {
  const args = { threads: 1, 'source-length': 32, tokens: 32, repeat: 5, warmup: 1 };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    if (!a.startsWith('--')) throw new Error(`unexpected argument ${a}`);
    const [k, v] = a.includes('=') ? a.slice(2).split('=', 2) : [a.slice(2), argv[++i]];
    args[k] = k === 'dir' || k === 'profile' ? v : Number(v);
  }
  if (!args.dir) throw new Error('--dir is required');
  return args;
}

const nowMs = () => Number(process.hrtime.bigint()) / 1e6;
const cpuMs = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };  // whole process
const median = (v) => {
  const s = [...v].sort((a, b) => a - b);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
};

function benchSource(length, cfg) {  // same formula as tern bench
  const span = cfg.src_vocab_size - 4;
  const ids = [];
  for (let i = 0; i + 1 < length; ++i) ids.push(4 + ((i * 7919 + 17) % span));
  ids.push(cfg.eos_id);
  return ids;
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
  const loadMs = nowMs() - t0;

  const int64 = (ids, dims) => new ort.Tensor('int64', BigInt64Array.from(ids.map(BigInt)), dims);
  async function encode(ids) {
    const { enc_out } = await encoder.run({ src_ids: int64(ids, [1, ids.length]) });
    const { cross_k, cross_v } = await crossKv.run({ enc_out });
    return { cross_k, cross_v };
  }
  async function decode(cross, tokens, stamps, probe) {
    let pastK = new ort.Tensor('float32', new Float32Array(0), [L, 1, H, 0, dh]);
    let pastV = pastK;
    let token = cfg.decoder_start_id;
    const out = [];
    for (let t = 0; t < tokens; ++t) {
      const r = await step.run({
        token: int64([token], [1, 1]), position: int64([t], [1]), past_k: pastK, past_v: pastV,
        cross_k: cross.cross_k, cross_v: cross.cross_v,
      });
      const logits = r.logits.data;
      logits[cfg.eos_id] = -Infinity;  // min_length = tokens
      if (probe && t === 0) probe.first = top5(logits);
      if (probe && t === tokens - 1) probe.last = top5(logits);
      let best = 0;
      for (let v = 1; v < logits.length; ++v) if (logits[v] > logits[best]) best = v;  // lowest id on ties
      out.push(best);
      token = best;
      pastK = r.present_k;
      pastV = r.present_v;
      if (stamps) stamps.push(nowMs());
    }
    return out;
  }

  const src = benchSource(args['source-length'], cfg);
  if (args.profile) {
    for (let r = 0; r < args.repeat; ++r) await decode(await encode(src), args.tokens, null, null);
    const prof = summarizeProfiles(args.profile, [encoder, crossKv, step], ['encoder', 'cross_kv', 'decoder_step']);
    for (const [graph, p] of Object.entries(prof)) {
      const per = graph === 'decoder_step' ? args.repeat * args.tokens : args.repeat;
      console.log(`  ${graph}: ${(p.total_ms / per).toFixed(3)} ms per ${graph === 'decoder_step' ? 'step' : 'call'}`);
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
    first.push(stamps[0] - b);
    last.push(stamps.length > 1 ? stamps[stamps.length - 1] - stamps[stamps.length - 2] : 0);
  }
  async function encodeMs(length) {
    const s = benchSource(length, cfg);
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
  // Verification pass: top-5 logits of the first and last step.
  const probe = {};
  await decode(await encode(src), args.tokens, null, probe);
  const total = median(totals);
  const bytes = ['encoder', 'cross_kv', 'decoder_step']
    .reduce((s, n) => s + fs.statSync(path.join(args.dir, n + '.onnx')).size, 0);
  console.log(JSON.stringify({
    engine: 'onnxruntime',
    mode: meta.precision,
    onnxruntime: ort.env.versions ? ort.env.versions.node : null,
    model: args.dir,
    model_bytes: bytes,
    threads: args.threads,
    source_length: args['source-length'],
    tokens: args.tokens,
    repeat: args.repeat,
    warmup: args.warmup,
    load_prepare_ms: loadMs,
    encode_ms_32: enc32,
    encode_ms_128: enc128,
    encode_ms: median(encodes),
    decode_ms_per_token: median(perToken),
    decode_first_step_ms: median(first),
    decode_last_step_ms: median(last),
    total_ms: total,
    tokens_per_s: (args.tokens * 1000) / total,
    total_ms_runs: totals,
    cpu_encode_ms: median(cpuEncodes),
    cpu_decode_ms_per_token: median(cpuPerToken),
    cpu_total_ms: median(cpuTotals),
    peak_rss_bytes: peakRss(),
    rss_end_bytes: process.memoryUsage().rss,
    rss_before_load_bytes: rssStart,
    source_ids: src,
    ids,
    top5_first: probe.first,
    top5_last: probe.last,
  }));
}

main().catch((e) => {
  console.error(`ort_bench: ${e.stack || e}`);
  process.exit(1);
});
