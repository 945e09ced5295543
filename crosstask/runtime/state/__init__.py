"""The train state and what keeps it: the sharded train step, optimizers, checkpoints, faults."""
