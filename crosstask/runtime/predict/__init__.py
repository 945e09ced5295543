"""Decoding and scoring over whole datasets, and SeqIO metrics over the outputs."""
