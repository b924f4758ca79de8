"""SQL text utilities (statement splitting, keyword inspection)."""
