"""crosstask: Chinese and scientific NLP benchmarks as one text-to-text world.

Importing the package is cheap on purpose: models, runtime and benchmarks must
import without TensorFlow or SeqIO. Task registration lives in
`crosstask.tasks`, imported only where datasets are needed.
"""

__version__ = "0.1.0"
