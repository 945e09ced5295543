"""`python -m crosstask.compile`: will this run fit that TPU slice? Compiles it to see.

    python -m crosstask.compile --gin_file=t5_1_1/tiny.gin --topology=v5e:2x2 --json
    python -m crosstask.compile --gin_file=longlm/large.gin --gin_file=lot/finetune_outgen.gin \\
        --gin.BATCH_SIZE=128 --gin.TASK_FEATURE_LENGTHS="{'inputs': 512, 'targets': 512}" \\
        --topology=v5e-8 --layout=fsdp

Compiles the train step (`--step=infer`: the decoding programs) of the run the gin
files describe for a named TPU slice, on a machine without one (the libtpu wheel:
`pip install 'crosstask[tpu]'`), or for this machine's devices (`--topology=local`),
and prints per chip: memory planned against the chip's HBM, FLOPs, collectives, the
compile time, and a prediction of the step before paying for the slice: its roofline
time (FLOPs at peak, HBM bytes at full bandwidth, collective bytes over the
interconnect: the longest), the MFU it allows and the hours for TRAIN_STEPS. With
--json the last line is one JSON object (`predicted_step_s`, `predicted_mfu`,
`predicted_hours`, ...).
"""

import json
import os
import sys
from typing import Sequence

USAGE = """Compiles a run's train step (or decoding) for a TPU slice without the hardware:
  --gin_file=FILE        a model gin file, optionally a run file after it (repeatable)
  --gin.NAME=VALUE       bindings, e.g. --gin.BATCH_SIZE=64
                         --gin.TASK_FEATURE_LENGTHS="{'inputs': 512, 'targets': 512}"
                         (defaults when no file binds them: 128 and 512/512)
  --topology=NAME        e.g. v5e:2x4, v5e-8, v4:2x2x2, v5p-8, 2xv5e:2x4 (two slices),
                         or 'local' (this machine's devices)
  --num_slices=N         slices joined over the data-centre network (default 1)
  --layout=NAME          the Partitioner's layout preset (data, fsdp, tensor, fsdp+tensor)
  --num_partitions=N     the size of the 'model' (tensor-parallel) axis; default:
                         the gin binding, else 1
  --step=train|infer     the train step (default) or the decoding programs
  --json                 end with one JSON line (fits, per_chip_gib, hbm_gib,
                         predicted_step_s, predicted_mfu, predicted_hours, ...)
  --verbose              keep the libraries' start-up lines and warnings
  The predicted hours are for TRAIN_STEPS (a run file's, or --gin.TRAIN_STEPS=N)."""


def _flag_bool(value: str) -> bool:
  return value.lower() not in ('0', 'false', 'no')


def main(argv: Sequence[str] | None = None) -> int:
  argv = list(sys.argv[1:] if argv is None else argv)
  if not argv or argv[0] in ('-h', '--help', 'help'):
    print(USAGE)
    return 0 if argv else 2
  # --json takes no value; everything else is --flag=value as for the other entry points.
  as_json = False
  for flag in ('--json', '--json=true', '--json=True'):
    while flag in argv:
      argv.remove(flag)
      as_json = True
  verbose = '--verbose' in argv
  argv = [a for a in argv if a != '--verbose']
  from crosstask import startup  # pylint: disable=g-import-not-at-top
  startup.quiet_startup(verbose)
  # A compile for named TPU devices needs no accelerator: keep JAX on the CPU. For this
  # machine's devices, libtpu starts only where a TPU is attached (else it warns).
  if not any(a.startswith('--topology=local') for a in argv):
    os.environ.setdefault('JAX_PLATFORMS', 'cpu')
  else:
    from crosstask.runtime.config import platform  # pylint: disable=g-import-not-at-top
    platform.keep_jax_off_absent_tpus(platform.backend_from_environment())
  # pylint: disable-next=g-import-not-at-top
  from crosstask.runtime.config import gin_utils
  from crosstask.runtime.jobs import aot
  from crosstask.runtime.report import console
  from crosstask.runtime.sharding import compile_report
  from crosstask.runtime.sharding import topology
  files, bindings, _, other = gin_utils.split_args(argv)
  topology_name = other.pop('topology', None)
  num_slices = other.pop('num_slices', None)
  layout = other.pop('layout', None)
  num_partitions = other.pop('num_partitions', None)
  step = other.pop('step', 'train')
  if 'json' in other:
    as_json = _flag_bool(other.pop('json'))
  if other:
    print(f'ERROR: unknown flags {", ".join("--" + k for k in other)}\n{USAGE}',
          file=sys.stderr)
    return 2
  if not topology_name or not files:
    print(f'ERROR: --gin_file and --topology are required.\n{USAGE}', file=sys.stderr)
    return 2
  try:
    where = aot.target(topology_name, int(num_slices) if num_slices else None)
    run = aot.load_run(files, bindings, where.devices, layout=layout, step=step,
                       num_partitions=int(num_partitions) if num_partitions else None,
                       num_slices=where.num_slices)
    result = aot.compile_step(run, chip=where.chip, topology=where.name, step=step)
  except (topology.TopologyError, topology.LibtpuMissingError, gin_utils.GinConfigError,
          ValueError) as e:
    console.error(str(e))
    return 2
  # A local GPU or TPU has its figures in the chip table too (a CPU has none).
  chip = where.chip or topology.chip_for_device_kind(where.devices[0].device_kind)
  result = compile_report.predict(result, chip, run.train_steps)
  print(compile_report.format_report(result, chip), flush=True)
  if as_json:
    print(json.dumps(result.as_dict()), flush=True)
  return 0


if __name__ == '__main__':
  sys.exit(main())
