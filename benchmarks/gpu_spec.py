"""A gpu.py row as a typed value, parsed once from its text (`train:longlm_large:cudnn:dots:64:scan`).

Why: the row text is what a person types and what gpu.json keeps as the row's name;
every other part of the benchmark (the child that runs it, the JSON it becomes, the
HF twin its ratio is taken against) reads the fields of one `Row`, never the text.

A row is KIND:POSITIONAL...[:OPTION...]. The positional fields are fixed per kind;
the options after them are words, each naming one setting, in any order.
"""

import dataclasses
from typing import Any

MODELS = {
    'longlm_large': 'crosstask/gin/longlm/large.gin',
    't5_1_1_base': 'crosstask/gin/t5_1_1/base.gin',
    't5_1_1_large': 'crosstask/gin/t5_1_1/large.gin',
    'tiny': 'crosstask/gin/t5_1_1/tiny.gin',  # smoke runs and tests
}
# XLA GPU options tried per row (a crosstask row's option word); kept in the GPU
# profile only where a row shows they pay.
XLA_FLAG_SETS = {
    'default': '',
    'lhs': '--xla_gpu_enable_latency_hiding_scheduler=true',
    'no_triton_gemm': '--xla_gpu_enable_triton_gemm=false',
    'no_cmd_buffer': '--xla_gpu_enable_command_buffer=',
    # The decoding while loop captured whole as one CUDA graph (conditional nodes), so
    # the host neither launches each step's kernels nor reads the loop's predicate.
    'graph_while': ('--xla_gpu_enable_command_buffer=+WHILE,+CONDITIONAL'
                    ' --xla_gpu_graph_min_graph_size=1'),
}
POSITIONAL = {
    'check': (),
    'train': ('model', 'attention', 'remat', 'batch'),
    'hf-train': ('model', 'batch'),
    'decode': ('model', 'beams', 'batch'),
    'hf-decode': ('model', 'beams', 'batch'),
    'infer': ('model', 'batch'),
    'hf-infer': ('model', 'batch'),
}
# `unrollN`: N layers per iteration of the layer scan (TransformerConfig.scan_unroll);
# `unrollfull`: each stack straight-line, no loop (scan_unroll='full').
# `fused_qkv` / `fused_mlp`: projections that read one input as one matmul (attention's
# query, key and value; a gated MLP's input branches; TransformerConfig's fields).
_XLA_OPTIONS = {**{name: ('flags', name) for name in XLA_FLAG_SETS}, 'scan': ('scan', True),
                **{f'unroll{n}': ('unroll', n) for n in (2, 4, 8)}, 'unrollfull': ('unroll', 'full'),
                'fused_qkv': ('fused_qkv', True), 'fused_mlp': ('fused_mlp', True)}
# `keysfirst`: decoding caches the encoder keys [b, h, len, d] (cross_keys_last=False);
# `pallas_cross`: a step's cross-attention is one Pallas flash-decoding kernel
# (decode_cross_attention='pallas'); `beam_indirect` / `beam_reorder`: beam search's
# self-attention caches stay where they were written / are copied into each step's
# beam order (beam_self_cache).
_DECODE_OPTIONS = {**_XLA_OPTIONS, 'keysfirst': ('cross_keys_last', False),
                   'pallas_cross': ('decode_cross_attention', 'pallas'),
                   'beam_indirect': ('beam_self_cache', 'indirect'),
                   'beam_reorder': ('beam_self_cache', 'reorder')}
_OPTIMIZERS = {'adafactor': ('optimizer', 'adafactor'), 'adamw': ('optimizer', 'adamw')}
_HF_DECODE = {'static': ('cache', 'static'), 'dynamic': ('cache', 'dynamic'),
              'compile': ('compiled', True)}
# Option word -> (field, value), per kind.
OPTIONS = {
    'check': {},
    'train': {**_XLA_OPTIONS, **_OPTIMIZERS},
    'hf-train': {**_OPTIMIZERS, 'ckpt': ('checkpointing', True), 'compile': ('compiled', True)},
    'decode': _DECODE_OPTIONS,
    'hf-decode': _HF_DECODE,
    'infer': _DECODE_OPTIONS,
    'hf-infer': _HF_DECODE,
}
_INTS = ('batch', 'beams')


@dataclasses.dataclass(frozen=True)
class Row:
  """One row's settings; defaults are what a row text leaves unsaid."""
  text: str
  kind: str
  model: str | None = None
  batch: int | None = None
  beams: int = 1
  attention: str | None = None  # train
  remat: str | None = None  # train
  optimizer: str = 'adafactor'  # train, hf-train
  flags: str = 'default'  # crosstask rows: an XLA_FLAG_SETS name
  scan: bool = False  # crosstask rows: each layer stack one nn.scan
  unroll: int | str = 1  # crosstask rows: layers per scan iteration, or 'full'
  cross_keys_last: bool = True  # decode, infer: the cached encoder keys' layout
  decode_cross_attention: str = 'einsum'  # decode, infer: a step's cross-attention
  beam_self_cache: str = 'indirect'  # decode, infer: beam search's self-attention caches
  fused_qkv: bool = False  # crosstask rows: attention's projections of one input as one matmul
  fused_mlp: bool = False  # crosstask rows: a gated MLP's input branches as one matmul
  checkpointing: bool = False  # hf-train: gradient checkpointing
  compiled: bool = False  # hf rows: torch.compile
  cache: str = 'static'  # hf-decode, hf-infer

  @property
  def framework(self) -> str:
    return 'hf' if self.kind.startswith('hf-') else 'crosstask'

  @property
  def work(self) -> str:
    """The kind of work without the framework: train, decode, infer, check."""
    return self.kind.removeprefix('hf-')

  @property
  def xla_flags(self) -> str:
    return XLA_FLAG_SETS[self.flags]

  def settings(self) -> dict[str, Any]:
    """The fields that mean something for this kind, for the JSON row."""
    keep = {'model', 'batch'} | set(POSITIONAL[self.kind])
    keep |= {field for field, _ in OPTIONS[self.kind].values()}
    if self.work == 'decode' or self.work == 'infer':
      keep.add('beams')
    return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
            if f.name in keep and f.name != 'text'}

  def hf_setting(self) -> str:
    """An HF row's settings in words, as a ratio names the HF side it was taken against."""
    if self.work == 'train':
      words = ['AdamW (fused on CUDA)' if self.optimizer == 'adamw' else 'Adafactor']
      words += ['gradient checkpointing'] if self.checkpointing else []
    else:
      words = [f'{self.cache} cache']
    words += ['torch.compile'] if self.compiled else []
    return f'batch {self.batch}, ' + ', '.join(words)


def parse(text: str) -> Row:
  """The Row of a row text; a clear error naming the row and the word it cannot read."""
  kind, *words = text.split(':')
  if kind not in POSITIONAL:
    raise ValueError(f'row {text!r}: unknown kind {kind!r}; one of {list(POSITIONAL)}')
  names = POSITIONAL[kind]
  if len(words) < len(names):
    raise ValueError(f'row {text!r}: {kind} needs {":".join(n.upper() for n in names)}')
  fields: dict[str, Any] = {}
  for name, word in zip(names, words):
    if name in _INTS:
      if not word.isdigit() or int(word) < 1:
        raise ValueError(f'row {text!r}: {name} must be a positive integer, not {word!r}')
      fields[name] = int(word)
    else:
      fields[name] = word
  if fields.get('model') is not None and fields['model'] not in MODELS:
    raise ValueError(f'row {text!r}: unknown model {fields["model"]!r}; one of {list(MODELS)}')
  for word in words[len(names):]:
    if word not in OPTIONS[kind]:
      raise ValueError(f'row {text!r}: {kind} has no option {word!r}; options: '
                       f'{sorted(OPTIONS[kind])}')
    field, value = OPTIONS[kind][word]
    fields[field] = value
  row = Row(text=text, kind=kind, **fields)
  if row.compiled and row.cache == 'dynamic' and row.work != 'train':
    raise ValueError(f'row {text!r}: torch.compile needs the static cache (generate '
                     'recompiles for every length of a dynamic one)')
  return row
