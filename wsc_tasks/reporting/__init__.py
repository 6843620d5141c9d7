"""lm-eval's output read back: tables, figures, the report, the leaderboard, the summary."""
