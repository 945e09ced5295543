"""Reading an optimized HLO module's text: how often each part runs, what it moves.

XLA reports no collective volume, and its cost model counts a while loop's body once,
where a scanned layer stack or a microbatch loop runs it its trip count times. The
compiled program's text has both: the collectives with their operands' shapes, and
each loop's `known_trip_count` (written by XLA's loop analysis into the while's
backend_config). `HloModule` follows the calls from the entry computation, so every
count here is per run of the program: per train step.
"""

import dataclasses
import math
import re

COLLECTIVES = ('all-reduce', 'all-gather', 'reduce-scatter', 'all-to-all',
               'collective-permute')
_DTYPE_BYTES = {'pred': 1, 's8': 1, 'u8': 1, 's16': 2, 'u16': 2, 'f16': 2, 'bf16': 2,
                's32': 4, 'u32': 4, 'f32': 4, 's64': 8, 'u64': 8, 'f64': 8, 'c64': 8,
                'c128': 16, 'f8e4m3fn': 1, 'f8e5m2': 1, 's4': 1, 'u4': 1}


def type_bytes(type_text: str, stacked: int | None = None) -> int:
  """Bytes of the arrays a type names (a tuple's, summed).

  With `stacked` (a loop's trip count), an array whose leading dimension is that
  count counts one slice: a scan reads and writes one layer of its stacked
  parameters, gradients and saved activations an iteration, not the whole stack.
  """
  total = 0
  for dtype, dims in re.findall(r'\b([a-z]+\d*(?:e\dm\d(?:fn)?)?)\[([\d,]*)\]', type_text):
    if dtype in _DTYPE_BYTES:
      shape = [int(d) for d in dims.split(',') if d]
      if stacked and len(shape) > 1 and shape[0] == stacked:
        shape = shape[1:]
      total += math.prod(shape) * _DTYPE_BYTES[dtype]
  return total


_INSTRUCTION = re.compile(r'^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*?)\s+([a-z][\w\-]*)\((.*)$')
# A computation's first line starts at column 0: '%name (params) -> type {' or 'ENTRY ...'.
_HEADER = re.compile(r'^(?:ENTRY\s+)?%?([\w.\-]+)\s+\(.*\{\s*$')
_CALLEE = re.compile(r'\b(body|condition|to_apply|calls|true_computation|false_computation)'
                     r'=%?([\w.\-]+)')
_BRANCHES = re.compile(r'branch_computations=\{([^}]*)\}')
_TRIP_COUNT = re.compile(r'"known_trip_count":\{"n":"(\d+)"\}')
# Edges to computations that run as programs of their own (their instructions read and
# write HBM); `calls` of a fusion and reducers' `to_apply` run inside one instruction.
_SCHEDULED_EDGES = ('body', 'condition', 'true_computation', 'false_computation', 'branch')
# Instructions that move no bytes of their own.
_NO_TRAFFIC = ('parameter', 'constant', 'get-tuple-element', 'tuple', 'bitcast', 'while',
               'call', 'conditional', 'after-all', 'partition-id', 'replica-id',
               'opt-barrier')


@dataclasses.dataclass
class _Instruction:
  name: str
  type_text: str
  opcode: str
  rest: str  # operands and attributes

  @property
  def operands(self) -> list[str]:
    depth, args = 0, ''
    for ch in self.rest:  # The operand list: up to the parenthesis that closes the call.
      if ch == '(':
        depth += 1
      elif ch == ')':
        if depth == 0:
          break
        depth -= 1
      args += ch
    return re.findall(r'%([\w.\-]+)', args)


def _trip_count(loop: _Instruction, computations: dict[str, list[_Instruction]]
                ) -> int | None:
  """A while's trip count: XLA's `known_trip_count` where it wrote one (XLA:CPU), else
  the bound its condition compares the counter against (`i < N`, as lax.scan and
  fori_loop lower, counting from 0 by 1; XLA:TPU's programs)."""
  known = _TRIP_COUNT.search(loop.rest)
  if known:
    return int(known.group(1))
  condition = re.search(r'\bcondition=%?([\w.\-]+)', loop.rest)
  instructions = computations.get(condition.group(1), []) if condition else []
  constants = {ins.name: int(m.group(1)) for ins in instructions
               if ins.opcode == 'constant' and (m := re.match(r'(-?\d+)\)', ins.rest))}
  for ins in instructions:
    if ins.opcode == 'compare' and 'direction=LT' in ins.rest:
      bounds = [constants[name] for name in ins.operands if name in constants]
      if bounds and bounds[0] > 0:
        return bounds[0]
  return None


@dataclasses.dataclass
class HloModule:
  """An optimized HLO module's computations, with how often one run executes each.

  `runs[c]`: the product of the loops' trip counts along the calls from the entry to
  computation c (a while's body runs its trip count times per run of its caller, its
  condition once more; a loop without a known count is taken as running once).
  """
  computations: dict[str, list[_Instruction]]
  runs: dict[str, int]
  trips: dict[str, int]  # a while body's trip count (its own loop's, not its callers')
  scheduled: set[str]  # computations that run as programs, not inside one instruction
  types: dict[str, str]  # instruction name -> its type text (names are module-unique)

  @classmethod
  def parse(cls, hlo_text: str) -> 'HloModule':
    computations: dict[str, list[_Instruction]] = {}
    entry, current = None, None
    for line in hlo_text.splitlines():
      header = _HEADER.match(line)
      if header:
        current = computations.setdefault(header.group(1), [])
        if line.startswith('ENTRY'):
          entry = header.group(1)
        continue
      match = _INSTRUCTION.match(line)
      if match and current is not None:
        current.append(_Instruction(*match.groups()))
    callers: dict[str, list[tuple[str, int, str]]] = {}
    trips_of: dict[str, int] = {}
    for name, instructions in computations.items():
      for ins in instructions:
        trip = _trip_count(ins, computations) if ins.opcode == 'while' else None
        trips = trip or 1
        edges = _CALLEE.findall(ins.rest) + [
            ('branch', callee) for group in _BRANCHES.findall(ins.rest)
            for callee in re.findall(r'%?([\w.\-]+)', group)]
        for edge, callee in edges:
          if ins.opcode == 'call' and edge == 'to_apply':
            edge = 'branch'  # a called computation runs as a program, once per call
          factor = {'body': trips, 'condition': trips + 1}.get(edge, 1)
          if edge == 'body' and trip:
            trips_of[callee] = trips
          callers.setdefault(callee, []).append((name, factor, edge))
    runs: dict[str, int] = {}

    def count(name: str, seen: frozenset = frozenset()) -> int:
      if name not in runs:
        if name == entry or name not in callers or name in seen:
          runs[name] = 1
        else:
          runs[name] = sum(count(c, seen | {name}) * f for c, f, _ in callers[name])
      return runs[name]

    scheduled = {entry} | {name for name, edges in callers.items()
                           if any(edge in _SCHEDULED_EDGES for _, _, edge in edges)}
    return cls(computations, {name: count(name) for name in computations}, trips_of,
               scheduled & set(computations),
               {ins.name: ins.type_text for inss in computations.values() for ins in inss})

  def instructions(self):
    """(computation, instruction) of every instruction."""
    for name, instructions in self.computations.items():
      for ins in instructions:
        yield name, ins

  def operand_bytes(self, ins: _Instruction, stacked: int | None = None) -> int:
    return sum(type_bytes(self.types.get(op, ''), stacked) for op in ins.operands)

  def collectives(self) -> dict[str, dict[str, int]]:
    """{kind: {'count', 'bytes'}} per run: each op times the runs of its computation."""
    stats = {kind: {'count': 0, 'bytes': 0} for kind in COLLECTIVES}
    for name, ins in self.instructions():
      kind = ins.opcode[:-len('-start')] if ins.opcode.endswith('-start') else ins.opcode
      if kind in COLLECTIVES:
        stats[kind]['count'] += self.runs[name]
        stats[kind]['bytes'] += self.runs[name] * self.operand_bytes(ins)
    return stats

  def traffic(self) -> float:
    """HBM bytes one run moves: each scheduled instruction reads its operands and
    writes its result (what XLA's cost model counts for a fusion), once per run of
    its computation; in a loop, a stacked array counts one slice (`type_bytes`).

    An estimate, like XLA's own: on-chip reuse inside a fusion is not traffic, and
    a slice of a larger operand is counted whole outside loops.
    """
    total = 0
    for name, ins in self.instructions():
      if name not in self.scheduled or ins.opcode in _NO_TRAFFIC or ins.opcode.endswith(
          '-done'):
        continue
      stacked = self.trips.get(name)
      total += (type_bytes(ins.type_text, stacked) + self.operand_bytes(ins, stacked)
                ) * self.runs[name]
    return total


def collective_stats(hlo_text: str) -> dict[str, dict[str, int]]:
  """{kind: {'count', 'bytes'}} of the collectives one run of an optimized HLO module runs.

  Bytes are the operands' (what each chip sends into the collective); an op inside a
  loop (a scanned layer stack, microbatches) counts once per iteration.
  """
  return HloModule.parse(hlo_text).collectives()
