"""The labellers' page at /: the Classify and Label queue tabs, their actions, the queue, guidelines and scripts."""
