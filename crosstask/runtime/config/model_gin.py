"""Gin model files -> config / model, and abstract parameter counts (no weights allocated).

    python -m crosstask.runtime.config.model_gin crosstask/gin/longlm/large.gin

Gin parsing is the runtime's business (search paths, configurable modules, located
errors), so reading a model file lives here and `crosstask.models` stays free of it.

Model files include each other relative to crosstask/gin (as the runtime's gin search
path does); file arguments may be given relative to the repo root or the cwd. Parsing a model file imports its vocabulary module (seqio); this module does not.
"""

import math
import pathlib
import sys
from collections.abc import Sequence

import gin
import jax

from crosstask.models import hf_import
from crosstask.models.config import TransformerConfig
from crosstask.runtime.config import gin_utils
from crosstask.runtime.report import console

ROOT = pathlib.Path(__file__).resolve().parents[3]


def parse_gin(gin_files: Sequence[str] | str, bindings: Sequence[str] = ()) -> None:
  """Clears gin and parses files and bindings the way the runtime's entry points do.

  Paths may be relative to the working directory, the repository root or
  crosstask/gin; errors name the file or binding at fault. Unlike the entry points,
  the config is left unlocked: a notebook may import task modules afterwards.
  """
  if isinstance(gin_files, (str, pathlib.Path)):
    gin_files = [gin_files]
  gin.clear_config()
  gin_utils.parse([str(f) for f in gin_files], list(bindings), search_paths=[str(ROOT)],
                  lock=False)


def config_from_gin(gin_files: Sequence[str] | str, bindings: Sequence[str] = ()
                    ) -> TransformerConfig:
  """The TransformerConfig bound to `network.Transformer.config` by the gin files."""
  parse_gin(gin_files, bindings)
  return gin_utils.query("crosstask.models.network.Transformer.config")


def model_from_gin(gin_files: Sequence[str] | str, bindings: Sequence[str] = ()):
  """The EncoderDecoderModel bound to the MODEL macro."""
  parse_gin(gin_files, bindings)
  return gin_utils.query("%MODEL")


def param_count(config: TransformerConfig) -> int:
  """Number of parameters, from shapes only (jax.eval_shape)."""
  leaves = jax.tree_util.tree_leaves(hf_import.abstract_params(config))
  return sum(math.prod(leaf.shape) for leaf in leaves)


def print_param_count(gin_file: str, bindings: Sequence[str] = ()) -> int:
  """Prints and returns the parameter count of a gin model file."""
  count = param_count(config_from_gin(gin_file, bindings))
  console.say(f"{gin_file}: {count:,} parameters ({count / 1e6:.1f}M)")
  return count


if __name__ == "__main__":
  from crosstask import startup  # pylint: disable=g-import-not-at-top
  from crosstask.runtime.config import platform  # pylint: disable=g-import-not-at-top
  startup.quiet_startup()  # before the model file's vocabulary module loads TensorFlow
  platform.prepare_host("infer")  # keeps JAX off libtpu where no TPU is attached
  if {"-h", "--help"} & set(sys.argv[1:]):
    console.say("usage: python -m crosstask.runtime.config.model_gin [MODEL_GIN_FILE ...]\n"
                "Prints each model gin file's parameter count, built abstractly (no "
                "weights); default: crosstask/gin/longlm/large.gin.")
    sys.exit(0)
  for arg in sys.argv[1:] or ["crosstask/gin/longlm/large.gin"]:
    print_param_count(arg)
