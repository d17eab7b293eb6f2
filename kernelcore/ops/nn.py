"""Layers' ops: matrix products, embeddings, normalising activations."""
