"""Hugging Face T5 / mT5 / LongLM checkpoints <-> crosstask params.

A checkpoint folder holds `config.json` plus `model.safetensors` (optionally sharded
with `model.safetensors.index.json`) or `pytorch_model.bin`; the latter is read with
`torch.load(weights_only=True)`, so no arbitrary object is ever unpickled.

Output layer: HF T5 1.0 ties lm_head to the embedding and rescales the decoder output
by d_model**-0.5 (`logits_via_embedding=True` here). When HF does not rescale
(`tie_word_embeddings: false` in transformers 4 configs, `scale_decoder_outputs:
false` in transformers 5, and always for model_type mt5) the output layer is imported as an untied `logits_dense`
copied from `lm_head.weight`, or from `shared.weight` when the file has no lm_head.
"""

import dataclasses
import json
import pathlib
import pickle
import shutil
from collections.abc import Mapping
from typing import Any

import flax
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from crosstask.models import hf_tokenizer
from crosstask.models import layer_stacking
from crosstask.models import network
from crosstask.models.config import TransformerConfig

# Tensors HF keeps as aliases of `shared.weight` or never uses.
_ALIASES = ("encoder.embed_tokens.weight", "decoder.embed_tokens.weight")
_UNUSED = ("decoder.block.0.layer.1.EncDecAttention.relative_attention_bias.weight",)


def config_from_hf(hf: Mapping, *, dtype: str = "float32") -> TransformerConfig:
  """Builds a TransformerConfig from a parsed HF T5 `config.json`."""
  for key in ("vocab_size", "d_model", "d_ff", "num_heads", "d_kv", "num_layers"):
    if key not in hf:
      raise ValueError(f"config.json lacks {key!r}, needed for a T5-family model")
  proj = hf.get("feed_forward_proj", "relu")
  parts = proj.split("-")
  if len(parts) == 2 and parts[0] == "gated":
    # HF special-cases "gated-gelu" to the tanh GELU; "gated-gelu_python" is exact.
    act = {"gelu": "gelu", "gelu_new": "gelu", "gelu_python": "gelu_exact"}.get(parts[1], parts[1])
    activations = (act, "linear")
  elif len(parts) == 1:
    activations = ({"gelu": "gelu_exact", "gelu_new": "gelu"}.get(proj, proj),)
  else:
    raise ValueError(f"config.json feed_forward_proj={proj!r} is not 'ACT' or 'gated-ACT'")
  if hf.get("model_type") == "mt5":
    scaled = False  # HF MT5 never rescales, whatever tie_word_embeddings says
  else:
    scaled = hf.get("scale_decoder_outputs", hf.get("tie_word_embeddings", True))
  return TransformerConfig(
      vocab_size=hf["vocab_size"], d_model=hf["d_model"], d_ff=hf["d_ff"],
      num_heads=hf["num_heads"], d_kv=hf["d_kv"], num_encoder_layers=hf["num_layers"],
      num_decoder_layers=hf.get("num_decoder_layers") or hf["num_layers"],
      activations=activations, logits_via_embedding=bool(scaled),
      dropout_rate=hf.get("dropout_rate", 0.1),
      relative_attention_num_buckets=hf.get("relative_attention_num_buckets", 32),
      relative_attention_max_distance=hf.get("relative_attention_max_distance", 128),
      layer_norm_epsilon=hf.get("layer_norm_epsilon", 1e-6),
      decoder_start_id=hf.get("decoder_start_token_id") or 0, dtype=dtype)


# The settings a checkpoint's weights are only right under, which tensor shapes do not
# show (an MLP of another activation has the same shapes).
BEHAVIOUR = ("activations", "logits_via_embedding", "relative_attention_num_buckets",
             "relative_attention_max_distance", "layer_norm_epsilon")


def behaviour_differences(checkpoint: TransformerConfig, model: TransformerConfig
                          ) -> dict[str, tuple[Any, Any]]:
  """{field: (the checkpoint's value, the model's)} for each BEHAVIOUR field they set apart."""
  out = {}
  for field in BEHAVIOUR:
    ours, theirs = getattr(model, field), getattr(checkpoint, field)
    if field == "activations":  # a gin list and a config tuple of the same names agree
      ours, theirs = tuple(ours), tuple(theirs)
    if ours != theirs:
      out[field] = (theirs, ours)
  return out


def hf_config_from(config: TransformerConfig) -> dict:
  """The HF `config.json` dictionary describing `config`."""
  acts = config.activations
  if len(acts) == 2 and acts[1] == "linear":
    proj = "gated-" + {"gelu_exact": "gelu_python"}.get(acts[0], acts[0])
  elif len(acts) == 1:
    proj = {"gelu_exact": "gelu", "gelu": "gelu_new"}.get(acts[0], acts[0])
  else:
    raise ValueError(f"activations {acts!r} have no HF feed_forward_proj equivalent")
  return {
      "architectures": ["T5ForConditionalGeneration"], "model_type": "t5",
      "vocab_size": config.vocab_size, "d_model": config.d_model, "d_ff": config.d_ff,
      "num_heads": config.num_heads, "d_kv": config.d_kv,
      "num_layers": config.num_encoder_layers, "num_decoder_layers": config.num_decoder_layers,
      "feed_forward_proj": proj, "tie_word_embeddings": config.logits_via_embedding,
      "scale_decoder_outputs": config.logits_via_embedding,
      "dropout_rate": config.dropout_rate,
      "relative_attention_num_buckets": config.relative_attention_num_buckets,
      "relative_attention_max_distance": config.relative_attention_max_distance,
      "layer_norm_epsilon": config.layer_norm_epsilon, "is_encoder_decoder": True,
      "pad_token_id": 0, "eos_token_id": 1, "decoder_start_token_id": config.decoder_start_id,
  }


def _specs(config: TransformerConfig) -> list[tuple[str, tuple[str, ...], str]]:
  """(HF name, crosstask param path, kind) for every tensor of `config`."""
  specs = [("shared.weight", ("token_embedder", "embedding"), "copy")]
  mlp_names = (["wi"] if len(config.activations) == 1
               else [f"wi_{i}" for i in range(len(config.activations))])

  def attention(hf, ours):
    for a, b in (("q", "query"), ("k", "key"), ("v", "value")):
      specs.append((f"{hf}.{a}.weight", ours + (b,), "qkv"))
    specs.append((f"{hf}.o.weight", ours + ("out",), "out"))

  def mlp(hf, ours):
    for name in mlp_names:
      specs.append((f"{hf}.DenseReluDense.{name}.weight", ours + ("mlp", name), "transpose"))
    specs.append((f"{hf}.DenseReluDense.wo.weight", ours + ("mlp", "wo"), "transpose"))

  for stack, n in (("encoder", config.num_encoder_layers), ("decoder", config.num_decoder_layers)):
    specs.append((f"{stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight",
                  (stack, "relpos_bias", "rel_embedding"), "transpose"))
    specs.append((f"{stack}.final_layer_norm.weight", (stack, f"{stack}_norm", "scale"), "copy"))
    for i in range(n):
      hf, ours = f"{stack}.block.{i}.layer", (stack, f"layers_{i}")
      if stack == "encoder":
        attention(f"{hf}.0.SelfAttention", ours + ("attention",))
        specs.append((f"{hf}.0.layer_norm.weight", ours + ("pre_attention_layer_norm", "scale"), "copy"))
        mlp(f"{hf}.1", ours)
        specs.append((f"{hf}.1.layer_norm.weight", ours + ("pre_mlp_layer_norm", "scale"), "copy"))
      else:
        attention(f"{hf}.0.SelfAttention", ours + ("self_attention",))
        specs.append((f"{hf}.0.layer_norm.weight",
                      ours + ("pre_self_attention_layer_norm", "scale"), "copy"))
        attention(f"{hf}.1.EncDecAttention", ours + ("encoder_decoder_attention",))
        specs.append((f"{hf}.1.layer_norm.weight",
                      ours + ("pre_cross_attention_layer_norm", "scale"), "copy"))
        mlp(f"{hf}.2", ours)
        specs.append((f"{hf}.2.layer_norm.weight", ours + ("pre_mlp_layer_norm", "scale"), "copy"))
  if not config.logits_via_embedding:
    specs.append(("lm_head.weight", ("decoder", "logits_dense"), "transpose"))
  return specs


def _to_hf(kind: str, value: np.ndarray) -> np.ndarray:
  if kind == "copy":
    return value
  if kind == "transpose":
    return value.T
  if kind == "qkv":  # [D, H, K] -> [H*K, D]
    return value.reshape(value.shape[0], -1).T
  if kind == "out":  # [H, K, D] -> [D, H*K]
    return value.reshape(-1, value.shape[-1]).T
  raise AssertionError(kind)


def _to_ours(kind: str, value: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
  if kind == "copy":
    return value
  return value.T.reshape(shape)


def abstract_params(config: TransformerConfig) -> dict:
  """Shapes of all params (no allocation), as a nested dict of ShapeDtypeStruct."""
  tokens = jnp.ones((1, 1), jnp.int32)
  abstract = jax.eval_shape(network.Transformer(config).init, jax.random.PRNGKey(0), tokens, tokens)
  return nn.meta.unbox(abstract["params"])


def read_tensors(folder: str | pathlib.Path) -> dict[str, np.ndarray]:
  """All tensors of an HF checkpoint folder as float32 numpy arrays."""
  folder = pathlib.Path(folder)
  files = []
  index = folder / "model.safetensors.index.json"
  if index.is_file():
    files = sorted({folder / f for f in json.loads(index.read_text())["weight_map"].values()})
  elif (folder / "model.safetensors").is_file():
    files = [folder / "model.safetensors"]
  tensors: dict[str, np.ndarray] = {}
  if files:
    import safetensors  # pylint: disable=g-import-not-at-top
    for f in files:
      try:
        # The flax reader handles bfloat16 and needs no torch.
        with safetensors.safe_open(str(f), framework="flax") as reader:
          for k in reader.keys():
            tensors[k] = np.asarray(reader.get_tensor(k).astype(jnp.float32))
      except Exception as e:  # safetensors' own error type: a truncated or foreign file
        raise ValueError(_unreadable(f, e)) from e
    return tensors
  if (folder / "pytorch_model.bin").is_file():
    import torch  # pylint: disable=g-import-not-at-top
    try:
      state = torch.load(folder / "pytorch_model.bin", map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:  # objects beyond tensors: never unpickled here
      raise ValueError(
          f"{folder / 'pytorch_model.bin'} holds more than tensors, which torch's weights-only "
          f"loader refuses ({str(e).splitlines()[0][:80]}...): convert it to safetensors "
          "where you trust it") from e
    except Exception as e:  # a truncated file or a Git LFS pointer
      raise ValueError(_unreadable(folder / "pytorch_model.bin", e)) from e
    return {k: v.float().numpy() for k, v in state.items()}
  raise FileNotFoundError(f"{folder} has neither model.safetensors nor pytorch_model.bin")


def _unreadable(path: pathlib.Path, error: Exception) -> str:
  """Why a weights file could not be read, said in one line: a Git LFS pointer (a clone
  without `git lfs pull`) is named as such."""
  with open(path, "rb") as f:
    pointer = f.read(64).startswith(b"version https://git-lfs")
  if pointer:
    return (f"{path} is a Git LFS pointer ({path.stat().st_size} bytes), not the weights: "
            "fetch them with `git lfs pull` in its repository")
  first = str(error).splitlines()[0] if str(error) else type(error).__name__
  return (f"{path} ({path.stat().st_size} bytes) is not a readable weights file ({first}): "
          "truncated or damaged? Copy or download it again")


def load_hf_checkpoint(folder: str | pathlib.Path, *, dtype: str = "float32"
                       ) -> tuple[TransformerConfig, dict]:
  """Reads an HF T5-family folder -> (config, params as a nested dict of float32 arrays).

  Missing, extra or wrong-shaped tensors raise ValueError naming the tensor.
  """
  folder = pathlib.Path(folder)
  config_file = folder / "config.json"
  if not config_file.is_file():
    raise FileNotFoundError(f"{config_file} not found")
  config = config_from_hf(json.loads(config_file.read_text()), dtype=dtype)
  tensors = read_tensors(folder)
  return config, params_from_hf_tensors(config, tensors)


def params_from_hf_tensors(config: TransformerConfig, tensors: Mapping[str, np.ndarray]) -> dict:
  """HF state dict (name -> array) -> crosstask params for `config`.

  HF keeps one tensor per layer; with `config.scan_layers` they are stacked into the
  scanned layout (models/layer_stacking.py).
  """
  if config.scan_layers:
    unscanned = dataclasses.replace(config, scan_layers=False)
    return layer_stacking.stack_layers(params_from_hf_tensors(unscanned, tensors))
  tensors = dict(tensors)
  shapes = flax.traverse_util.flatten_dict(abstract_params(config))
  specs = _specs(config)
  if (not config.logits_via_embedding and "lm_head.weight" not in tensors
      and "shared.weight" in tensors):
    tensors["lm_head.weight"] = tensors["shared.weight"]  # HF 5 always ties lm_head
  flat = {}
  for hf_name, path, kind in specs:
    if hf_name not in tensors:
      raise ValueError(f"checkpoint is missing tensor {hf_name!r} (for param {'/'.join(path)})")
    value = np.asarray(tensors.pop(hf_name), np.float32)
    want_hf = _to_hf(kind, np.zeros(shapes[path].shape, np.float32)).shape
    if value.shape != want_hf:
      raise ValueError(f"tensor {hf_name!r} has shape {value.shape}, expected {want_hf} "
                       f"(param {'/'.join(path)} of shape {shapes[path].shape})")
    flat[path] = _to_ours(kind, value, shapes[path].shape)
  shared = flat[("token_embedder", "embedding")]
  for name in _ALIASES + (("lm_head.weight",) if config.logits_via_embedding else ()):
    if name in tensors:
      alias = np.asarray(tensors.pop(name), np.float32)
      if alias.shape != shared.shape or not np.array_equal(alias, shared):
        raise ValueError(f"tensor {name!r} (shape {alias.shape}) should equal shared.weight "
                         f"(shape {shared.shape}) for this tied config")
  for name in _UNUSED:
    tensors.pop(name, None)
  if tensors:
    raise ValueError(f"checkpoint has unexpected tensors: {sorted(tensors)[:10]}")
  missing = set(shapes) - set(flat)
  if missing:
    raise AssertionError(f"params not covered by the mapping: {sorted(missing)}")
  return flax.traverse_util.unflatten_dict(flat)


def hf_tensors_from_params(config: TransformerConfig, params: Mapping) -> dict[str, np.ndarray]:
  """crosstask params (boxed or not, scanned or not) -> HF state dict of float32 numpy arrays."""
  params = layer_stacking.to_layout(
      jax.tree.map(np.asarray, nn.meta.unbox(flax.core.unfreeze(params))), "unstacked")
  flat = flax.traverse_util.flatten_dict(params)
  out = {}
  for hf_name, path, kind in _specs(config):
    if path not in flat:
      raise ValueError(f"params lack {'/'.join(path)} (needed for {hf_name!r})")
    out[hf_name] = np.ascontiguousarray(_to_hf(kind, np.asarray(flat[path], np.float32)))
  return out


# The SentencePiece model of a T5-family folder, where T5Tokenizer reads it.
TOKENIZER_FILE = "spiece.model"


def save_hf_checkpoint(folder: str | pathlib.Path, config: TransformerConfig, params: Mapping,
                       vocabulary: Any = None) -> pathlib.Path:
  """Writes `config.json` + `model.safetensors` that `load_hf_checkpoint` reads back, and
  `vocabulary`'s SentencePiece model as `spiece.model` where it has one (crosstask then
  loads the folder only into a model reading the same pieces), with the tokenizer files
  `AutoTokenizer` reads it through (`hf_tokenizer`)."""
  write_hf_checkpoint(folder, config, params, vocabulary)
  return pathlib.Path(folder)


def write_hf_checkpoint(folder: str | pathlib.Path, config: TransformerConfig, params: Mapping,
                        vocabulary: Any = None) -> list[str]:
  """`save_hf_checkpoint`, returning the names of the files it wrote: in a folder that
  held other files already, those are what the export made."""
  import safetensors.numpy  # pylint: disable=g-import-not-at-top
  folder = pathlib.Path(folder)
  folder.mkdir(parents=True, exist_ok=True)
  written = []
  sentencepiece = getattr(vocabulary, "sentencepiece_model_file", None)
  if sentencepiece is not None:
    shutil.copyfile(sentencepiece, folder / TOKENIZER_FILE)
    written.append(TOKENIZER_FILE)
  if vocabulary is not None:
    written += hf_tokenizer.save(folder, vocabulary)
  (folder / "config.json").write_text(json.dumps(hf_config_from(config), indent=2))
  weights = folder / "model.safetensors"
  safetensors.numpy.save_file(hf_tensors_from_params(config, params), str(weights),
                              metadata={"format": "pt"})
  # safetensors writes the file 0600; give it the mode the folder's other files have.
  weights.chmod((folder / "config.json").stat().st_mode & 0o777)
  return sorted([*written, "config.json", weights.name])
