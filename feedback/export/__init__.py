"""Answers out of the store: CSV and JSONL files, and a Hugging Face dataset."""
