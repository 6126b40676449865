"""The SPEED-Bench measurement client: engine adapters, load shaping, recording, reporting."""
