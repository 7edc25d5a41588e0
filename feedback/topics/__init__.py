"""The topics in the feedback database: the taxonomy's versions, what a change to them would touch, and the "None of
these" answers that say a topic is missing (grouped, then placed in a topic)."""
