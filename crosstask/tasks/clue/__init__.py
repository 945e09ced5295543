"""CLUE and FewCLUE as crosstask text-to-text tasks."""
