"""SciRepEval: readers, embedding inputs and text forms (tasks register after the shared layer)."""
