"""Build the SPEED-Bench dataset splits (Qualitative and Throughput) as a Hugging Face dataset folder."""
