"""Meshes and layouts, TPU topologies, and what a compiled step costs per chip."""
