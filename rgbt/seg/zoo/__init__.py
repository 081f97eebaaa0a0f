"""Model zoo sources (PyTorch, dev-only: export and training; never imported at run time)."""
