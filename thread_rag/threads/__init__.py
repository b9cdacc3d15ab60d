"""Threads: context windows (previous summary | active chunk | next summary), neighbour
summaries, the JSON summary cache, pre-heat and walk signals."""
