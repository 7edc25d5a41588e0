"""Storage guards: file names, the one lock, SQLite's locks, snapshots to durable storage."""
