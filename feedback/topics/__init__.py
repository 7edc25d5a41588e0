"""The taxonomy's versions in the feedback database, and what a change to it would touch."""
