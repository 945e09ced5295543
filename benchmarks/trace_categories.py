"""Which part of a train step an executed XLA op belongs to, from the compiled HLO's metadata.

Why from the HLO and not from op names alone: XLA names a fusion after its root
(`multiply_log_fusion.1`, `fusion.123`, `ynn_fusion.7`), which says nothing about the
model; the compiled module's text keeps, for every instruction, the JAX name stack
(`op_name`) and the Python stack it was traced from (`stack_frame_id`, resolved
through the module's FileNames / FunctionNames / FileLocations / StackFrames
tables). A fusion is judged by its heaviest instruction: a matmul or custom call
inside it where there is one, else its root.

Rules, first match wins:
  collective all-reduce, all-gather, reduce-scatter, collective-permute, all-to-all
             (their -start/-done halves too) and NCCL kernels
  attention  cuDNN / flash attention kernels (custom-call targets or op names with
             fmha, flash, sdpa, dot_product_attention), or code in models/attention.py
             or in MultiHeadAttention's own body (its score and value products and the
             softmax; its projections go through `dense`, so they count as matmuls)
  optimizer  code in optax or the runtime's adafactor.py, or in an `apply_updates`
  loss       code in models/losses.py (softmax cross-entropy and z-loss) or in the
             model's loss_fn itself (the metrics it takes over the vocabulary)
  matmul     a dot or convolution, or a GEMM custom call or kernel (cublas, cutlass,
             triton gemm), or XLA:CPU's YNNPACK dot fusions
  cast       converts, copies, bitcasts and layout moves with no arithmetic
  other      everything else (norms, activations, position bias, masks, reductions)

The CPU names (ynn_fusion, thunks) are verified on a real trace by the tests. The GPU
names were read off an H100 trace (jax 0.11, CUDA 13): the ops run inside command
buffers (CUDA graphs), so the trace's 'hlo_op' names the buffer, and each kernel is
named after its fusion ('loop_add_fusion_5') or its library (cuBLAS's `nvjet_sm90_*`,
`cudnn_generated_*sdpa*`, `cudnn::fusion::fmha_dbias`, `memcpy128`), as `hlo_name`
and the rules above read them.
"""

import dataclasses
import re

CATEGORIES = ('matmul', 'attention', 'loss', 'optimizer', 'cast', 'collective', 'other')
_ATTENTION_WORDS = re.compile(r'fmha|flash|sdpa|dot_product_attention|cudnn\$|cudnn::', re.I)
_GEMM_WORDS = re.compile(r'gemm|cublas|cutlass|matmul|nvjet|xmma|ynn_fusion|^dot', re.I)
_CAST_OPCODES = {'convert', 'copy', 'bitcast', 'bitcast-convert', 'copy-start', 'copy-done',
                 'transpose', 'reshape', 'broadcast', 'parameter', 'constant', 'tuple',
                 'get-tuple-element', 'slice', 'dynamic-slice', 'dynamic-update-slice',
                 'concatenate', 'pad'}
_HEAVY_OPCODES = ('dot', 'convolution', 'custom-call')
_COLLECTIVES = re.compile(r'^(all-reduce|all-gather|reduce-scatter|collective-permute|all-to-all)'
                          r'|nccl', re.I)

_INSTRUCTION = re.compile(r'^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s+(.*)$')
_OPCODE = re.compile(r'(?:^|[\s\]})])([a-z][a-z0-9\-]*)\(')
_COMPUTATION = re.compile(r'^\s*(?:ENTRY\s+)?%?([\w.\-]+)\s+\(.*\{\s*$')


@dataclasses.dataclass
class Op:
  """One HLO instruction: what it does and where in the Python program it came from."""
  name: str
  opcode: str
  op_name: str = ''
  frames: tuple[tuple[str, str], ...] = ()  # (file, function), innermost first
  target: str = ''  # custom_call_target
  calls: str = ''  # the fused computation, for a fusion
  inner: tuple['Op', ...] = ()  # the fused computation's instructions


def _tables(text: str) -> dict[str, dict[int, str]]:
  """The module's FileNames, FunctionNames, FileLocations and StackFrames tables."""
  tables: dict[str, dict[int, str]] = {}
  current = None
  for line in text.splitlines():
    if line in ('FileNames', 'FunctionNames', 'FileLocations', 'StackFrames'):
      current = tables.setdefault(line, {})
    elif current is not None and re.match(r'^\d+ ', line):
      key, value = line.split(' ', 1)
      current[int(key)] = value.strip().strip('"')
    elif current is not None and line.strip():
      current = None
  return tables


def _frames(tables: dict[str, dict[int, str]], frame_id: int) -> tuple[tuple[str, str], ...]:
  """(file, function) of the stack from frame `frame_id` outwards."""
  frames, seen = [], set()
  stack, locations = tables.get('StackFrames', {}), tables.get('FileLocations', {})
  while frame_id in stack and frame_id not in seen:
    seen.add(frame_id)
    fields = dict(re.findall(r'(\w+)=(\d+)', stack[frame_id]))
    loc = dict(re.findall(r'(\w+)=(\d+)', locations.get(int(fields.get('file_location_id', 0)),
                                                       '')))
    frames.append((tables.get('FileNames', {}).get(int(loc.get('file_name_id', 0)), ''),
                   tables.get('FunctionNames', {}).get(int(loc.get('function_name_id', 0)), '')))
    parent = int(fields.get('parent_frame_id', 0))
    # The printed parent id is one above the frame it names (0: none).
    frame_id = parent - 1 if parent > 0 else -1
  return tuple(frames)


def parse_hlo(text: str) -> dict[str, Op]:
  """Every instruction of the module by name, fusions with their computation's ops."""
  tables = _tables(text)
  ops: dict[str, Op] = {}
  members: dict[str, list[Op]] = {}
  computation = None
  for line in text.splitlines():
    match = _INSTRUCTION.match(line)
    head = None if match else _COMPUTATION.match(line)
    if head:
      computation = members.setdefault(head.group(1), [])
      continue
    if not match or computation is None:
      continue
    name, rest = match.groups()
    opcode = _OPCODE.search(rest)
    frame = re.search(r'stack_frame_id=(\d+)', rest)
    op = Op(name=name, opcode=opcode.group(1) if opcode else '',
            op_name=(re.search(r'op_name="([^"]*)"', rest) or [None, ''])[1],
            frames=_frames(tables, int(frame.group(1))) if frame else (),
            target=(re.search(r'custom_call_target="([^"]*)"', rest) or [None, ''])[1],
            calls=(re.search(r'calls=%?([\w.\-]+)', rest) or [None, ''])[1])
    ops[name] = op
    computation.append(op)
  for op in ops.values():
    if op.calls in members:
      op.inner = tuple(members[op.calls])
  return ops


def hlo_name(kernel: str, ops: dict[str, Op]) -> str:
  """The HLO instruction a GPU kernel ran, where its name says: XLA:GPU names a fusion's
  kernel after the fusion with '.' as '_' ('loop_add_fusion_5' for loop_add_fusion.5).
  Library kernels (cuBLAS's nvjet, cuDNN's, memcpy) keep their own names."""
  if kernel in ops:
    return kernel
  match = re.match(r'^(.*)_(\d+)$', kernel)
  if match and f'{match.group(1)}.{match.group(2)}' in ops:
    return f'{match.group(1)}.{match.group(2)}'
  return kernel


def _representative(op: Op, depth: int = 0) -> Op:
  """The instruction a fusion is judged by: its first matmul or custom call, else itself."""
  for inner in op.inner if depth < 4 else ():
    if inner.opcode in _HEAVY_OPCODES:
      return inner
    nested = _representative(inner, depth + 1)
    if nested is not inner:
      return nested
  return op


def _in(frames, file_part: str = '', function_part: str = '') -> bool:
  return any(file_part in f and function_part in fn for f, fn in frames)


def categorize(name: str, ops: dict[str, Op]) -> str:
  """The category (CATEGORIES) of the executed op `name`."""
  op = ops.get(name)
  if _COLLECTIVES.search(name) or op is not None and _COLLECTIVES.search(op.opcode):
    return 'collective'
  if op is None:  # not in the module's text: judged by its name alone
    if _ATTENTION_WORDS.search(name):
      return 'attention'
    if _GEMM_WORDS.search(name):
      return 'matmul'
    return 'cast' if re.match(r'(convert|copy|bitcast|transpose|memcpy|memset)', name,
                              re.I) else 'other'
  rep = _representative(op)
  frames = rep.frames or op.frames
  words = ' '.join((name, op.target, rep.target, rep.op_name))
  if (_ATTENTION_WORDS.search(words) or _in(frames, 'models/attention.py')
      or (frames and frames[0][1] == 'MultiHeadAttention.__call__')):
    return 'attention'
  if _in(frames, '/optax/') or _in(frames, '/adafactor.py') or _in(
      frames, '', 'apply_updates'):
    return 'optimizer'
  if _in(frames, 'models/losses.py') or (frames and frames[0][1].endswith('.loss_fn')):
    return 'loss'
  if rep.opcode in ('dot', 'convolution') or _GEMM_WORDS.search(' '.join((name, rep.target))):
    return 'matmul'
  opcodes = {i.opcode for i in op.inner} if op.inner else {op.opcode}
  if opcodes <= _CAST_OPCODES:
    return 'cast'
  return 'other'
