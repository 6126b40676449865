"""Test helpers shipped with the client: local stand-in engines (used by tests and bench/)."""
