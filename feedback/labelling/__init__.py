"""What labellers work on and give: the pool and its queue, pool files, progress, guidelines, and the answers themselves."""
