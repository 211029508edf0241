"""Interleaving and multileaving methods, click credit, click models and a simulated world."""
