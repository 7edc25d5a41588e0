"""The feedback database: its engine and locks, its schema and migrations, its tables, and the web state replicas share in it."""
