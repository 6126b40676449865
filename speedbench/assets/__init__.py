"""The assets the demo and the tests read: the source mirror and the stories260K model.

``assets.lock.json`` (repository root) pins every file at its origin (``lock``); ``fetch``
downloads and verifies them into the shared layout; ``locate`` finds a complete layout
(``../shared``, else the user cache) or fetches one; ``speedbench.engine.gguf_export`` makes the
served GGUF files and the tokenizer from the fetched llama2.c checkpoint. See docs/assets.md.
"""
