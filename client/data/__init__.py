"""The workload: dataset configs (local folders or Hub ids) -> conversations, first turns tokenized."""
