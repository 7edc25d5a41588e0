"""The labelling page: the Classify and Label queue tabs, their actions, look and scripts."""
