"""The open(2) flag sets every fd-based walk uses, defined once.

- DIR_FLAGS: a directory, never through a symlink (the containment walk's step).
- READ_FLAGS: a file for reading, never through a symlink, never blocking (a FIFO opens
  at once instead of hanging; `fstat` then refuses it).
- NOFOLLOW_NONBLOCK: the same safety bits, for callers that add their own access mode.
"""

import os

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
NOFOLLOW_NONBLOCK = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
