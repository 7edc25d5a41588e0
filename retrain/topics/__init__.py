"""The recipe for a changed taxonomy: imprinting a topic the champion lacks, reading a split's earlier rows, and the
prior of the topics only answers teach (docs/decisions/new-topics.md)."""
