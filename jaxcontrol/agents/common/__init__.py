"""Pieces shared by the learners: replay, running statistics, returns, evaluation."""
