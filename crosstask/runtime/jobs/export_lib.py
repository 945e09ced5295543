"""`export(...)`: a checkpoint as a Hugging Face folder, the form published T5s come in.

The folder holds `config.json`, `model.safetensors` and the tokenizer files
transformers' `AutoTokenizer` reads (for a SentencePiece model its `spiece.model` and
`tokenizer.json`): what `T5ForConditionalGeneration` loads, and what crosstask's own runs
take back as `INITIAL_CHECKPOINT_PATH` or `CHECKPOINT_PATH`.
"""

import os
from typing import Any

import gin
import jax
from jax.experimental import multihost_utils

from crosstask.models import hf_import
from crosstask.models import hf_tokenizer
from crosstask.runtime.config import run as run_lib
from crosstask.runtime.jobs import restoring
from crosstask.runtime.report import console
from crosstask.runtime.sharding import partitioning
from crosstask.runtime.state import checkpoints


@gin.configurable(module='export_script')
def export(model: Any = gin.REQUIRED,
           restore_checkpoint_cfg: checkpoints.RestoreCheckpointConfig = gin.REQUIRED,
           output_dir: str = gin.REQUIRED,
           partitioner: partitioning.Partitioner | None = None) -> str:
  """Writes the newest checkpoint `restore_checkpoint_cfg` selects (a model directory, a
  step, or a Hugging Face folder) to `output_dir`; returns the folder.

  The parameters are read as eval reads them (shapes and vocabulary checked), gathered
  to every host, and written by process 0 in float32, one tensor per layer as HF keeps them.
  A folder that holds files already is written into: the report lists the files this
  export wrote, warns of those it replaced, and names the others it left (which are no
  part of the export, e.g. a stale `spiece.model` from an earlier one).
  """
  # Parameter shapes depend on neither batch nor lengths; the abstract init needs some.
  run = run_lib.resolve(model, partitioner, batch_size=1, lengths={'inputs': 1, 'targets': 1},
                        pads_batch=True)
  step, state_dir = restoring.newest_checkpoint(restore_checkpoint_cfg)
  params = checkpoints.load_params(state_dir, run.abstract_params()[0], run.vocabularies,
                                   run.model_config)
  params = multihost_utils.process_allgather(params, tiled=True)  # the global arrays
  folder = os.path.abspath(output_dir)
  if jax.process_index() == 0:
    before = set(os.listdir(folder)) if os.path.isdir(folder) else set()
    written = hf_import.write_hf_checkpoint(folder, run.model.module.config, params,
                                            run.model.input_vocabulary)
    console.say(f'{restoring.checkpoint_name(state_dir)} (step {step}) -> {folder}: '
                f'{", ".join(written)}')
    replaced = [name for name in written if name in before]
    if replaced:
      console.warn(f'{folder} held {", ".join(replaced)} already: replaced by this export.')
    others = sorted(before - set(written))
    if others:
      console.say(f'Also in {folder}, not written by this export: {", ".join(others)}.')
    missing = hf_tokenizer.missing_because(run.model.input_vocabulary)
    if missing:
      console.say(f'No tokenizer files for AutoTokenizer: {missing}.')
  partitioning.wait_for_all_processes('crosstask_export')
  return folder
