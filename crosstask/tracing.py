"""tf.data pipelines traced without AutoGraph, with AutoGraph as the fallback.

`Dataset.map` hands every function to AutoGraph, which parses and rewrites its Python
source before tracing: about 1.4 s of a CSL or copy-reverse task's pipeline (SeqIO's
tokenizer, trimming, packing and feature converter, crosstask's preprocessors), paid
again in every process that builds one (a tiny train job with its evaluations: 14.3 ->
12.8 s). None of those functions branches or loops on a tensor, so they trace the same
graph without it. A user's preprocessor that does (`if tensor:`) cannot be traced
plainly: TensorFlow refuses it while the dataset is built, and the pipeline is then
built again with AutoGraph, as SeqIO would have built it.
"""

from typing import Callable, TypeVar

T = TypeVar("T")


def without_autograph(build: Callable[..., T], *args, **kwargs) -> T:
  """`build(*args, **kwargs)` with every function it traces left as written, or, when
  one needs AutoGraph's rewriting, `build(*args, **kwargs)` as tf.data would call it."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  try:
    return tf.autograph.experimental.do_not_convert(build)(*args, **kwargs)
  except tf.errors.OperatorNotAllowedInGraphError:
    return build(*args, **kwargs)
