"""The CSL benchmark (ydli-ai/CSL) as SeqIO tasks: readers, layouts, tasks, scenarios."""
