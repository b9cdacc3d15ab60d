"""The agent: six StructuredTools, a constrained routing loop with the walk as its fallback, grounded answers
with citations, and scripted sessions."""
