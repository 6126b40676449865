"""What a run writes as it goes (``records.jsonl``) and the summary it prints."""
