"""Search and listing: one set of rules, two engines (ripgrep and pure Python).

`rules.py` holds what both engines must agree on (ignored dirs, globs, .gitignore
handling, regex syntax, byte caps); `python_engine.py` and `ripgrep_engine.py`
implement them; `engine.py` picks one; `render.py` turns results into answers.
"""
