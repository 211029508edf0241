"""Crediting: how a click reaches ``W`` (protocol to be written in step 2)."""
