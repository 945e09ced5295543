"""Inputs: SeqIO pipelines, packing, fixed-size batches, the input position saved with checkpoints."""
