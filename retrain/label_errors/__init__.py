"""The label-error search (`newsloop label-errors`): the rows it reads, their out-of-fold probabilities, the
candidates ranked by confident learning, and the search that stores them for review."""
