"""Test stand-ins (not installed): engine servers speaking the recorded wire formats, dataset
fixtures, a local Ray cluster. Tests import them as ``tests.standins``; bench scripts too (with the
repository root on ``sys.path``)."""
