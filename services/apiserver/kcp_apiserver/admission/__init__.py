"""Admission plugins: each a small class with `admit` (mutating) and/or `validate` (validating)."""
