"""Gin helpers that turn a CSL scenario (partition, episode seed, shots) into names.

Gin cannot format strings, so `csl/xtask_*.gin` take PARTITION / EPISODE_SEED /
SHOTS as macros and call these to get the mixture and split names.
"""

import gin


@gin.configurable(module='scenarios')
def xtask_mixture(partition: str = gin.REQUIRED, kind: str = 'meta', lang: str = 'zh') -> str:
  """'csl_zh_xtask_2_1_meta' for partition '2-1', kind 'meta' (or 'few')."""
  from crosstask.tasks.csl import scenarios  # SeqIO only where data is needed.
  if partition not in scenarios.PARTITIONS:
    raise ValueError(f'PARTITION={partition!r} is not a CSL partition; choose from '
                     f'{scenarios.PARTITIONS}.')
  if kind not in ('meta', 'few'):
    raise ValueError(f"kind must be 'meta' or 'few', got {kind!r}.")
  return scenarios.mixture_name(partition, kind, lang)


@gin.configurable(module='scenarios')
def episode_split(seed: int = 0, kind: str = 'meta', shots: int | None = None) -> str:
  """Episode split names of the CSL sampler: s<seed>_meta, s<seed>_k<shots>, s<seed>_test."""
  if kind == 'shots':
    if shots is None:
      raise ValueError("episode_split(kind='shots') needs SHOTS.")
    return f's{seed}_k{shots}'
  return f's{seed}_{kind}'
