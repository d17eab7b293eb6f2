"""Test helpers that ship with the engine: a strict CuPy stand-in (strict_xp)."""
