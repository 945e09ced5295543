"""HF PyTorch's side of gpu.py: transformers' T5ForConditionalGeneration, trained and decoded
in each of the settings a user would try, so every ratio can be taken against HF's fastest.

Training: bf16 autocast, SDPA attention, transformers' Adafactor or
`torch.optim.AdamW(fused=True)` (fused on CUDA only; on a CPU the same row runs the
unfused AdamW and says so), with or without gradient checkpointing, eager or
`torch.compile`d. Decoding: `generate` with a static or a dynamic cache, with
transformers' own compilation of the forward pass (which it applies by default on
CUDA to a static cache) switched on or off explicitly.
"""

import copy
import time
from typing import Any

import gpu_crosstask
import gpu_spec
import gpu_workload
from gpu_workload import Lengths


def hf_model(model: str, device: str):
  """(crosstask config, HF model, attention implementation), seeded, built on `device`."""
  import torch
  import transformers
  from crosstask.models import hf_import
  cfg = gpu_crosstask.model_config(model)
  torch.manual_seed(0)
  conf = transformers.T5Config(**hf_import.hf_config_from(cfg))
  with torch.device(device):  # initialised where it runs: a 1B model's CPU init is slow
    try:
      hf = transformers.T5ForConditionalGeneration._from_config(conf, attn_implementation='sdpa')
      impl = 'sdpa'
    except (ValueError, ImportError):
      hf = transformers.T5ForConditionalGeneration(conf)
      impl = 'eager'
  return cfg, hf, impl


def sync_fn(device: str):
  import torch
  return (lambda _: torch.cuda.synchronize()) if device == 'cuda' else (lambda _: None)


def device_facts(device: str) -> dict[str, Any]:
  import torch
  on_gpu = device == 'cuda'
  return {'peak_gib': torch.cuda.max_memory_allocated() / 2**30 if on_gpu else None,
          'device': torch.cuda.get_device_name(0) if on_gpu else 'cpu'}


def compile_backend(device: str) -> str:
  """torch.compile's backend: Inductor on CUDA, the setting measured. On a CPU, where the
  rows only prove that each setting runs before a GPU is lent, AOTAutograd's eager
  backend: Dynamo captures the same graphs (its graph breaks and failures are the ones
  a setting meets), while Inductor would generate C++ for the CPU, not the GPU's Triton,
  and cost the cold CPU session test 67 - 16 = 51 s of compiling."""
  return 'inductor' if device == 'cuda' else 'aot_eager'


def train_optimizer(name: str, params, device: str):
  """(optimizer, fused): transformers' Adafactor as gpu.py has always run it, or AdamW
  fused where PyTorch has the fused kernel (CUDA)."""
  import torch
  import transformers
  if name == 'adafactor':
    return transformers.optimization.Adafactor(params, lr=1e-3, relative_step=False,
                                               scale_parameter=True, warmup_init=False), False
  fused = device == 'cuda'
  return torch.optim.AdamW(params, lr=1e-3, weight_decay=1e-4, fused=fused), fused


def row_hf_train(row: gpu_spec.Row, lengths: Lengths, steps: int, device: str) -> dict:
  import torch
  cfg, hf, impl = hf_model(row.model, device)
  hf.train()
  if row.checkpointing:
    hf.config.use_cache = False
    hf.gradient_checkpointing_enable()
  opt, fused = train_optimizer(row.optimizer, hf.parameters(), device)
  forward = torch.compile(hf, backend=compile_backend(device)) if row.compiled else hf
  g = torch.Generator().manual_seed(0)
  ids = torch.randint(2, cfg.vocab_size, (row.batch, lengths.inputs), generator=g).to(device)
  labels = torch.randint(2, cfg.vocab_size, (row.batch, lengths.targets), generator=g).to(device)
  sync = sync_fn(device)

  def step():
    with torch.autocast(device, dtype=torch.bfloat16):
      loss = forward(input_ids=ids, labels=labels).loss
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss
  start = time.perf_counter()
  sync(step())  # torch.compile compiles here
  compile_s = time.perf_counter() - start
  if device == 'cuda':
    torch.cuda.reset_peak_memory_stats()
  times = gpu_workload.timed(step, steps, sync)
  return {'times': times, 'loss': float(step()), 'attention': impl, 'fused': fused,
          'compile_s': compile_s if row.compiled else None,
          'compile_backend': compile_backend(device) if row.compiled else None,
          **device_facts(device)}


def _decoder_config(hf):
  """The config the caches are sized by: generate sizes them by num_layers (the
  encoder's), which breaks on LongLM-large's 24+32 layers (IndexError in the cache's
  update, transformers 5.17)."""
  conf = copy.deepcopy(hf.config)
  conf.num_layers = conf.num_decoder_layers
  return conf


def compile_settings(row: gpu_spec.Row, device: str) -> dict[str, Any]:
  """generate's keyword arguments for the row's compilation setting: transformers
  compiles the forward itself for a static cache on CUDA unless told not to."""
  import transformers
  if not row.compiled:
    return {'disable_compile': True}
  config = transformers.CompileConfig(mode='reduce-overhead' if device == 'cuda' else 'default',
                                      backend=compile_backend(device))
  if device != 'cuda':
    config._compile_all_devices = True  # pylint: disable=protected-access  # HF's CPU switch
  return {'disable_compile': False, 'compile_config': config}


def generate_fn(hf, row: gpu_spec.Row, inputs: int, new_tokens: int, device: str):
  """`fn(ids)`: one `generate` call of the row's beams, cache and compilation, greedy or
  beam search as crosstask's (length penalty 1, no early stopping), ids 0 pad / 1 EOS,
  for [batch, inputs] ids (the static cache is sized once, for that shape)."""
  import torch
  import transformers
  dec_conf = _decoder_config(hf)
  static = None
  if row.cache == 'static':
    static = transformers.EncoderDecoderCache(
        transformers.StaticCache(config=dec_conf, max_cache_len=new_tokens + 1),
        transformers.StaticCache(config=dec_conf, max_cache_len=inputs))
  extra = compile_settings(row, device)

  def fn(ids):
    if static is not None:
      static.reset()
    past = static or transformers.EncoderDecoderCache(
        transformers.DynamicCache(config=dec_conf), transformers.DynamicCache(config=dec_conf))
    with torch.no_grad():
      return hf.generate(input_ids=ids, attention_mask=(ids != 0).long(), do_sample=False,
                         num_beams=row.beams, max_new_tokens=new_tokens, length_penalty=1.0,
                         early_stopping=False, eos_token_id=1, pad_token_id=0,
                         decoder_start_token_id=0, past_key_values=past, **extra)
  return fn


def decoding_model(model: str, device: str):
  """(config, HF model in bf16 weights for decoding, as crosstask's, attention)."""
  import torch
  cfg, hf, impl = hf_model(model, device)
  return cfg, hf.to(torch.bfloat16).eval(), impl


def row_hf_decode(row: gpu_spec.Row, lengths: Lengths, steps: int, device: str) -> dict:
  import torch
  cfg, hf, impl = decoding_model(row.model, device)
  ids = torch.from_numpy(gpu_workload.decode_inputs(row.batch, lengths.inputs, cfg.vocab_size)
                         ).long().to(device)
  generate = generate_fn(hf, row, lengths.inputs, lengths.new_tokens, device)

  def fn():
    return generate(ids)
  start = time.perf_counter()
  out = fn()
  compile_s = time.perf_counter() - start
  if device == 'cuda':
    torch.cuda.reset_peak_memory_stats()
  times = gpu_workload.timed(fn, steps, sync_fn(device))
  return {'times': times, 'compile_s': compile_s, 'attention': impl,
          'compile_backend': compile_backend(device) if row.compiled else None,
          'generated_tokens': gpu_workload.decoded_positions(out[:, 1:].cpu().numpy(),
                                                             lengths.new_tokens),
          **device_facts(device)}
