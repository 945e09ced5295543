"""profile_step's trace parsing and op categories, on real CPU traces of the tiny model
(a train step's: the checks below, run on the GPU session's trace) and GPU kernel names."""

import pytest

import gpu_spec
import profile_step
import trace_categories
from gpu_workload import Lengths


# A real train-step trace of the tiny model costs ~14 s of compile and profiler start:
# the GPU session's CPU run takes one (`gpu_session.sh --quick`, the same row), and
# test_benchmark_session reads it back and runs the two checks below on it. test-fast
# reads a real decode trace (test_a_saved_trace_reads_back_...).
def check_a_real_cpu_trace_splits_into_every_category(result):
  assert result["ops_seen"] > 100
  assert result["ops_matched_to_hlo"] >= 0.95 * result["ops_seen"]
  split = result["ops_ms_per_step"]
  assert set(split) == set(trace_categories.CATEGORIES)
  # Data-parallel over virtual devices: the gradients' all-reduces show as collectives.
  for category in ("matmul", "attention", "loss", "optimizer", "cast", "collective"):
    assert split[category] > 0, (category, split)
  assert sum(result["op_share"].values()) == pytest.approx(1.0)
  assert 0 <= result["idle_ms_per_step"] < result["span_ms_per_step"]


def check_categories_agree_with_the_name_stack(result):
  # The JAX name stack of an op tells independently where some belong: the MLP's
  # matmuls (XLA:CPU runs them as dot thunks or YNNPACK fusions) and Adafactor's update
  # (its `cond`), leaving aside the casts and all-reduces of their operands.
  seen = set()
  for row in result["top_ops"]:
    name, stack = row["op"], row["op_name"] or ""
    if row["category"] in ("cast", "collective"):
      continue
    if "/mlp/dot_general" in stack and name.startswith(("dot", "ynn_fusion")):
      assert row["category"] == "matmul", row
      seen.add("matmul")
    if "/cond/branch" in stack:
      assert row["category"] == "optimizer", row
      seen.add("optimizer")
  assert seen == {"matmul", "optimizer"}


_GPU_HLO = """HloModule jit__train_step

%fused_computation.1 (param_0: bf16[8,64]) -> f32[8,64] {
  %param_0 = bf16[8,64]{1,0} parameter(0)
  ROOT %convert.1 = f32[8,64]{1,0} convert(%param_0)
}

ENTRY %main.9 (p0: bf16[8,64], p1: bf16[64,64]) -> f32[8,64] {
  %p0 = bf16[8,64]{1,0} parameter(0)
  %p1 = bf16[64,64]{1,0} parameter(1)
  %cublas-gemm.3 = (bf16[8,64]{1,0}, s8[0]{0}) custom-call(%p0, %p1), custom_call_target="__cublas$gemm", metadata={op_name="jit(_train_step)/jvp(Transformer)/Transformer.encode/encoder/layers_0/mlp/dot_general" stack_frame_id=2}
  %custom-call.7 = (bf16[1,8,4,16]{3,2,1,0}, u8[0]{0}) custom-call(%p0, %p0, %p0), custom_call_target="__cudnn$fmhaSoftmax", metadata={op_name="jit(_train_step)/jvp(Transformer)/x/dot_product_attention" stack_frame_id=1}
  %loop_convert_fusion = f32[8,64]{1,0} fusion(%p0), kind=kLoop, calls=%fused_computation.1
  ROOT %add.2 = f32[8,64]{1,0} add(%loop_convert_fusion, %loop_convert_fusion), metadata={op_name="jit(_train_step)/add" stack_frame_id=3}
}

FileNames
1 "/src/crosstask/models/attention.py"
2 "/src/crosstask/models/layers.py"
3 "/site-packages/optax/_src/update.py"

FunctionNames
1 "fused_attention"
2 "dense"
3 "apply_updates"

FileLocations
1 {file_name_id=1 function_name_id=1 line=107 end_line=107 column=4 end_column=9}
2 {file_name_id=2 function_name_id=2 line=30 end_line=30 column=4 end_column=9}
3 {file_name_id=3 function_name_id=3 line=40 end_line=40 column=4 end_column=9}

StackFrames
1 {file_location_id=1 parent_frame_id=3}
2 {file_location_id=2 parent_frame_id=1}
3 {file_location_id=3 parent_frame_id=1}
"""


def test_gpu_op_names_map_by_their_metadata_and_kernel_names():
  # XLA:GPU's names (not seen on this CPU): a cuBLAS GEMM and a cuDNN attention call.
  # As XLA prints them, a frame's parent_frame_id is the parent's id + 1 (1: none).
  ops = trace_categories.parse_hlo(_GPU_HLO)
  assert ops["custom-call.7"].frames == (("/src/crosstask/models/attention.py", "fused_attention"),
                                        ("/src/crosstask/models/layers.py", "dense"))
  assert trace_categories.categorize("cublas-gemm.3", ops) == "matmul"
  assert trace_categories.categorize("custom-call.7", ops) == "attention"
  assert trace_categories.categorize("loop_convert_fusion", ops) == "cast"
  assert trace_categories.categorize("add.2", ops) == "optimizer"
  # Kernels the HLO does not name are judged by their own names.
  assert trace_categories.categorize("sm90_xmma_gemm_bf16bf16_bf16f32", ops) == "matmul"
  assert trace_categories.categorize("cudnn_generated_fort_native_sdpa_sm90_flash_fprop", ops) == (
      "attention")
  assert trace_categories.categorize("cutlass_80_tensorop_bf16_s16816gemm", ops) == "matmul"
  assert trace_categories.categorize("all-reduce.98", ops) == "collective"
  assert trace_categories.categorize("ncclDevKernel_AllReduce_Sum_f32_RING_LL", ops) == (
      "collective")


def test_h100_kernel_names_map_to_their_ops_and_categories():
  # As an H100 trace names them (jax 0.11, CUDA 13): the ops run inside command buffers,
  # each kernel named after its fusion ('.' as '_') or its library.
  ops = trace_categories.parse_hlo(_GPU_HLO)
  assert trace_categories.hlo_name("cublas-gemm_3", ops) == "cublas-gemm.3"
  assert trace_categories.hlo_name("loop_convert_fusion", ops) == "loop_convert_fusion"
  assert trace_categories.hlo_name("nvjet_sm90_tst_128x160_64x5_2x1_v_bz_TNT", ops) == (
      "nvjet_sm90_tst_128x160_64x5_2x1_v_bz_TNT")
  for kernel, category in (
      ("nvjet_sm90_tst_128x160_64x5_2x1_v_bz_TNT", "matmul"),
      ("void cudnn::fusion::fmha_dbias<true>(void const*, void*)", "attention"),
      ("void cudnn::fusion::matmul_dq<true, 64>(void const*)", "attention"),
      ("memcpy128", "cast"), ("memcpy32_post", "cast")):
    assert trace_categories.categorize(kernel, ops) == category, kernel


@pytest.mark.slow(seconds=6)
def test_a_saved_trace_reads_back_to_the_same_breakdown(tmp_path):
  row = gpu_spec.parse("decode:tiny:1:4")
  lengths = Lengths(32, 16, 4)
  live = profile_step.profile(row, lengths, 1, top=100000, raw_dir=str(tmp_path))
  assert sorted(p.name for p in tmp_path.iterdir()) == ["decode.hlo.txt.gz",
                                                        "decode.xplane.pb.gz"]
  again = profile_step.from_raw(str(tmp_path), row, lengths, 1, top=100000)
  assert again["ops_ms_per_step"] == pytest.approx(live["ops_ms_per_step"])
  assert again["ms_per_token_step"] > 0 and live["ms_per_token_step"] > 0
  # On a CPU the trace holds the encoder program's ops too, which the loop's HLO does
  # not name (a GPU trace is filtered to the loop's kernels by their module).
  assert again["ops_matched_to_hlo"] >= 0.75 * again["ops_seen"] > 0
